// s3fifo.hh — S3-FIFO eviction (Yang et al., SOSP 2023) and its ghost queue of key hashes.
//
// Owns: the small FIFO (a queue of entry addresses), the main FIFO (the slot table as a clock
// face, as CLOCK does), the ghost of recently evicted one-hit keys, and the byte split between
// small and main. Kept apart from eviction_policies.hh because it is several structures, not a
// hook. The semantics follow libCacheSim's S3FIFO.c (the authors' simulator), so the two can be
// cross-checked on the same traces (traces/crosscheck.py gives libCacheSim our split):
//   - small gets Options::s3fifo_small_percent (5) of the shard's bytes, main the rest; the ghost
//     remembers the keys that left small during the last s3fifo_ghost_percent (50) of the
//     shard's bytes worth of such departures (fingerprints). libCacheSim's defaults are 10 and
//     90; 5 and 50 measured better on every trace we have (cache/README.md);
//   - a new key goes to small, or to main if its hash is in the ghost (the ghost forgets it);
//     until the first eviction, once small is full new keys go straight to main (in a cache
//     whose small share is above 64 KiB, "full" then also means that share times the square of
//     how full the cache is: see warm_small_cap);
//   - a hit adds 1 to a 2-bit frequency (capped at 3) in the entry's meta byte, atomically: the
//     read path takes no exclusive lock and writes nothing once the counter is saturated;
//   - evict from main if main holds more than its share or small is empty, else from small;
//   - small's oldest entry moves to main (frequency reset to 0) if it was hit at least twice
//     (libCacheSim's move-to-main threshold, 2), else it leaves and its hash enters the ghost;
//   - main's hand visits entries in a fixed scattered order; one with frequency > 0 is
//     decremented and skipped, the first with frequency 0 leaves.
// Deviation, for memory: libCacheSim's main queue is a linked FIFO; ours is the slot table with
// a clock hand (no per-entry queue link), so a key promoted to main first meets the hand after a
// uniformly random part of a revolution rather than after exactly one; the ghost is approximate
// (see GhostFifo). cache/README.md and optimizations/README.md measure both against libCacheSim.
//
// Deviation, for speed: an entry replaced by a set goes to main with its frequency (libCacheSim
// has no updates: its traces are reads). Entries removed while in small leave a stale record in
// small's queue: an 8-byte word, the hash's bits the table reads (home slot and tag) and the
// entry's version's low 18 bits. A record counts only if the table holds a live entry in small
// with that tag and version in that probe run, so freed memory is never dereferenced (a stale
// record matches a later entry only if its version agrees modulo 2^18 as well: then that entry
// is judged at the record's turn, early).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <memory>
#include <new>

#include "cache/cache.hh"
#include "cache/entry.hh"
#include "cache/slot_table.hh"

namespace cache::detail {

// `percent` of `bytes`, rounded down, without overflowing for any size_t `bytes`.
constexpr std::size_t percent_of(std::size_t bytes, std::size_t percent) {
  return bytes / 100 * percent + bytes % 100 * percent / 100;
}

// The ghost: which keys left small recently, as 12-bit fingerprints stamped with the time they
// left, where time counts the bytes of every entry that has entered the ghost. A fingerprint is
// remembered while less than `window_bytes` of later ghost entries have followed it: a FIFO of
// that many bytes, as libCacheSim's ghost is, without a queue. The table is a two-choice hash
// of 8-slot buckets of 16-bit words (fingerprint << 4 | coarse time), sized for the number of
// entries the cache holds, about 1.3 bytes per cached entry; a slot whose time is out of the
// window is free. Only touched under the shard's exclusive lock.
//
// Time runs in units of 3 to 6 per window (4 bits, wrapping at 16): a word's age is known to
// within one unit, so a key is remembered for its window give or take a unit (a third to a sixth
// of it), by its stamp's offset in its unit: on average the window exactly (issue 30: 32-bit
// words, 16-bit fingerprints and exact time, cost 2.6 B per cached entry; these 1.3).
//
// libCacheSim's ghost FIFO frees a record's room when a ghost hit removes it, so the others stay
// longer; here the window is stretched by 1 / (1 - the recent fraction of records removed by
// hits) to match. Approximations, all toward forgetting or a rare false hit: a fingerprint is 12
// bits (a false hit sends a new key to main instead of small: about 1 lookup of a new key in
// 400 at the window's usual load); when both buckets are full of live fingerprints the oldest is
// dropped; growing the table forgets everything.
class GhostFifo {
 public:
  // `window_percent`: the window as a share of the shard's bytes; it sizes the table.
  GhostFifo(std::size_t window_bytes, std::size_t window_percent)
      : window_(window_bytes), effective_window_(window_bytes), window_percent_(window_percent) {
    while ((window_ >> shift_) >= kWindowUnits) ++shift_;
  }

  // Forgets the key of `hash` if remembered; true if it was.
  bool remove(std::uint64_t hash) {
    std::uint16_t* slot = find(hash);
    if (slot == nullptr) return false;
    *slot = 0;
    removed_ += 1;
    update_window();
    return true;
  }

  // Remembers the key of `hash`, which held `charge` bytes (a no-op if already remembered).
  // `items` is the number of entries the cache holds now; it sizes the table.
  // Never throws, so an eviction cannot fail halfway.
  void insert(std::uint64_t hash, std::size_t charge, std::size_t items) noexcept {
    if (charge > window_ || !fit(items) || find(hash) != nullptr) return;
    const auto word = static_cast<std::uint16_t>((fingerprint(hash) << 4) | (now_unit() & 0xf));
    std::uint16_t* b1 = bucket(hash);
    std::uint16_t* b2 = bucket(hash * 0x9E3779B97F4A7C15ULL >> 32);
    std::uint16_t* target = nullptr;
    const std::uint32_t now = now_unit(), limit = live_limit();
    unsigned free1 = 0, free2 = 0;
    for (std::size_t i = 0; i < kWays; ++i) {
      free1 += !live(b1[i], now, limit);
      free2 += !live(b2[i], now, limit);
    }
    std::uint16_t* b = free1 >= free2 ? b1 : b2;
    if (free1 == 0 && free2 == 0) {  // drop the oldest of the 16
      target = b1;
      for (std::uint16_t* bb : {b1, b2}) {
        for (std::size_t i = 0; i < kWays; ++i) {
          if (age(bb[i]) > age(*target)) target = &bb[i];
        }
      }
    } else {
      for (std::size_t i = 0; i < kWays && target == nullptr; ++i) {
        if (!live(b[i], now, limit)) target = &b[i];
      }
    }
    *target = word;
    inserted_ += 1;
    if (inserted_ > kRateHistory) {  // exponential decay of the hit-rate estimate
      inserted_ /= 2;
      removed_ /= 2;
    }
    update_window();
    advance(charge);
  }

  void clear() {
    table_.reset();
    buckets_ = 0;
    now_ = 0;
    cursor_ = 0;
    sweep_unit_ = 0;
    inserted_ = removed_ = 0;
    effective_window_ = window_;
  }

 private:
  static constexpr std::size_t kWays = 8;
  static constexpr std::uint64_t kWindowUnits = 6;  // a window is 3 to 6 units of time
  // Ages run 0..15 (4 bits). A word is live up to kMaxLive units, and the sweep visits every
  // bucket at least once per unit, so a dead word is cleared before its age wraps to look live.
  static constexpr std::uint32_t kMaxLive = 13;
  static constexpr double kRateHistory = 4096;  // ghost insertions the hit rate spans

  static std::uint32_t fingerprint(std::uint64_t hash) {
    const auto fp = static_cast<std::uint32_t>(hash >> 52);
    return fp == 0 ? 1 : fp;
  }
  std::uint32_t now_unit() const { return static_cast<std::uint32_t>(now_ >> shift_); }
  // Units of time since the word was stamped (time runs in units of 2^shift_ bytes).
  std::uint32_t age(std::uint16_t word) const { return (now_unit() - word) & 0xf; }
  // age <= live_limit(): the word is in the window, to within a unit (see the class comment).
  // The limit is hoisted out of the bucket loops (for speed).
  std::uint32_t live_limit() const {
    const std::uint64_t limit = effective_window_ >> shift_;
    return limit > kMaxLive ? kMaxLive : static_cast<std::uint32_t>(limit);
  }
  static bool live(std::uint16_t word, std::uint32_t now, std::uint32_t limit) {
    return word != 0 && ((now - word) & 0xf) <= limit;
  }
  // A FIFO of window_ bytes that forgets a key on a ghost hit makes room for later ones: its
  // records live longer, by 1 / (1 - the fraction of records removed by hits). Estimated from
  // recent counts, capped at 4 windows (and by kMaxLive units: 2.2 to 4.3 windows).
  void update_window() {
    const double kept = inserted_ > removed_ ? (inserted_ - removed_) / inserted_ : 0.0;
    effective_window_ =
        kept * 4 <= 1 ? 4 * window_ : static_cast<std::size_t>(static_cast<double>(window_) / kept);
  }
  std::uint16_t* bucket(std::uint64_t h) {
    return &table_[(((h & 0xffffffff) * buckets_) >> 32) * kWays];
  }
  // Every set of a new key runs this once or twice (it asks the ghost; an eviction from small
  // inserts into it), so it is written for speed: a branch-free test, four words at a time,
  // tells whether any fingerprint in the bucket matches, and only then (rarely) are the slots
  // scanned in order. Returns the same slot as a plain scan in order would. Forced inline: GCC
  // stopped inlining it after an unrelated edit to insert (+25 instructions per evicting set).
  [[gnu::always_inline]] std::uint16_t* find(std::uint64_t hash) {
    if (buckets_ == 0) return nullptr;
    const std::uint32_t fp = fingerprint(hash);
    const std::uint64_t pattern = std::uint64_t{fp << 4} * 0x0001000100010001ULL;
    for (std::uint16_t* b : {bucket(hash), bucket(hash * 0x9E3779B97F4A7C15ULL >> 32)}) {
      if (!any_fingerprint(b, pattern)) continue;
      const std::uint32_t now = now_unit(), limit = live_limit();
      for (std::size_t i = 0; i < kWays; ++i) {
        if ((b[i] >> 4) == fp && live(b[i], now, limit)) return &b[i];
      }
    }
    return nullptr;
  }
  // Whether any of the bucket's 8 words has the fingerprint in `pattern` (fp << 4 in every
  // 16-bit lane) as its top 12 bits: XOR and masking off the time leave such a lane zero, and
  // the classic has-a-zero-lane test runs on 16-bit lanes. Exact (the test's false positives
  // only ever sit above a true zero lane). A free word (0) never matches: fp is never 0.
  static bool any_fingerprint(const std::uint16_t* b, std::uint64_t pattern) {
    constexpr std::uint64_t kFp = 0xfff0fff0fff0fff0ULL, kOnes = 0x0001000100010001ULL;
    constexpr std::uint64_t kHighBits = 0x8000800080008000ULL;
    std::uint64_t zero = 0;
    for (std::size_t i = 0; i < kWays; i += 4) {
      std::uint64_t w;
      std::memcpy(&w, b + i, sizeof w);
      const std::uint64_t x = (w ^ pattern) & kFp;
      zero |= (x - kOnes) & ~x & kHighBits;
    }
    return zero != 0;
  }
  // Room for the fingerprints the window holds, at a load of at most 95%; grows to a load of
  // 85%. A window of p% of the bytes holds about p% of `items` live fingerprints, whatever the
  // stretch (a stretched window's extra records are those hits removed), so the table is sized
  // for 1.1 × p% of `items` (it was 90% of `items` whatever p: 4.2 B per cached entry at p = 50
  // with 32-bit words; issue 30). Two choices of 8 slots each rarely overflow even at 95%; when
  // they do, the oldest fingerprint of the two buckets goes.
  // Never throws: without memory for a bigger table it keeps the old one (false if none).
  bool fit(std::size_t items) noexcept {
    const std::size_t wanted = items * window_percent_ / 100 * 11 / 10 + 1;
    if (buckets_ != 0 && wanted * 100 <= buckets_ * kWays * 95) return true;
    const std::size_t buckets = (wanted * 100 / 85) / kWays + 1;
    try {
      table_ = std::make_unique<std::uint16_t[]>(buckets * kWays);  // zeroed: all free
    } catch (const std::bad_alloc&) {
      return buckets_ != 0;
    }
    buckets_ = buckets;
    cursor_ = 0;
    sweep_unit_ = now_ >> shift_;
    return true;
  }
  // Moves time on by `charge` bytes a unit at a time, so that no unit's sweep is skipped (an
  // entry is at most a window, 6 units).
  void advance(std::size_t charge) noexcept {
    const std::uint64_t end = now_ + charge;
    while ((now_ >> shift_) < (end >> shift_)) {
      now_ = ((now_ >> shift_) + 1) << shift_;
      sweep();
    }
    now_ = end;
    sweep();
  }
  // Clears out-of-window words so none lives long enough for its 4-bit age to wrap around and
  // look recent again: one pass over the table per unit of time, spread over the insertions in
  // proportion to the bytes they add (about one bucket per insertion when entries are alike). A
  // unit that ends before its pass does finishes it first (then all at once). So a bucket is
  // visited at least once every 2 units, and a word live at one visit (age <= 13) is at most 15
  // at the next, where it is cleared if out of the window.
  void sweep() noexcept {
    const std::uint64_t unit = now_ >> shift_;
    std::size_t target = buckets_;
    if (unit == sweep_unit_) {
      const std::uint64_t into = now_ & ((std::uint64_t{1} << shift_) - 1);
      target = shift_ <= 32 ? static_cast<std::size_t>((into * buckets_) >> shift_)
                            : static_cast<std::size_t>(((into >> (shift_ - 32)) * buckets_) >> 32);
    }
    if (cursor_ < target) {
      const std::uint32_t now = now_unit(), limit = live_limit();
      for (; cursor_ < target; ++cursor_) {
        std::uint16_t* b = &table_[cursor_ * kWays];
        for (std::size_t i = 0; i < kWays; ++i) {
          if (!live(b[i], now, limit)) b[i] = 0;
        }
      }
    }
    if (unit != sweep_unit_) {  // the pass is done: the next starts with this unit
      cursor_ = 0;
      sweep_unit_ = unit;
    }
  }

  std::unique_ptr<std::uint16_t[]> table_;
  std::size_t buckets_ = 0;
  std::size_t cursor_ = 0;        // the sweep's next bucket in this unit's pass
  std::uint64_t sweep_unit_ = 0;  // the unit of time the sweep's pass belongs to
  std::uint64_t now_ = 0;         // bytes that have entered the ghost so far
  const std::size_t window_;
  std::size_t effective_window_;
  const std::size_t window_percent_;
  double inserted_ = 0;  // recent ghost insertions, and how many of them a hit removed
  double removed_ = 0;
  unsigned shift_ = 0;
};

// The per-operation hooks (prepare_insert, on_insert, on_remove, on_hit) are forced inline into
// the shard's set and get: GCC called them out of line, which with the shard's set made an
// S3-FIFO set ~18% more instructions than CLOCK's (callgrind, issue 16).
class S3FifoEviction {
 public:
  using Hook = NoHook;
  static constexpr bool kEvicts = true;
  static constexpr std::uint8_t kFreqMask = 0x3;  // 2-bit frequency, saturating at 3
  static constexpr std::uint8_t kInSmall = 0x4;   // the entry is in the small FIFO
  static constexpr std::uint8_t kPromoteAt = 2;   // libCacheSim's move-to-main threshold
  static constexpr std::uint8_t kFresh = 0x80;    // pending_meta_: a new key, small or main

  // Small's share of the shard's bytes and the ghost's window come from Options (validated
  // there): s3fifo_small_percent and s3fifo_ghost_percent.
  S3FifoEviction(std::size_t budget, const Options& o)
      : small_cap_(percent_of(budget, o.s3fifo_small_percent)),
        main_cap_(budget - small_cap_),
        ghost_(percent_of(budget, o.s3fifo_ghost_percent), o.s3fifo_ghost_percent) {}

  // Before a set links its entry (exclusive lock, before any eviction): where the new entry of
  // `hash` will go. A replacement goes to main keeping the old entry's frequency: an update is a
  // second access, the reuse small exists to detect, and it then needs no new queue record (a
  // replacement that stayed in small cost a record, a stale one, and their compaction: +9%
  // instructions per replacing set, cache/README.md). A new key whose hash the ghost remembers
  // goes to main (and the ghost forgets it, as libCacheSim does); any other new key is fresh.
  // `used_after` (a new key only; 0 for a replacement): the shard's key+value bytes once the new
  // entry is in, before any eviction.
  template <class E>
  [[gnu::always_inline]] void prepare_insert(SlotTable<E>& table, std::uint64_t hash, const E* old,
                                             std::size_t used_after) {
    if (old != nullptr) {
      pending_meta_ = old->meta.load(std::memory_order_relaxed) & kFreqMask;
    } else if (ghost_.remove(hash & SlotTable<E>::kRecordHashMask)) {  // what small's records keep
      pending_meta_ = 0;
    } else {
      pending_meta_ = kFresh;
      pending_hash_ = hash;
      if (!has_evicted_) warm_cap_ = warm_small_cap(used_after);
      // Rare (once per ~small_count_ stale records): out of line, so this stays small enough
      // to inline into every set.
      if (small_records_ > 2 * small_count_ + 64) [[unlikely]]
        compact_small(table);
    }
  }

  template <class E>
  [[gnu::always_inline]] void on_insert(E* e) {
    if (pending_meta_ != kFresh) {  // to main (a replacement, or a key the ghost remembered)
      e->meta.store(pending_meta_, std::memory_order_relaxed);
      return;
    }
    // libCacheSim: before the first eviction, a full small sends new keys to main; a key as big
    // as small's whole share never enters small. Small's room before then: warm_small_cap.
    const bool small_full = !has_evicted_ && small_bytes_ >= warm_cap_;
    if (!small_full && e->charge() < small_cap_) {
      try {
        small_.push_back(record(pending_hash_, e));
        ++small_records_;
        e->meta.store(kInSmall, std::memory_order_relaxed);
        small_bytes_ += e->charge();
        ++small_count_;
        return;
      } catch (const std::bad_alloc&) {
        // the entry is linked already: place it in main, where no record is needed
      }
    }
    e->meta.store(0, std::memory_order_relaxed);
  }

  template <class E>
  [[gnu::always_inline]] void on_remove(E* e) {
    if (e->meta.load(std::memory_order_relaxed) & kInSmall) {
      small_bytes_ -= e->charge();  // its queue record goes stale; skipped or compacted later
      --small_count_;
    }
  }

  // Shared lock: many readers at once, so only an atomic compare-and-swap on the meta byte.
  template <class E>
  [[gnu::always_inline]] void on_hit(const SlotTable<E>&, std::size_t, E* e) const {
    std::uint8_t m = e->meta.load(std::memory_order_relaxed);
    while ((m & kFreqMask) < kFreqMask &&
           !e->meta.compare_exchange_weak(m, static_cast<std::uint8_t>(m + 1),
                                          std::memory_order_relaxed)) {
    }
  }

  // `used_bytes`: the shard's bytes (small's and main's), so main's need no counter of its own.
  template <class E, class HashFn>
  std::size_t pick_victim(SlotTable<E>& table, const HashFn&, std::size_t used_bytes) {
    has_evicted_ = true;
    for (;;) {
      if (used_bytes - small_bytes_ > main_cap_ || small_bytes_ == 0) return evict_main(table);
      if (const std::size_t slot = evict_small(table); slot != SlotTable<E>::npos) return slot;
      // Every entry of small was promoted: decide again (now from main).
    }
  }

  void clear() {
    small_.clear();
    small_records_ = 0;
    ghost_.clear();
    small_bytes_ = small_count_ = 0;
    hand_ = 0;
    has_evicted_ = false;
  }

 private:
  // Small's queue record of entry `e` of `hash` (16 bytes, address and hash, until issue 30:
  // 0.4 B per item at 5% of the entries in small).
  static constexpr unsigned kRecordVersionShift = 32;
  static constexpr std::uint64_t kRecordVersionBits = 0x3ffff;  // bits 32..49, under the tag
  template <class E>
  static std::uint64_t record(std::uint64_t hash, const E* e) {
    return (hash & SlotTable<E>::kRecordHashMask) |
           ((e->version() & kRecordVersionBits) << kRecordVersionShift);
  }
  // The slot of the entry in small that `r` records, or npos if it is gone.
  template <class E>
  static std::size_t find_record(const SlotTable<E>& table, std::uint64_t r) {
    const std::uint64_t version = (r >> kRecordVersionShift) & kRecordVersionBits;
    return table.find_entry_if(r & SlotTable<E>::kRecordHashMask, [version](const E* e) {
      return (e->meta.load(std::memory_order_relaxed) & kInSmall) != 0 &&
             (e->version() & kRecordVersionBits) == version;
    });
  }

  // Pops small until one entry leaves (its slot is returned) or small is empty (npos).
  template <class E>
  std::size_t evict_small(SlotTable<E>& table) {
    while (!small_.empty()) {
      const std::uint64_t r = small_.front();
      small_.pop_front();
      --small_records_;
      const std::size_t slot = find_record(table, r);
      if (slot == SlotTable<E>::npos) continue;  // removed or replaced since it was queued
      E* e = table.at(slot);
      const std::uint8_t m = e->meta.load(std::memory_order_relaxed);
      if ((m & kFreqMask) >= kPromoteAt) {
        e->meta.store(0, std::memory_order_relaxed);  // to main, frequency 0
        small_bytes_ -= e->charge();
        --small_count_;
        continue;
      }
      ghost_.insert(r & SlotTable<E>::kRecordHashMask, e->charge(), table.size());
      return slot;  // on_remove accounts for it
    }
    return SlotTable<E>::npos;
  }

  // The clock hand over main's entries, in the scattered order CLOCK uses (see ClockEviction).
  // Terminates within four cycles: each pass lowers every frequency it meets by one.
  template <class E>
  std::size_t evict_main(SlotTable<E>& table) {
    if (hand_ >= table.capacity()) hand_ = 0;
    for (;; hand_ = table.next_hand(hand_)) {
      E* e = table.at(hand_);
      if (e == nullptr) continue;
      const std::uint8_t m = e->meta.load(std::memory_order_relaxed);
      if (m & kInSmall) continue;
      if ((m & kFreqMask) == 0) return hand_;
      e->meta.store(static_cast<std::uint8_t>(m - 1), std::memory_order_relaxed);
    }
  }

  // Drops records of entries that left small without being popped (deleted or replaced), so
  // the queue stays proportional to small even when nothing is evicted. In place, keeping the
  // order (no second queue to allocate, so it cannot fail); noinline keeps it out of the set path.
  template <class E>
  [[gnu::noinline]] void compact_small(SlotTable<E>& table) noexcept {
    auto out = small_.begin();
    for (const std::uint64_t r : small_) {
      if (find_record(table, r) != SlotTable<E>::npos) *out++ = r;
    }
    small_.erase(out, small_.end());
    small_records_ = small_.size();
  }

  // Small's room before the first eviction: its share of the budget, as libCacheSim's, but only
  // while that is at most kWarmFloor bytes or that share times the square of how full the cache
  // is. In a cache far larger than its data (2 GB holding 111 MB) small would otherwise hold
  // nearly every entry, each with a queue record: +14 B per item through the server (issue 30);
  // now its records are ~1% of the entries there, and 5% once the cache is full, where the two
  // rules agree. Until then nothing is evicted, so small's only job is which keys the first
  // evictions meet; a small below its share then fills from new keys while main gives way.
  // Caches whose small share is at most kWarmFloor (the semantic tests, the libCacheSim
  // cross-check and hit-ratio traces) see libCacheSim's rule exactly.
  static constexpr std::size_t kWarmFloor = 64 * 1024;
  std::size_t warm_small_cap(std::size_t used_after) const {
    if (small_cap_ <= kWarmFloor) return small_cap_;
    const double full =
        static_cast<double>(used_after) / static_cast<double>(small_cap_ + main_cap_);
    const auto share = static_cast<std::size_t>(static_cast<double>(small_cap_) * full * full);
    return share < kWarmFloor ? kWarmFloor : (share < small_cap_ ? share : small_cap_);
  }

  const std::size_t small_cap_;
  const std::size_t main_cap_;
  std::size_t warm_cap_ = 0;  // warm_small_cap at the last fresh insert before the first eviction
  std::deque<std::uint64_t> small_;  // oldest first; may hold stale records (see evict_small)
  std::size_t small_records_ = 0;    // small_.size(), which costs a dozen instructions per set
  std::size_t small_bytes_ = 0;
  std::size_t small_count_ = 0;  // live entries in small
  std::size_t hand_ = 0;
  bool has_evicted_ = false;
  GhostFifo ghost_;
  // From prepare_insert to on_insert: the new entry's meta byte if it goes to main, or kFresh
  // (then small's queue needs its hash).
  std::uint8_t pending_meta_ = kFresh;
  std::uint64_t pending_hash_ = 0;
};

}  // namespace cache::detail
