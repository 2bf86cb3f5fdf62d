// slot_table.hh — the index of one shard: open addressing with linear probing.
//
// Capacity is 4, 5, 6 or 7 times a power of two and grows by a quarter of that power (×1.14 to
// ×1.25) when size+1 would exceed max_load_factor * capacity, so at the default 0.75 the table is
// 60–75% full (10.7–13.3 B per entry) where doubling left it 37.5–75% full (up to 21 B; issue 30).
// Quarter steps also match jemalloc's large size classes (four per doubling), so a table of 16 KiB
// or more fills its allocation exactly; eighth steps measured no better through the server.
// The home slot of a hash is its low 32 bits scaled to the capacity (Lemire's multiply-shift;
// capacities stay below 2^32), and probing wraps at the capacity. A slot is one 64-bit word: the
// entry's address in bits 0..47, CLOCK's referenced bit in bit 48, the entry's has-expiry flag in
// bit 49, and a 14-bit tag (the hash's top bits) in bits 50..63, so most probes that do not match
// are rejected without touching the entry, the CLOCK hand sweeps a contiguous array instead of
// chasing pointers, and the expiry sweep (Shard::reclaim_expired) reads only the entries that can
// expire. Deletion shifts
// followers back (no tombstones), so lookups stay short under churn. The table never owns entries;
// the shard creates and destroys them.
//
// Slots are std::atomic only so that readers holding a *shared* lock may set the referenced bit
// (mark_referenced); every other access happens under the exclusive lock and is relaxed.
//
// The hash of an entry is not stored (it would cost 8 bytes per item); growing and
// backward-shifting recompute it with the shard's hasher.
#pragma once

#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string_view>

#include "cache/entry.hh"

namespace cache::detail {

template <class E>
class SlotTable {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  static constexpr std::size_t kInitialCapacity = 16;
  // The bits of a hash the table reads: the low 32 (the home slot) and the tag's (50..63).
  static constexpr std::uint64_t kRecordHashMask = 0xffffffffULL | (~std::uint64_t{0} << 50);

  explicit SlotTable(double max_load_factor) : max_load_factor_(max_load_factor) {
    allocate(kInitialCapacity);
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }

  // The entry in slot i (i < capacity()), or nullptr when the slot is empty.
  E* at(std::size_t i) const { return untag(load(i)); }

  // A clock hand's next slot after i: a stride near capacity/phi, coprime with the capacity, so
  // the hand visits every slot once per revolution in a scattered order (see ClockEviction).
  // An i left over from a smaller table (i >= capacity()) restarts at 0.
  std::size_t next_hand(std::size_t i) const {
    i += stride_;
    return i < capacity_ ? i : (i - capacity_ < capacity_ ? i - capacity_ : 0);
  }

  // CLOCK's bit. mark_referenced is safe under a shared lock (an atomic OR, skipped when the bit
  // is already set so a hot slot's cache line is not written on every hit).
  void mark_referenced(std::size_t i) const {
    if ((load(i) & kReferencedBit) == 0)
      slots_[i].fetch_or(kReferencedBit, std::memory_order_relaxed);
  }
  bool referenced(std::size_t i) const { return (load(i) & kReferencedBit) != 0; }
  void clear_referenced(std::size_t i) { store(i, load(i) & ~kReferencedBit); }

  // The slot holding `key`, or npos.
  std::size_t find(std::string_view key, std::uint64_t hash) const {
    const std::uint64_t tag = tag_of(hash);
    for (std::size_t i = home(hash);; i = next(i)) {
      const std::uint64_t s = load(i);
      if (s == 0) return npos;
      if ((s & kTagMask) == tag && untag(s)->key() == key) return i;
    }
  }

  // The first slot, in `hash`'s probe run, whose entry matches `hash`'s tag and satisfies
  // `pred` (given the live entry), or npos. Only the hash's low 32 bits (the home slot) and its
  // tag bits (kRecordHashMask) are read, so a policy can keep just those.
  template <class Pred>
  std::size_t find_entry_if(std::uint64_t hash, const Pred& pred) const {
    const std::uint64_t tag = tag_of(hash);
    for (std::size_t i = home(hash);; i = next(i)) {
      const std::uint64_t s = load(i);
      if (s == 0) return npos;
      if ((s & kTagMask) == tag && pred(untag(s))) return i;
    }
  }

  // Makes room for one more entry, growing if needed. Throws std::bad_alloc (or
  // std::length_error past 2^32 slots) with the table unchanged, so callers reserve before they
  // modify anything else.
  template <class HashFn>
  void reserve_one_more(const HashFn& hash_of) {
    if (static_cast<double>(size_ + 1) <= max_load_factor_ * static_cast<double>(capacity())) {
      return;
    }
    const std::size_t old_capacity = capacity();
    const std::size_t new_capacity = grown(old_capacity);
    if (new_capacity > kMaxCapacity) throw std::length_error("cache: slot table over 2^32 slots");
    auto old = std::make_unique<std::atomic<std::uint64_t>[]>(new_capacity);  // may throw
    std::swap(old, slots_);
    set_capacity(new_capacity);
    for (std::size_t i = 0; i < old_capacity; ++i) {
      const std::uint64_t s = old[i].load(std::memory_order_relaxed);
      if (s != 0) place(s, hash_of(untag(s)->key()));
    }
  }

  // Inserts an entry whose key is absent; room must have been reserved.
  [[gnu::always_inline]] void insert(E* e, std::uint64_t hash) {
    assert((reinterpret_cast<std::uintptr_t>(e) & ~kPointerMask) == 0);
    place(slot_word(e, hash), hash);
    ++size_;
  }

  // Puts entry `e`, whose key (so hash) is that of the entry in slot i, in its place; CLOCK's
  // referenced bit starts clear, as for an insertion.
  [[gnu::always_inline]] void replace_at(std::size_t i, E* e, std::uint64_t hash) {
    store(i, slot_word(e, hash));
  }

  // Does the entry in slot i have an expiry? (read from the slot, without touching the entry)
  bool expires_at(std::size_t i) const { return (load(i) & kExpiresBit) != 0; }

  // Empties slot i and shifts the following run back so every entry stays reachable from its
  // home slot (Knuth's algorithm R).
  template <class HashFn>
  void erase_at(std::size_t i, const HashFn& hash_of) {
    std::size_t hole = i;
    for (std::size_t j = next(hole); load(j) != 0; j = next(j)) {
      const std::size_t h = home(hash_of(untag(load(j))->key()));
      // The entry at j may move into the hole unless its home lies cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        store(hole, load(j));
        hole = j;
      }
    }
    store(hole, 0);
    --size_;
  }

  // Calls f(E*) for every entry.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (const std::uint64_t s = load(i); s != 0) f(untag(s));
    }
  }

  // Forgets every entry (the caller has destroyed them) and shrinks back to the initial size.
  void clear() {
    allocate(kInitialCapacity);
    size_ = 0;
  }

 private:
  // User-space addresses fit in 48 bits on x86-64 and arm64 (Linux hands out higher ones only to
  // an mmap that asks for them).
  static constexpr std::uint64_t kPointerMask = kAddressBitsMask;  // entry.hh checks every entry
  static constexpr std::uint64_t kReferencedBit = std::uint64_t{1} << 48;
  static constexpr std::uint64_t kExpiresBit = std::uint64_t{1} << 49;
  static constexpr std::uint64_t kTagMask = ~(kPointerMask | kReferencedBit | kExpiresBit);

  static_assert((kRecordHashMask & ~0xffffffffULL) == kTagMask, "the tag is what records keep");
  static std::uint64_t tag_of(std::uint64_t hash) { return hash & kTagMask; }
  static std::uint64_t slot_word(const E* e, std::uint64_t hash) {
    return reinterpret_cast<std::uintptr_t>(e) | tag_of(hash) | (e->expires() ? kExpiresBit : 0);
  }
  static E* untag(std::uint64_t slot) {
    return reinterpret_cast<E*>(static_cast<std::uintptr_t>(slot & kPointerMask));
  }
  std::uint64_t load(std::size_t i) const { return slots_[i].load(std::memory_order_relaxed); }
  void store(std::size_t i, std::uint64_t v) { slots_[i].store(v, std::memory_order_relaxed); }

  static constexpr std::size_t kMaxCapacity = std::size_t{1} << 32;  // home() scales 32 bits

  // The capacity after c (4..7 times a power of two): a quarter of that power more.
  static std::size_t grown(std::size_t c) { return c + std::bit_floor(c) / 4; }

  std::size_t home(std::uint64_t hash) const {
    return static_cast<std::size_t>(((hash & 0xffffffffULL) * capacity_) >> 32);
  }
  std::size_t next(std::size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }

  void allocate(std::size_t capacity) {
    slots_ = std::make_unique<std::atomic<std::uint64_t>[]>(capacity);  // zeroed: all empty
    set_capacity(capacity);
  }
  void set_capacity(std::size_t capacity) {
    capacity_ = capacity;
    stride_ = static_cast<std::size_t>(static_cast<double>(capacity) * 0.6180339887) | 1;
    while (std::gcd(stride_, capacity) != 1) stride_ += 2;
  }

  void place(std::uint64_t slot, std::uint64_t hash) {
    std::size_t i = home(hash);
    while (load(i) != 0) i = next(i);
    store(i, slot);
  }

  std::unique_ptr<std::atomic<std::uint64_t>[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t stride_ = 1;
  std::size_t size_ = 0;
  double max_load_factor_;
};

}  // namespace cache::detail
