// sharded_cache.hh — the cache as a template over its lock and eviction policies.
//
// ShardedCache<Lock, Policy> is the whole cache with no virtual calls: it validates keys, hashes
// once, and forwards to the shard the hash picks. cache::Cache wraps one behind a type-erased
// pointer chosen at run time from Options; the server goes through cache::Cache (its variants
// pick the lock scheme through Options, not a template). Code that fixes its policies at compile
// time can use ShardedCache directly (tests/cache/cache_semantics_test.cc does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "cache/cache.hh"
#include "cache/eviction_policies.hh"
#include "cache/key_hasher.hh"
#include "cache/lock_policies.hh"
#include "cache/s3fifo.hh"
#include "cache/shard.hh"

namespace cache::detail {

inline constexpr unsigned kMaxShards = 1024;

inline bool valid_key(std::string_view key) {
  return !key.empty() && key.size() <= kMaxKeyBytes;
}

// Throws std::invalid_argument with a message naming the bad option.
inline void validate(const Options& o) {
  if (o.maxmem == 0) throw std::invalid_argument("cache: maxmem must be > 0");
  if (!(o.max_load_factor > 0.0 && o.max_load_factor <= 0.95)) {
    throw std::invalid_argument("cache: max_load_factor must be in (0, 0.95]");
  }
  if (o.shards == 0 || o.shards > kMaxShards) {
    throw std::invalid_argument("cache: shards must be in 1..1024");
  }
  if (o.shards > o.maxmem) throw std::invalid_argument("cache: more shards than bytes of maxmem");
  if (o.s3fifo_small_percent < 1 || o.s3fifo_small_percent > 50) {
    throw std::invalid_argument("cache: s3fifo_small_percent must be in 1..50");
  }
  if (o.s3fifo_ghost_percent < 1 || o.s3fifo_ghost_percent > 100) {
    throw std::invalid_argument("cache: s3fifo_ghost_percent must be in 1..100");
  }
}

// The shard a policy runs in: Shard<Lock, Policy> (malloc'ed entries, slot_table.hh), or the
// policy's own (S3-FIFO's segment logs, s3fifo.hh).
template <class Lock, class Policy>
struct ShardFor {
  using type = detail::Shard<Lock, Policy>;
};
template <class Lock, class Policy>
  requires requires { typename Policy::template ShardType<Lock>; }
struct ShardFor<Lock, Policy> {
  using type = typename Policy::template ShardType<Lock>;
};

template <class Lock, class Policy>
class ShardedCache {
 public:
  using Shard = typename ShardFor<Lock, Policy>::type;

  explicit ShardedCache(const Options& options)
      : hasher_(options.hasher), clock_(options.clock), maxmem_(options.maxmem) {
    validate(options);
    shards_.reserve(options.shards);
    // Split maxmem exactly: the first (maxmem % shards) shards get one byte more.
    const std::size_t base = options.maxmem / options.shards;
    const std::size_t extra = options.maxmem % options.shards;
    for (unsigned i = 0; i < options.shards; ++i) {
      shards_.push_back(std::make_unique<Shard>(base + (i < extra ? 1 : 0), options.max_load_factor,
                                                hasher_, clock_, options));
    }
  }
  ShardedCache(const ShardedCache&) = delete;
  ShardedCache& operator=(const ShardedCache&) = delete;

  // Forced inline (with Shard::set) so every policy's set compiles to one function, as CLOCK's did
  // unforced; S3-FIFO's was a call (issue 16).
  [[gnu::always_inline]] SetResult set(std::string_view key, std::string_view value) {
    return set(key, value, WriteOptions{}).result;
  }
  [[gnu::always_inline]] Written set(std::string_view key, std::string_view value,
                                     const WriteOptions& options) {
    if (!valid_key(key)) return {SetResult::bad_key};
    if (options.ttl.count() < 0 || options.ttl > kMaxTtl) return {SetResult::bad_ttl};
    const std::uint64_t h = hasher_(key);
    return shard_for(h).set(key, value, h, options);
  }

  bool get_item(std::string_view key, ItemSink sink) const {
    if (!valid_key(key)) return false;
    const std::uint64_t h = hasher_(key);
    return shard_for(h).get(key, h, sink);
  }

  bool get(std::string_view key, ValueSink sink) const {
    return get_item(key, [&sink](const Item& item) { sink(item.value); });
  }

  bool del(std::string_view key) { return del(key, nullptr) == DelResult::deleted; }
  DelResult del(std::string_view key, const Condition& condition) { return del(key, &condition); }
  DelResult del(std::string_view key, const Condition* condition) {
    if (!valid_key(key)) {
      return condition != nullptr && !(*condition)(nullptr) ? DelResult::precondition_failed
                                                            : DelResult::absent;
    }
    const std::uint64_t h = hasher_(key);
    return shard_for(h).del(key, h, condition);
  }

  std::size_t reclaim_expired(unsigned steps_per_sweep) {
    if (steps_per_sweep == 0) steps_per_sweep = 1;
    std::size_t freed = 0;
    for (auto& s : shards_) freed += s->reclaim_expired(steps_per_sweep);
    return freed;
  }

  void reset() {
    for (auto& s : shards_) s->reset();
  }

  std::size_t space_used() const {
    std::size_t total = 0;
    for (const auto& s : shards_) total += s->space_used();
    return total;
  }
  std::size_t size() const {
    std::size_t total = 0;
    for (const auto& s : shards_) total += s->size();
    return total;
  }
  Stats stats() const {
    Stats st;
    st.maxmem = maxmem_;
    for (const auto& s : shards_) {
      st.items += s->size();
      st.space_used += s->space_used();
      st.evictions += s->evictions();
      st.expired += s->expired();
      if constexpr (requires { s->mapped_bytes(); }) st.mapped_bytes += s->mapped_bytes();
    }
    return st;
  }
  std::size_t maxmem() const { return maxmem_; }
  unsigned shards() const { return static_cast<unsigned>(shards_.size()); }
  static constexpr LockScheme lock_scheme() { return Lock::kScheme; }

 private:
  Shard& shard_for(std::uint64_t hash) const {
    return *shards_[((hash >> 32) & 0xffff) % shards_.size()];
  }

  KeyHasher hasher_;  // shards hold a reference to it: declared first, never moved
  CacheClock clock_;  // the same
  std::size_t maxmem_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace cache::detail
