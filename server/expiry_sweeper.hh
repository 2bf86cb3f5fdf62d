// expiry_sweeper.hh — the thread that frees expired cache items nobody reads (docs/api.md,
// "Expiry"): every kTick it runs one step of the cache's sweep (Cache::reclaim_expired), so
// each slot is looked at once per kTick * kStepsPerSweep (1 s) and an expired item is gone
// within about a second of expiring. Each step is bounded (a tenth of each shard's slots, in
// chunks of 4096 under the shard's lock), and a shard holding no item with a TTL costs one
// lock and one test. Redis runs its active expiry cycle from its timer in the same spirit.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include "cache/cache.hh"

namespace server {

class ExpirySweeper {
 public:
  static constexpr std::chrono::milliseconds kTick{100};
  static constexpr unsigned kStepsPerSweep = 10;

  explicit ExpirySweeper(cache::Cache& cache)
      : thread_([this, &cache](std::stop_token stop) { run(cache, stop); }) {}
  ~ExpirySweeper() { stop(); }
  ExpirySweeper(const ExpirySweeper&) = delete;
  ExpirySweeper& operator=(const ExpirySweeper&) = delete;

  // Idempotent: asks the thread to end and joins it.
  void stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    thread_.join();
  }

 private:
  void run(cache::Cache& cache, const std::stop_token& stop) {
    std::unique_lock lock(mu_);
    while (true) {
      wake_.wait_for(lock, stop, kTick, [] { return false; });  // a tick, or stop
      if (stop.stop_requested()) return;
      lock.unlock();
      cache.reclaim_expired(kStepsPerSweep);
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: started once the members above exist
};

}  // namespace server
