// s3fifo.hh — the S3-FIFO shard (Yang et al., SOSP 2023): its queues are logs of segments.
//
// Owns one shard's items for Evictor::s3fifo: the small and main FIFOs as segment logs
// (segment_log.hh), their items (log_item.hh: 8 bytes above key and value, no per-item
// allocation), the index of 8-byte slots in cache-line buckets (bucket_index.hh), the ghost of
// keys that recently left small (ghost_fifo.hh), the byte budget and the lock. The other
// evictors keep the malloc'ed entries of shard.hh. Semantics follow libCacheSim's S3FIFO.c (the
// authors' simulator) so the two can be cross-checked (traces/crosscheck.py):
//   - small gets Options::s3fifo_small_percent (5) of the shard's bytes, main the rest; the ghost
//     remembers the keys that left small during the last s3fifo_ghost_percent (50) of the
//     shard's bytes worth of such departures. libCacheSim's defaults are 10 and 90; 5 and 50
//     measured better on every trace we have (cache/README.md);
//   - a new key is appended to small, or to main if the ghost remembers it (and forgets it);
//     until the first eviction, once small is full new keys go to main (in a shard whose small
//     share is above 64 KiB "full" also means that share times the square of how full the
//     shard is: warm_small_cap); a key at least as big as small's share goes to main;
//   - a hit adds 1 to the 2-bit frequency in the item's index slot (compare-and-swap; nothing is
//     written once it is 3);
//   - while the logs' bytes exceed the budget: from main if main holds more than its share or
//     small is empty, else from small, the queue's head item is taken: at small's head, an item
//     hit at least twice is copied to main's tail (frequency 0), any other leaves (its hash to
//     the ghost); at main's head, an item hit since it was last there is copied to main's tail
//     with its frequency lowered by one, any other leaves. This is libCacheSim's S3-FIFO, whose
//     main is a FIFO with reinsertion (the slot-table CLOCK this replaces was an approximation).
// Deviation, for speed: a SET that replaces a key appends the new item to main with the old
// one's frequency (an update is a reuse; libCacheSim's traces have no updates), or, if the old
// item is in main and the new one has the same size, rewrites it in place.
//
// Dead bytes. A replaced, deleted or expired item leaves the index at once (space_used() drops,
// an external value is freed) but its bytes stay in its segment, flagged dead, until its queue's
// head passes them. They count toward the budget: the logs never hold more than maxmem/shards
// bytes of keys and values, live or dead, so the worst case is a shard whose budget is all dead
// bytes (a few keys overwritten in a loop) and what bounds it is the budget itself: the next
// insertions that do not fit move the heads over the dead items, which costs no hash and no
// copy. Resident memory is the logs' bytes (items with their 8-byte headers) in whole 4 KiB
// pages, plus at most one segment at each queue's head and one spare segment per shard.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string_view>

#include "cache/bucket_index.hh"
#include "cache/cache.hh"
#include "cache/clock.hh"
#include "cache/expiry_sweep.hh"
#include "cache/ghost_fifo.hh"
#include "cache/key_hasher.hh"
#include "cache/log_item.hh"
#include "cache/segment_log.hh"
#include "cache/shard_counters.hh"

namespace cache::detail {

template <class Lock>
class S3FifoShard;

// Evictor::s3fifo's policy tag: ShardedCache builds S3FifoShard for it instead of Shard.
struct S3FifoEviction {
  template <class Lock>
  using ShardType = S3FifoShard<Lock>;
};

template <class Lock>
class alignas(64) S3FifoShard : public ShardCounters {
 public:
  static constexpr unsigned kPromoteAt = 2;  // libCacheSim's move-to-main threshold

  S3FifoShard(std::size_t budget, double /*max_load_factor: the index fills to 95%*/,
              const KeyHasher& hasher, const CacheClock& clock, const Options& o)
      : arena_(segment_bytes_for(budget)),
        segment_mask_(arena_.segment_mask()),
        max_inline_(arena_.segment_bytes() / 8),
        budget_(budget),
        small_cap_(percent_of(budget, o.s3fifo_small_percent)),
        main_cap_(budget - small_cap_),
        ghost_(percent_of(budget, o.s3fifo_ghost_percent), o.s3fifo_ghost_percent),
        hasher_(hasher),
        clock_(clock) {}
  ~S3FifoShard() { destroy_all(); }
  S3FifoShard(const S3FifoShard&) = delete;
  S3FifoShard& operator=(const S3FifoShard&) = delete;

  // Key validity and hashing are ShardedCache's job. A value too big to be inline is allocated
  // and filled before the lock is taken; an inline one is copied into the log under it.
  [[gnu::always_inline]] Written set(std::string_view key, std::string_view value,
                                     std::uint64_t hash, const WriteOptions& options) {
    const std::size_t charge = key.size() + value.size();
    if (charge > budget_) return {SetResult::too_big};
    const bool expires = options.ttl.count() != 0;
    std::uint64_t expiry = 0;
    if (expires) {
      expiry = clock_.now_ms() + static_cast<std::uint64_t>(options.ttl.count());
      if (expiry > LogItem::kMaxExpiryMs) expiry = LogItem::kMaxExpiryMs;
    }
    std::unique_ptr<char[]> external;  // outside the lock; may throw, nothing changed
    const LogItem::Form largest{expires ? LogItem::kExpires | LogItem::kLongExpiry : 0};
    if (LogItem::size(key.size(), value.size(), largest) > max_inline_) {
      external = std::make_unique_for_overwrite<char[]>(value.size());
      std::memcpy(external.get(), value.data(), value.size());
      value = {external.get(), value.size()};
    }

    typename Lock::WriteGuard lock(mutex_);
    const std::uint64_t now = clock_.now_ms();
    const std::size_t slot = index_.find(key, hash);
    char* old = slot != BucketIndex::npos ? index_.at(slot) : nullptr;
    const bool old_expired = old != nullptr && LogItem::expired_at(old, segment_of(old), now);
    if (options.condition != nullptr) {
      const std::uint64_t current =
          old != nullptr && !old_expired ? LogItem::version(old, segment_of(old)) : 0;
      if (!(*options.condition)(old != nullptr && !old_expired ? &current : nullptr)) {
        return {SetResult::precondition_failed};
      }
    }
    if (old != nullptr && !old_expired && external == nullptr && !LogItem::in_small(old)) {
      // An item of main replaced by one of the same size is rewritten where it is: no dead
      // bytes, no append, its place in main's log and its frequency kept (the common case of
      // fixed-size values: the replacing SET was 0.8x the malloc'ed entries' without this).
      const SegmentHeader& seg = segment_of(old);
      const std::uint64_t version = peek_next_version_locked();
      const LogItem::Form f = LogItem::form_at(seg, version, expires, expiry);
      if (f.flags == LogItem::form_of(old).flags &&
          LogItem::size(key.size(), value.size(), f) == LogItem::bytes(old)) {
        next_version_locked();
        LogItem::write(old, seg, key, value, version, expiry, f);
        return {SetResult::replaced, version};
      }
    }
    arena_.reserve(kSegmentsPerSet);                      // may throw: nothing changed yet
    const std::uint64_t version = next_version_locked();  // a refusal below wastes one
    const auto high = static_cast<std::uint16_t>(version >> 32);
    if (old != nullptr) {  // to main's tail with the old item's frequency, in the old one's slot
      const LogItem::Form f =
          LogItem::form(version, high, expires, expiry, now, external != nullptr, false);
      char* p =
          main_.try_append(LogItem::size(key.size(), value.size(), f), charge, arena_, now, high);
      if (p == nullptr) throw std::bad_alloc();  // nothing changed
      LogItem::write(p, segment_of(p), key, value, version, expiry, f);
      external.release();
      index_.set_address(slot, p, expires);
      if (old_expired) count_expired(1);
      kill_locked(old);
      add_live_locked(charge, expires);
      make_room_locked(p);
      publish_locked();
      return {old_expired ? SetResult::created : SetResult::replaced, version};
    }

    // The warm-up rule holds until the first eviction, and this set's own eviction counts.
    const bool remembered = ghost_.remove(hash);
    const bool evicting = has_evicted_ || small_.charge() + main_.charge() + charge > budget_;
    if (!evicting && !remembered) warm_cap_ = warm_small_cap(live_ + charge);
    const bool to_small =
        !remembered && charge < small_cap_ && (evicting || small_.charge() < warm_cap_);
    SegmentQueue& queue = to_small ? small_ : main_;
    const LogItem::Form f =
        LogItem::form(version, high, expires, expiry, now, external != nullptr, to_small);
    char* p =
        queue.try_append(LogItem::size(key.size(), value.size(), f), charge, arena_, now, high);
    if (p == nullptr) throw std::bad_alloc();  // nothing changed (the ghost forgot the key)
    LogItem::write(p, segment_of(p), key, value, version, expiry, f);
    try {
      index_.insert(p, expires, hash, [this](const char* item) { return hash_of(item); });
    } catch (...) {
      // The item was never indexed: its bytes stay in the log, dead, and the heads move over
      // what they must to keep the logs within the budget. The cache holds what it held, less
      // any evictions that took (the ghost forgot the key; a version was used up).
      LogItem::mark_dead(p);
      make_room_locked(nullptr);
      publish_locked();
      throw;
    }
    external.release();
    add_live_locked(charge, expires);
    items_.store(size() + 1, std::memory_order_relaxed);
    make_room_locked(p);
    publish_locked();
    return {SetResult::created, version};
  }

  // Calls sink(item) under the read lock on a hit. An expired item is a miss (the sweep or the
  // next write of the key frees it: a reader holds only the shared lock).
  bool get(std::string_view key, std::uint64_t hash, ItemSink sink) const {
    typename Lock::ReadGuard lock(mutex_);
    const std::size_t slot = index_.find(key, hash);
    if (slot == BucketIndex::npos) return false;
    const char* p = index_.at(slot);
    const SegmentHeader& seg = segment_of(p);
    Item item{LogItem::value(p), LogItem::version(p, seg), std::nullopt};
    if (index_.expires_at(slot)) {
      const std::uint64_t now = clock_.now_ms();
      const std::uint64_t expiry = LogItem::expiry_ms(p, seg);
      if (expiry <= now) return false;
      item.ttl_left = std::chrono::milliseconds(expiry - now);
    }
    index_.bump(slot);
    sink(item);
    return true;
  }

  DelResult del(std::string_view key, std::uint64_t hash, const Condition* condition) {
    typename Lock::WriteGuard lock(mutex_);
    std::size_t slot = index_.find(key, hash);
    if (slot != BucketIndex::npos && expired_locked(index_.at(slot), clock_.now_ms())) {
      remove_locked(slot);
      count_expired(1);
      slot = BucketIndex::npos;
    }
    if (condition != nullptr) {
      const char* item = slot != BucketIndex::npos ? index_.at(slot) : nullptr;
      const std::uint64_t current = item != nullptr ? LogItem::version(item, segment_of(item)) : 0;
      if (!(*condition)(slot != BucketIndex::npos ? &current : nullptr)) {
        publish_locked();
        return DelResult::precondition_failed;
      }
    }
    if (slot == BucketIndex::npos) {
      publish_locked();
      return DelResult::absent;
    }
    remove_locked(slot);
    publish_locked();
    return DelResult::deleted;
  }

  // One step of the expiry sweep: the next 1/steps_per_sweep of the index's slots, kSweepChunk
  // at a time under the exclusive lock, reading only the items whose slot says they can expire.
  std::size_t reclaim_expired(unsigned steps_per_sweep) {
    return sweep_step<Lock>(
        mutex_, [&] { return expiring_ == 0 ? 0 : index_.capacity() / steps_per_sweep + 1; },
        [this](std::size_t n) {
          const std::size_t freed = sweep_locked(n);
          publish_locked();
          return freed;
        });
  }

  void reset() {
    typename Lock::WriteGuard lock(mutex_);
    destroy_all();
  }

  // space_used(), size(), evictions(), expired(): ShardCounters.
  std::size_t mapped_bytes() const { return mapped_.load(std::memory_order_relaxed); }

 private:
  // Segments a set may need beyond what the logs' heads free as they go: the new item's, and
  // one for each queue's tail while items are copied forward.
  static constexpr std::size_t kSegmentsPerSet = 3;

  // A segment is 1/64 of the budget, rounded down to a power of two, within 4..16 KiB: a shard
  // holds at most one partly consumed head segment per queue and one spare beyond its items,
  // ~0.8 MB in 16 shards (~0.9 B per item at 900k items when evicting; 32 KiB measured twice
  // that). Items over an eighth of a segment (2 KiB) keep their value in its own allocation.
  static std::size_t segment_bytes_for(std::size_t budget) {
    const std::size_t s = std::bit_floor(std::max<std::size_t>(budget / 64, 1));
    return std::clamp<std::size_t>(s, 4096, 16384);
  }

  std::uint64_t hash_of(const char* item) const { return hasher_(LogItem::key(item)); }
  const SegmentHeader& segment_of(const char* item) const {
    return SegmentArena::segment_of(item, segment_mask_);
  }
  bool expired_locked(const char* item, std::uint64_t now) const {
    return LogItem::expired_at(item, segment_of(item), now);
  }

  [[gnu::always_inline]] std::uint64_t peek_next_version_locked() const {
    return next_version_ == LogItem::kMaxVersion ? 1 : next_version_ + 1;
  }
  [[gnu::always_inline]] std::uint64_t next_version_locked() {
    next_version_ = peek_next_version_locked();
    return next_version_;
  }
  [[gnu::always_inline]] void add_live_locked(std::size_t charge, bool expires) {
    live_ += charge;
    if (expires) ++expiring_;
  }
  // Exclusive lock held. What other threads read without the lock, once the set is done (so
  // space_used() never shows a moment above the budget).
  [[gnu::always_inline]] void publish_locked() {
    used_.store(live_, std::memory_order_relaxed);
    mapped_.store(arena_.held_bytes() - small_.tail_slack(arena_.segment_bytes()) -
                      main_.tail_slack(arena_.segment_bytes()) + index_.mapped_bytes(),
                  std::memory_order_relaxed);
  }

  // An external value is owned by its live item (a raw address in the log, as the other
  // evictors' entries are raw addresses in their table): made by std::make_unique_for_overwrite
  // in set(), released into the item, freed here when the item dies.
  static void free_external(const char* item) {
    std::unique_ptr<char[]>(LogItem::external_data(item)).reset();
  }

  // Exclusive lock held. An item leaves the index's view: dead in the log, its external value
  // freed, no longer live. The caller has emptied or repointed its slot.
  void kill_locked(char* item) {
    live_ -= LogItem::charge(item);
    if (LogItem::expires(item)) --expiring_;
    free_external(item);
    LogItem::mark_dead(item);
  }
  void remove_locked(std::size_t slot) {
    char* item = index_.at(slot);
    index_.erase_at(slot);
    kill_locked(item);
    items_.store(size() - 1, std::memory_order_relaxed);
  }

  // Exclusive lock held. Moves the heads until the logs fit the budget. `fresh`: the item this
  // set wrote, which is never its own set's victim (when it reaches a head it is copied on).
  [[gnu::always_inline]] void make_room_locked(char* fresh) {
    while (small_.charge() + main_.charge() > budget_) {
      // From main, unless main's head is this set's own item (bigger than main's share) while
      // small has others: copying it on would only come back to it.
      const bool from_main = (main_.charge() > main_cap_ || small_.empty()) &&
                             !(main_.head() == fresh && !small_.empty());
      fresh = step_locked(from_main ? main_ : small_, fresh);
    }
  }

  // Exclusive lock held, `queue` not empty. Takes its head item: skips it if dead, frees it if
  // expired, copies it to main's tail if it earns that (see the file comment), else evicts it.
  // Returns where `fresh` now is.
  [[gnu::noinline]] char* step_locked(SegmentQueue& queue, char* fresh) {
    char* item = queue.head();
    const std::size_t charge = LogItem::charge(item);
    if (LogItem::dead(item)) {
      queue.pop_head(charge, arena_);
      return fresh;
    }
    const std::uint64_t hash = hash_of(item);
    const std::size_t slot = index_.find_address(hash, item);
    assert(slot != BucketIndex::npos && "a live item in a log is in the index");
    const bool in_small = &queue == &small_;
    const std::uint64_t now = clock_.now_ms();
    if (item != fresh && expired_locked(item, now)) {
      remove_locked(slot);
      count_expired(1);
      queue.pop_head(charge, arena_);
      return fresh;
    }
    const unsigned freq = index_.freq(slot);
    if (item == fresh || (in_small ? freq >= kPromoteAt : freq > 0)) {
      if (char* copy = copy_to_main_locked(item, now); copy != nullptr) {
        index_.set_address(slot, copy, LogItem::expires(item));
        if (item != fresh) index_.set_freq(slot, in_small ? 0 : freq - 1);
        queue.pop_head(charge, arena_);
        return item == fresh ? copy : fresh;
      }
      // No memory for a segment: evict rather than fail halfway.
    }
    if (in_small) ghost_.insert(hash, charge, index_.size());
    remove_locked(slot);
    queue.pop_head(charge, arena_);
    has_evicted_ = true;
    count_eviction();
    return item == fresh ? nullptr : fresh;
  }

  // Exclusive lock held. Appends a copy of `item` to main's tail (re-encoded for its new
  // segment: its version's high bits and its expiry's base are the segment's); nullptr when no
  // segment can be had.
  char* copy_to_main_locked(const char* item, std::uint64_t now) {
    const SegmentHeader& from = segment_of(item);
    const std::uint64_t version = LogItem::version(item, from);
    const bool expires = LogItem::expires(item);
    const std::uint64_t expiry = expires ? LogItem::expiry_ms(item, from) : 0;
    const std::string_view key = LogItem::key(item), value = LogItem::value(item);
    const auto high = static_cast<std::uint16_t>(next_version_ >> 32);  // main's tail's
    const LogItem::Form f =
        LogItem::form(version, high, expires, expiry, now, LogItem::external(item), false);
    char* copy = main_.try_append(LogItem::size(key.size(), value.size(), f),
                                  key.size() + value.size(), arena_, now, high);
    if (copy != nullptr) LogItem::write(copy, segment_of(copy), key, value, version, expiry, f);
    return copy;
  }

  // Exclusive lock held. Looks at n slots from the sweep's cursor and frees the expired items.
  std::size_t sweep_locked(std::size_t n) {
    const std::size_t capacity = index_.capacity();
    std::size_t i = sweep_cursor_ < capacity ? sweep_cursor_ : 0;
    const std::uint64_t now = clock_.now_ms();
    std::size_t freed = 0;
    for (; n > 0 && expiring_ > 0; --n) {
      if (index_.expires_at(i) && expired_locked(index_.at(i), now)) {
        remove_locked(i);
        ++freed;
      }
      i = i + 1 == capacity ? 0 : i + 1;
    }
    sweep_cursor_ = i;
    count_expired(freed);
    return freed;
  }

  // Small's room before the first eviction: its share of the budget, as libCacheSim's, but only
  // while that is at most kWarmFloor bytes or that share times the square of how full the cache
  // is. In a cache far larger than its data (2 GB holding 111 MB), small would otherwise hold
  // nearly every item (issue 30). Caches whose small share is at most kWarmFloor (the semantic
  // tests, the libCacheSim cross-check and hit-ratio traces) see libCacheSim's rule exactly.
  static constexpr std::size_t kWarmFloor = 64 * 1024;
  std::size_t warm_small_cap(std::size_t used_after) const {
    if (small_cap_ <= kWarmFloor) return small_cap_;
    const double full = static_cast<double>(used_after) / static_cast<double>(budget_);
    const auto share = static_cast<std::size_t>(static_cast<double>(small_cap_) * full * full);
    return share < kWarmFloor ? kWarmFloor : (share < small_cap_ ? share : small_cap_);
  }

  // Exclusive lock held (or destruction).
  void destroy_all() {
    index_.clear([](const char* item) { free_external(item); });
    small_.clear(arena_);
    main_.clear(arena_);
    arena_.release_all();
    ghost_.clear();
    live_ = 0;
    expiring_ = 0;
    sweep_cursor_ = 0;
    has_evicted_ = false;
    items_.store(0, std::memory_order_relaxed);
    publish_locked();
  }

  mutable typename Lock::Mutex mutex_;
  SegmentArena arena_;
  const std::uintptr_t segment_mask_;  // an item's address & this: its segment's header
  const std::size_t max_inline_;       // bytes of the largest item kept in a segment
  BucketIndex index_;
  SegmentQueue small_, main_;
  const std::size_t budget_;
  const std::size_t small_cap_;
  const std::size_t main_cap_;
  GhostFifo ghost_;
  const KeyHasher& hasher_;
  const CacheClock& clock_;
  std::atomic<std::size_t> mapped_{0};  // segments and a large index (Stats::mapped_bytes)
  // Exclusive lock held for these:
  std::size_t live_ = 0;            // key+value bytes of the items in the index
  std::uint64_t next_version_ = 0;  // the last version given (versions start at 1)
  std::size_t expiring_ = 0;        // items with an expiry
  std::size_t sweep_cursor_ = 0;
  std::size_t warm_cap_ = 0;
  bool has_evicted_ = false;
};

}  // namespace cache::detail
