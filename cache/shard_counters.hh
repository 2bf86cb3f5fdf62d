// shard_counters.hh — the counters every shard kind (shard.hh, s3fifo.hh) keeps for Stats: written
// under the shard's exclusive lock, read without it (relaxed atomics, so a snapshot is per
// counter, as cache.hh's Stats says).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cache::detail {

class ShardCounters {
 public:
  std::size_t space_used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t size() const { return items_.load(std::memory_order_relaxed); }
  std::uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  std::uint64_t expired() const { return expired_.load(std::memory_order_relaxed); }

 protected:
  // Exclusive lock held, for all of these.
  [[gnu::always_inline]] void count_expired(std::uint64_t n) {
    expired_.store(expired() + n, std::memory_order_relaxed);
  }
  void count_eviction() { evictions_.store(evictions() + 1, std::memory_order_relaxed); }

  std::atomic<std::size_t> used_{0};   // key+value bytes of the entries held
  std::atomic<std::size_t> items_{0};  // entries held
  std::atomic<std::uint64_t> evictions_{0};
  std::atomic<std::uint64_t> expired_{0};
};

}  // namespace cache::detail
