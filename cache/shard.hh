// shard.hh — one independently locked part of the cache: a slot table, an eviction policy, a
// byte budget, and the lock that guards them.
//
// Invariant: used_ <= budget_ at every instant another thread can observe, because a set evicts
// (under the exclusive lock) before it inserts. The new entry is allocated and filled before the
// lock is taken, so the critical section is only lookup, eviction and linking.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "cache/cache.hh"
#include "cache/entry.hh"
#include "cache/key_hasher.hh"
#include "cache/slot_table.hh"

namespace cache::detail {

// Cache-line aligned so two shards' locks and counters never share a line (false sharing).
template <class Lock, class Policy>
class alignas(64) Shard {
 public:
  using E = Entry<typename Policy::Hook>;
  using Table = SlotTable<E>;

  Shard(std::size_t budget, double max_load_factor, const KeyHasher& hasher, const Options& o)
      : table_(max_load_factor),
        policy_(make_policy(budget, o)),
        budget_(budget),
        hasher_(hasher) {}
  ~Shard() { destroy_all(); }
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Key validity and hashing are the caller's (ShardedCache's) job. Forced inline into its one
  // caller (ShardedCache::set, itself forced into cache.cc's ErasedCache::set): left to itself
  // GCC inlined CLOCK's set but called S3-FIFO's, whose hooks make it bigger, which cost S3-FIFO a
  // call and its register saves per set (callgrind, issue 16).
  [[gnu::always_inline]] SetResult set(std::string_view key, std::string_view value,
                                       std::uint64_t hash) {
    if (value.size() > std::numeric_limits<std::uint32_t>::max()) return SetResult::too_big;
    const std::size_t charge = key.size() + value.size();
    if (charge > budget_) return SetResult::too_big;
    EntryPtr<E> fresh = make_entry<E>(key, value);  // outside the lock; may throw, nothing changed

    typename Lock::WriteGuard lock(mutex_);
    bool replaced = false;
    if (const std::size_t slot = table_.find(key, hash); slot != Table::npos) {
      E* old = table_.at(slot);
      const std::size_t used_after = used() - old->charge() + charge;
      if (!Policy::kEvicts && used_after > budget_) return SetResult::no_space;
      prepare_insert(hash, old, 0);  // used_after is for new keys only
      if (used_after <= budget_) {   // nothing to evict: the new entry takes the old one's slot
        replace_at(slot, fresh.release(), hash, used_after);
        return SetResult::replaced;
      }
      remove_at(slot);
      replaced = true;
    } else {
      if (!Policy::kEvicts && used() + charge > budget_) return SetResult::no_space;
      table_.reserve_one_more(hasher_);  // may throw: nothing changed yet
      prepare_insert(hash, nullptr, used() + charge);
    }
    while (used() + charge > budget_) evict_one();  // used() > 0 here, so there is a victim

    E* e = fresh.release();
    table_.insert(e, hash);
    policy_.on_insert(e);
    add_usage(charge);
    return replaced ? SetResult::replaced : SetResult::created;
  }

  // Calls sink(value) under the read lock on a hit.
  bool get(std::string_view key, std::uint64_t hash, ValueSink sink) const {
    typename Lock::ReadGuard lock(mutex_);
    const std::size_t slot = table_.find(key, hash);
    if (slot == Table::npos) return false;
    E* e = table_.at(slot);
    policy_.on_hit(table_, slot, e);
    sink(e->value());
    return true;
  }

  bool del(std::string_view key, std::uint64_t hash) {
    typename Lock::WriteGuard lock(mutex_);
    const std::size_t slot = table_.find(key, hash);
    if (slot == Table::npos) return false;
    remove_at(slot);
    return true;
  }

  void reset() {
    typename Lock::WriteGuard lock(mutex_);
    destroy_all();
  }

  // Lock-free reads of counters maintained under the exclusive lock.
  std::size_t space_used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t size() const { return items_.load(std::memory_order_relaxed); }
  std::uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

 private:
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }

  // Policies that split the budget (S3-FIFO) are constructed from it and the options.
  static Policy make_policy(std::size_t budget, const Options& o) {
    if constexpr (std::is_constructible_v<Policy, std::size_t, const Options&>) {
      return Policy(budget, o);
    } else {
      return Policy();
    }
  }

  // Exclusive lock held. Policies that place a new entry by its history (S3-FIFO's ghost) or
  // keep a replaced entry's state learn about the insertion before anything is evicted.
  // Forced inline: a call here was ~10 instructions per S3-FIFO set (callgrind).
  [[gnu::always_inline]] void prepare_insert(std::uint64_t hash, const E* old,
                                             std::size_t used_after) {
    if constexpr (requires(Policy & p) { p.prepare_insert(table_, hash, old, used_after); }) {
      policy_.prepare_insert(table_, hash, old, used_after);
    }
  }

  void add_usage(std::size_t charge) {
    used_.store(used() + charge, std::memory_order_relaxed);
    items_.store(size() + 1, std::memory_order_relaxed);
  }
  void sub_usage(std::size_t charge) {
    used_.store(used() - charge, std::memory_order_relaxed);
    items_.store(size() - 1, std::memory_order_relaxed);
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
    destroy_entry(old);
  }

  // Exclusive lock held. Unlinks and frees the entry in `slot`.
  void remove_at(std::size_t slot) {
    E* e = table_.at(slot);
    policy_.on_remove(e);
    table_.erase_at(slot, hasher_);
    sub_usage(e->charge());
    destroy_entry(e);
  }

  // Exclusive lock held, table not empty.
  void evict_one() {
    if constexpr (requires { policy_.pick_victim(table_, hasher_, used()); }) {
      remove_at(policy_.pick_victim(table_, hasher_, used()));
    } else {
      remove_at(policy_.pick_victim(table_, hasher_));
    }
    evictions_.store(evictions() + 1, std::memory_order_relaxed);
  }

  // Exclusive lock held (or destruction).
  void destroy_all() {
    table_.for_each([](E* e) { destroy_entry(e); });
    table_.clear();
    policy_.clear();
    used_.store(0, std::memory_order_relaxed);
    items_.store(0, std::memory_order_relaxed);
  }

  mutable typename Lock::Mutex mutex_;
  Table table_;
  mutable Policy policy_;  // mutable: a hit may update recency (atomically or under its own lock)
  const std::size_t budget_;
  const KeyHasher& hasher_;
  std::atomic<std::size_t> used_{0};   // key+value bytes; written under the exclusive lock
  std::atomic<std::size_t> items_{0};  // entries; written under the exclusive lock
  std::atomic<std::uint64_t> evictions_{0};
};

}  // namespace cache::detail
