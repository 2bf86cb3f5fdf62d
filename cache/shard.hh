// shard.hh — one independently locked part of the cache: a slot table, an eviction policy, a
// byte budget, and the lock that guards them.
//
// Invariant: used_ <= budget_ at every instant another thread can observe, because a set evicts
// (under the exclusive lock) before it inserts. The shard also numbers its writes (each entry's
// version) and sweeps its expired entries (reclaim_expired). The new entry is allocated and filled
// before the lock is taken, so the critical section is only lookup, eviction and linking.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "cache/cache.hh"
#include "cache/clock.hh"
#include "cache/entry.hh"
#include "cache/expiry_sweep.hh"
#include "cache/key_hasher.hh"
#include "cache/shard_counters.hh"
#include "cache/slot_table.hh"

namespace cache::detail {

// Cache-line aligned so two shards' locks and counters never share a line (false sharing).
template <class Lock, class Policy>
class alignas(64) Shard : public ShardCounters {
 public:
  using E = Entry<typename Policy::Hook>;
  using Table = SlotTable<E>;

  Shard(std::size_t budget, double max_load_factor, const KeyHasher& hasher,
        const CacheClock& clock, const Options& /*the S3-FIFO shard's; none here*/)
      : table_(max_load_factor), budget_(budget), hasher_(hasher), clock_(clock) {}
  ~Shard() { destroy_all(); }
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Key validity and hashing are the caller's (ShardedCache's) job. Forced inline into its one
  // caller (ShardedCache::set, itself forced into cache.cc's ErasedCache::set): left to itself
  // GCC called the set of a policy with bigger hooks (S3-FIFO's, until issue 47 gave it a shard
  // of its own), a call and its register saves per set (callgrind, issue 16).
  [[gnu::always_inline]] Written set(std::string_view key, std::string_view value,
                                     std::uint64_t hash, const WriteOptions& options) {
    if (value.size() > std::numeric_limits<std::uint32_t>::max()) return {SetResult::too_big};
    const std::size_t charge = key.size() + value.size();
    if (charge > budget_) return {SetResult::too_big};
    const bool expires = options.ttl.count() != 0;
    // outside the lock; may throw, nothing changed
    EntryPtr<E> fresh = make_entry<E>(key, value, expires);
    if (expires) {
      const auto expiry = clock_.now_ms() + static_cast<std::uint64_t>(options.ttl.count());
      fresh->set_expiry_ms(expiry < kMaxExpiryMs ? expiry : kMaxExpiryMs);
    }

    typename Lock::WriteGuard lock(mutex_);
    bool replaced = false;
    const std::size_t slot = table_.find(key, hash);
    E* old = slot != Table::npos ? table_.at(slot) : nullptr;
    const bool old_expired = old != nullptr && old->expires() && old->expired_at(clock_.now_ms());
    if (options.condition != nullptr) {
      const std::uint64_t current = old != nullptr && !old_expired ? old->version() : 0;
      if (!(*options.condition)(old != nullptr && !old_expired ? &current : nullptr)) {
        return {SetResult::precondition_failed};
      }
    }
    const std::uint64_t version = next_version_locked(*fresh);  // a refusal below wastes one
    if (old != nullptr) {
      const std::size_t used_after = used() - old->charge() + charge;
      if (!Policy::kEvicts && used_after > budget_) return {SetResult::no_space};
      const SetResult result = old_expired ? SetResult::created : SetResult::replaced;
      if (old_expired) count_expired(1);
      if (used_after <= budget_) {  // nothing to evict: the new entry takes the old one's slot
        replace_at(slot, fresh.release(), hash, used_after);
        return {result, version};
      }
      remove_at(slot);
      replaced = !old_expired;
    } else {
      if (!Policy::kEvicts && used() + charge > budget_) return {SetResult::no_space};
      table_.reserve_one_more(hasher_);  // may throw: nothing changed yet
    }
    while (used() + charge > budget_) evict_one();  // used() > 0 here, so there is a victim

    E* e = fresh.release();
    table_.insert(e, hash);
    policy_.on_insert(e);
    add_usage(e, charge);
    return {replaced ? SetResult::replaced : SetResult::created, version};
  }

  // Calls sink(item) under the read lock on a hit. An expired item is a miss (the sweep or the
  // next write of the key frees it: a reader holds only the shared lock).
  bool get(std::string_view key, std::uint64_t hash, ItemSink sink) const {
    typename Lock::ReadGuard lock(mutex_);
    const std::size_t slot = table_.find(key, hash);
    if (slot == Table::npos) return false;
    E* e = table_.at(slot);
    Item item{e->value(), e->version(), std::nullopt};
    if (e->expires()) {
      const std::uint64_t now = clock_.now_ms();
      const std::uint64_t expiry = e->expiry_ms();
      if (expiry <= now) return false;
      item.ttl_left = std::chrono::milliseconds(expiry - now);
    }
    policy_.on_hit(table_, slot, e);
    sink(item);
    return true;
  }

  // Removes the key if `condition` (when given) allows it.
  DelResult del(std::string_view key, std::uint64_t hash, const Condition* condition) {
    typename Lock::WriteGuard lock(mutex_);
    const std::size_t slot = table_.find(key, hash);
    E* e = slot != Table::npos ? table_.at(slot) : nullptr;
    if (e != nullptr && e->expires() && e->expired_at(clock_.now_ms())) {
      remove_at(slot);
      count_expired(1);
      e = nullptr;
    }
    if (condition != nullptr) {
      const std::uint64_t current = e != nullptr ? e->version() : 0;
      if (!(*condition)(e != nullptr ? &current : nullptr)) return DelResult::precondition_failed;
    }
    if (e == nullptr) return DelResult::absent;
    remove_at(slot);
    return DelResult::deleted;
  }

  // One step of the expiry sweep (Cache::reclaim_expired): the next 1/steps_per_sweep of the
  // slots, kSweepChunk at a time under the exclusive lock. Reads only the entries whose slot
  // says they can expire; nothing at all when the shard holds none.
  std::size_t reclaim_expired(unsigned steps_per_sweep) {
    return sweep_step<Lock>(
        mutex_, [&] { return expiring_ == 0 ? 0 : table_.capacity() / steps_per_sweep + 1; },
        [this](std::size_t n) { return sweep_locked(n); });
  }

  void reset() {
    typename Lock::WriteGuard lock(mutex_);
    destroy_all();
  }

  // space_used(), size(), evictions(), expired(): ShardCounters.

 private:
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }

  // Exclusive lock held. The next version, stamped on the entry about to be written.
  [[gnu::always_inline]] std::uint64_t next_version_locked(E& e) {
    next_version_ = next_version_ == kMaxVersion ? 1 : next_version_ + 1;
    e.set_version(next_version_);
    return next_version_;
  }

  // Exclusive lock held. Looks at n slots from the sweep's cursor and frees the expired entries.
  // A removal shifts later entries of the run back into the slot, so the slot is looked at
  // again; entries only ever move toward their home, never from unswept slots into swept ones.
  std::size_t sweep_locked(std::size_t n) {
    const std::size_t capacity = table_.capacity();
    std::size_t i = sweep_cursor_ < capacity ? sweep_cursor_ : 0;
    const std::uint64_t now = clock_.now_ms();
    std::size_t freed = 0;
    while (n > 0 && expiring_ > 0) {  // a removal does not move on, so it costs no step
      if (table_.expires_at(i) && table_.at(i)->expired_at(now)) {
        remove_at(i);
        ++freed;
        continue;
      }
      i = i + 1 == capacity ? 0 : i + 1;
      --n;
    }
    sweep_cursor_ = i;
    count_expired(freed);
    return freed;
  }

  [[gnu::always_inline]] void add_usage(const E* e, std::size_t charge) {
    used_.store(used() + charge, std::memory_order_relaxed);
    items_.store(size() + 1, std::memory_order_relaxed);
    if (e->expires()) ++expiring_;
  }
  void sub_usage(const E* e) {
    used_.store(used() - e->charge(), std::memory_order_relaxed);
    items_.store(size() - 1, std::memory_order_relaxed);
    if (e->expires()) --expiring_;
  }

  // Exclusive lock held. Puts `e` (same key) in the slot of the entry it replaces and frees that
  // one: no backward shift and no re-insertion, which at the tables' 60-75% load cost a replacing
  // set ~100 ns of re-hashing the run behind the slot (issue 30). Only when nothing must be
  // evicted, so the new entry can never be its own set's victim.
  [[gnu::always_inline]] void replace_at(std::size_t slot, E* e, std::uint64_t hash,
                                         std::size_t used_after) {
    E* old = table_.at(slot);
    policy_.on_remove(old);
    table_.replace_at(slot, e, hash);
    policy_.on_insert(e);
    used_.store(used_after, std::memory_order_relaxed);
    expiring_ = expiring_ - (old->expires() ? 1 : 0) + (e->expires() ? 1 : 0);
    destroy_entry(old);
  }

  // Exclusive lock held. Unlinks and frees the entry in `slot`.
  void remove_at(std::size_t slot) {
    E* e = table_.at(slot);
    policy_.on_remove(e);
    table_.erase_at(slot, hasher_);
    sub_usage(e);
    destroy_entry(e);
  }

  // Exclusive lock held, table not empty.
  void evict_one() {
    remove_at(policy_.pick_victim(table_, hasher_));
    count_eviction();
  }

  // Exclusive lock held (or destruction).
  void destroy_all() {
    table_.for_each([](E* e) { destroy_entry(e); });
    table_.clear();
    policy_.clear();
    used_.store(0, std::memory_order_relaxed);
    items_.store(0, std::memory_order_relaxed);
    expiring_ = 0;
    sweep_cursor_ = 0;
  }

  mutable typename Lock::Mutex mutex_;
  Table table_;
  mutable Policy policy_;  // mutable: a hit may update recency (atomically or under its own lock)
  const std::size_t budget_;
  const KeyHasher& hasher_;
  const CacheClock& clock_;
  // Exclusive lock held for these:
  std::uint64_t next_version_ = 0;  // the last version given (versions start at 1)
  std::size_t expiring_ = 0;        // entries with an expiry
  std::size_t sweep_cursor_ = 0;    // where the expiry sweep goes on
};

}  // namespace cache::detail
