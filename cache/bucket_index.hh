// bucket_index.hh — the S3-FIFO shard's index: one 8-byte slot per item, in 64-byte buckets of
// eight (one cache line), two candidate buckets per key, filled to 95%.
//
// A slot is the item's address in its segment (bits 0..47), its 2-bit S3-FIFO frequency (bits
// 48..49), its has-expiry flag (bit 50) and a 13-bit tag, the hash's top bits (51..63); 0 is an
// empty slot. A key lives in one of two buckets: b1 from the hash's low 32 bits, b2 from a
// multiplicative mix of the whole hash, both scaled to the bucket count (multiply-shift), so the
// table can have any number of buckets. A lookup reads at most the two buckets' 16 slots and
// compares keys only where the tag matches; a deletion just empties its slot (no tombstones,
// no shifting: lookups never stop early). An insertion takes a free slot in b1, else in b2,
// else moves items along a cuckoo path (each to its other bucket) to a free one; the path is
// planned before anything moves, so a failed plan (no path within kMaxPath moves) leaves the
// table as it was and grows it instead. Growth is by an eighth (×1.125), when an insertion
// would take the table past 95% or no path is found, so the table is 84–95% full: 8.4–9.5 B per
// item (the linear-probing table of the other evictors is 60–75%: 10.7–13.3 B, and could not go
// fuller: its backward-shift deletions rehash the whole run behind the hole). Two choices of
// eight slots place items along short paths up to ~98% (bucketized cuckoo hashing); at 90% a
// growth step landed 1M items in 16 shards at 80% (10 B each), at 95% at 90%.
//
// Like SlotTable, the item's hash is not stored: moving an item along a path or into a grown
// table hashes its key again. Slots are atomic only so that readers under a shared lock can
// raise the frequency with a compare-and-swap; every other access is under the exclusive lock.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__SANITIZE_THREAD__)  // GCC
#define CACHE_UNDER_TSAN 1
#elif defined(__has_feature)  // Clang
#if __has_feature(thread_sanitizer)
#define CACHE_UNDER_TSAN 1
#endif
#endif
#ifndef CACHE_UNDER_TSAN
#define CACHE_UNDER_TSAN 0
#endif

#include "cache/log_item.hh"

namespace cache::detail {

class BucketIndex {
  using Slot = std::atomic<std::uint64_t>;

 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t kWays = 8;
  static constexpr double kMaxLoad = 0.95;
  static constexpr unsigned kMaxFreq = 3;

  BucketIndex() { allocate(kInitialBuckets); }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return buckets_ * kWays; }  // slots

  // The item in slot i, or nullptr.
  char* at(std::size_t i) const { return address(load(i)); }
  unsigned freq(std::size_t i) const { return (load(i) >> kFreqShift) & kMaxFreq; }
  void set_freq(std::size_t i, unsigned f) {
    store(i, (load(i) & ~kFreqBits) | (std::uint64_t{f} << kFreqShift));
  }
  bool expires_at(std::size_t i) const { return (load(i) & kExpiresBit) != 0; }

  // Shared lock: a hit raises the frequency (saturating at 3), writing nothing once it is there.
  void bump(std::size_t i) const {
    std::uint64_t s = load(i);
    while ((s & kFreqBits) != kFreqBits &&
           !slots_[i].compare_exchange_weak(s, s + (std::uint64_t{1} << kFreqShift),
                                            std::memory_order_relaxed)) {
    }
  }

  // The slot holding `key`, or npos. The bucket's eight tags are compared at once (tag_matches);
  // only slots whose tag matches are read further.
  [[gnu::always_inline]] std::size_t find(std::string_view key, std::uint64_t hash) const {
    const std::uint64_t tag = hash & kTagMask;
    const std::size_t b1 = first(hash);
    if (const std::size_t i = find_in(b1, key, tag); i != npos) return i;
    return find_in(second(hash, b1), key, tag);
  }

  // The slot holding the item at `item` (whose key has `hash`), or npos.
  std::size_t find_address(std::uint64_t hash, const char* item) const {
    const std::size_t b1 = first(hash);
    for (std::size_t b : {b1, second(hash, b1)}) {
      for (std::size_t j = 0; j < kWays; ++j) {
        if (address(load(b * kWays + j)) == item) return b * kWays + j;
      }
    }
    return npos;
  }

  // Indexes the item at `item`, whose key is absent and has `hash`, with frequency 0. May grow
  // (hash_of(item address) gives a stored item's hash); throws std::bad_alloc or
  // std::length_error with the index unchanged.
  template <class HashFn>
  void insert(const char* item, bool expires, std::uint64_t hash, const HashFn& hash_of) {
    if (static_cast<double>(size_ + 1) > kMaxLoad * static_cast<double>(capacity())) {
      grow(hash_of);
    }
    const std::uint64_t word = make_word(item, expires, hash);
    while (!place(word, hash, hash_of)) grow(hash_of);
    ++size_;
  }

  // Points slot i at a copy of its item (or the item that replaces it, same key), keeping the
  // tag and frequency.
  void set_address(std::size_t i, const char* item, bool expires) {
    const std::uint64_t s = load(i);
    store(i, (s & (kTagMask | kFreqBits)) | reinterpret_cast<std::uintptr_t>(item) |
                 (expires ? kExpiresBit : 0));
  }

  void erase_at(std::size_t i) {
    store(i, 0);
    --size_;
  }

  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity(); ++i) {
      if (const std::uint64_t s = load(i); s != 0) f(address(s));
    }
  }

  // Calls on_item(item) for every item, then empties the index and shrinks it back to its
  // initial size. The new array is allocated first (it may throw: then nothing changed).
  template <class F>
  void clear(F&& on_item) {
    SlotArray fresh(kInitialBuckets * kWays);
    for_each(on_item);
    slots_ = std::move(fresh);
    buckets_ = kInitialBuckets;
    size_ = 0;
  }

  // Bytes of the slot array mapped outside the heap (0 while it is small enough for the heap).
  std::size_t mapped_bytes() const { return slots_.mapped_bytes(); }

 private:
  static constexpr std::size_t kInitialBuckets = 2;
  static constexpr std::size_t kMaxBuckets = std::size_t{1} << 32;  // first() scales 32 bits
  static constexpr std::size_t kMaxPath = 64;
  static constexpr unsigned kFreqShift = 48;
  static constexpr std::uint64_t kAddressMask = (std::uint64_t{1} << 48) - 1;
  static constexpr std::uint64_t kFreqBits = std::uint64_t{kMaxFreq} << kFreqShift;
  static constexpr std::uint64_t kExpiresBit = std::uint64_t{1} << 50;
  static constexpr std::uint64_t kTagMask = ~std::uint64_t{0} << 51;

  static char* address(std::uint64_t s) {
    return reinterpret_cast<char*>(static_cast<std::uintptr_t>(s & kAddressMask));
  }
  static std::uint64_t make_word(const char* item, bool expires, std::uint64_t hash) {
    return reinterpret_cast<std::uintptr_t>(item) | (expires ? kExpiresBit : 0) | (hash & kTagMask);
  }
  std::uint64_t load(std::size_t i) const { return slots_[i].load(std::memory_order_relaxed); }
  void store(std::size_t i, std::uint64_t v) { slots_[i].store(v, std::memory_order_relaxed); }

  std::size_t first(std::uint64_t hash) const {
    return static_cast<std::size_t>(((hash & 0xffffffffULL) * buckets_) >> 32);
  }
  std::size_t second(std::uint64_t hash, std::size_t b1) const {
    const std::uint64_t mixed = (hash * 0x9E3779B97F4A7C15ULL) >> 32;
    const auto b2 = static_cast<std::size_t>((mixed * buckets_) >> 32);
    return b2 != b1 ? b2 : (b1 + 1 == buckets_ ? 0 : b1 + 1);
  }
  // Bit 2j+1 set: slot j of bucket b has `tag` (an empty slot matches a zero tag; callers
  // check). SSE2: the tag is in each slot's high 32 bits, so the masked words are compared with
  // the tag 32 bits at a time, the four results packed to one byte per half-slot, and the high
  // halves' bits are the answer (~17 instructions a bucket, where a slot-by-slot loop was ~50:
  // callgrind, cache/README.md). ThreadSanitizer cannot see vector loads as the atomic loads
  // they stand for (readers may raise a slot's frequency meanwhile), so its builds loop.
  [[gnu::always_inline]] unsigned tag_matches(std::size_t b, std::uint64_t tag) const {
#if defined(__SSE2__) && !CACHE_UNDER_TSAN
    const auto* p = reinterpret_cast<const __m128i*>(&slots_[b * kWays]);
    const __m128i mask = _mm_set1_epi64x(static_cast<long long>(kTagMask));
    const __m128i want = _mm_set1_epi64x(static_cast<long long>(tag));
    const auto eq = [&](int k) {
      return _mm_cmpeq_epi32(_mm_and_si128(_mm_loadu_si128(p + k), mask), want);
    };
    const __m128i bytes =
        _mm_packs_epi16(_mm_packs_epi32(eq(0), eq(1)), _mm_packs_epi32(eq(2), eq(3)));
    return static_cast<unsigned>(_mm_movemask_epi8(bytes)) & 0xaaaau;
#else
    unsigned bits = 0;
    for (std::size_t j = 0; j < kWays; ++j) {
      bits |= static_cast<unsigned>((load(b * kWays + j) & kTagMask) == tag) << (2 * j + 1);
    }
    return bits;
#endif
  }
  [[gnu::always_inline]] std::size_t find_in(std::size_t b, std::string_view key,
                                             std::uint64_t tag) const {
    for (unsigned bits = tag_matches(b, tag); bits != 0; bits &= bits - 1) {
      const std::size_t i = b * kWays + static_cast<std::size_t>(std::countr_zero(bits)) / 2;
      const std::uint64_t s = load(i);
      if (s == 0) continue;
      const char* item = address(s);
      if (LogItem::key_len(item) == key.size() &&
          std::memcmp(LogItem::key_data(item), key.data(), key.size()) == 0) {
        return i;
      }
    }
    return npos;
  }

  std::size_t free_slot(std::size_t b) const {
    for (std::size_t j = 0; j < kWays; ++j) {
      if (load(b * kWays + j) == 0) return b * kWays + j;
    }
    return npos;
  }

  // Puts `word` (of `hash`) in a free slot of its buckets, or at the start of a cuckoo path
  // whose items each move to their other bucket, the last to a free slot. False, with nothing
  // moved, when no path of up to kMaxPath moves was found.
  template <class HashFn>
  bool place(std::uint64_t word, std::uint64_t hash, const HashFn& hash_of) {
    const std::size_t b1 = first(hash), b2 = second(hash, b1);
    for (std::size_t b : {b1, b2}) {
      if (const std::size_t f = free_slot(b); f != npos) {
        store(f, word);
        return true;
      }
    }
    std::size_t path[kMaxPath + 1];
    std::size_t length = 0;
    std::size_t bucket = (rng() & 1) != 0 ? b1 : b2;
    while (length < kMaxPath) {
      std::size_t victim = npos;  // a slot of `bucket` not already on the path
      for (std::size_t tries = 0, j = rng() % kWays; tries < kWays; ++tries, j = (j + 1) % kWays) {
        const std::size_t slot = bucket * kWays + j;
        bool on_path = false;
        for (std::size_t k = 0; k < length; ++k) on_path = on_path || path[k] == slot;
        if (!on_path) {
          victim = slot;
          break;
        }
      }
      if (victim == npos) return false;
      path[length++] = victim;
      const std::uint64_t h = hash_of(address(load(victim)));
      const std::size_t v1 = first(h), v2 = second(h, v1);
      bucket = v1 == bucket ? v2 : v1;
      if (const std::size_t f = free_slot(bucket); f != npos) {
        path[length++] = f;
        for (std::size_t k = length - 1; k > 0; --k) store(path[k], load(path[k - 1]));
        store(path[0], word);
        return true;
      }
    }
    return false;
  }

  // Rebuilds the index in a table an eighth bigger (more if the items do not fit it).
  template <class HashFn>
  void grow(const HashFn& hash_of) {
    std::size_t buckets = buckets_ + (buckets_ / 8 > 0 ? buckets_ / 8 : 1);
    for (;;) {
      if (buckets > kMaxBuckets) throw std::length_error("cache: index over 2^32 buckets");
      BucketIndex bigger(buckets);  // may throw: nothing changed
      bool placed = true;
      for (std::size_t i = 0; i < capacity() && placed; ++i) {
        const std::uint64_t s = load(i);
        if (s != 0) placed = bigger.place(s, hash_of(address(s)), hash_of);
      }
      if (placed) {
        slots_ = std::move(bigger.slots_);
        buckets_ = buckets;
        return;
      }
      buckets += buckets / 8 > 0 ? buckets / 8 : 1;
    }
  }

  explicit BucketIndex(std::size_t buckets) { allocate(buckets); }
  void allocate(std::size_t buckets) {
    slots_ = SlotArray(buckets * kWays);  // zeroed: empty
    buckets_ = buckets;
  }

  std::uint64_t rng() {  // xorshift64: which bucket and slot a cuckoo path starts from
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return rng_;
  }

  // The slots: on the heap while small, in a mapping of their own from kMapBytes on, so that a
  // growth hands the old array straight back to the kernel (through jemalloc, the arrays a shard
  // outgrew stayed resident for its decay time: ~2 B per item through the server at 1M items).
  class SlotArray {
   public:
    static constexpr std::size_t kMapBytes = 64 * 1024;
    SlotArray() = default;
    explicit SlotArray(std::size_t n) : bytes_(n * sizeof(Slot)) {
      if (bytes_ < kMapBytes) {
        heap_ = std::make_unique<Slot[]>(n);
        data_ = heap_.get();
        return;
      }
      void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      data_ = static_cast<Slot*>(p);  // the kernel's zero pages: every slot empty
    }
    SlotArray(SlotArray&& o) noexcept { *this = std::move(o); }
    SlotArray& operator=(SlotArray&& o) noexcept {
      if (this != &o) {
        release();
        heap_ = std::move(o.heap_);
        data_ = std::exchange(o.data_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
      }
      return *this;
    }
    ~SlotArray() { release(); }
    Slot& operator[](std::size_t i) const { return data_[i]; }
    // Bytes mapped outside the heap (0 while on the heap).
    std::size_t mapped_bytes() const { return heap_ ? 0 : bytes_; }

   private:
    void release() noexcept {
      if (data_ != nullptr && !heap_) ::munmap(data_, bytes_);
      heap_.reset();
      data_ = nullptr;
      bytes_ = 0;
    }
    std::unique_ptr<Slot[]> heap_;
    Slot* data_ = nullptr;
    std::size_t bytes_ = 0;
  };

  SlotArray slots_;
  std::size_t buckets_ = 0;
  std::size_t size_ = 0;
  std::uint64_t rng_ = 0x2545F4914F6CDD1DULL;
};

}  // namespace cache::detail
