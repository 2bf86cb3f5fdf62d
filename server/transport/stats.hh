// stats.hh — request counters, one cache-line-aligned block per worker, summed for /stats.
//
// A connection bumps the counters of the worker it was assigned to at accept time, so in the
// per-thread I/O model each block has exactly one writer and its line never bounces between
// cores. Counters are atomics (one uncontended lock xadd each): /stats reads them from another
// thread, and totals only need to be eventually exact. Evictions are counted by the cache
// itself (Cache::stats()). Each block also holds its worker's request-duration histograms
// (request_timing.hh, rendered by /metrics). Connections refused at accept time are not any
// worker's: they are one registry-wide counter.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "server/transport/request_timing.hh"

namespace server {

// Room for the RESP front's per-command counters (server/resp/commands.hh: one slot per row of
// its command table, which static_asserts that it fits).
inline constexpr std::size_t kRespCommandSlots = 48;

struct alignas(64) WorkerStats {
  using counter = std::atomic<std::uint64_t>;
  counter requests{0};
  counter hits{0};
  counter misses{0};
  counter sets{0};
  counter deletes{0};
  counter reads{0};   // socket reads that returned bytes
  counter writes{0};  // response writes started (one per batch of responses)
  counter connections_opened{0};
  counter connections_closed{0};
  counter busy_started{0};   // a connection began receiving or answering a request
  counter busy_finished{0};  // ... and went back to idle (or closed)
  // The RESP front (--resp-port): its connections (also counted in connections_opened/closed,
  // which count both fronts) and its commands, one counter per command of its table.
  counter resp_connections_opened{0};
  counter resp_connections_closed{0};
  counter resp_unknown_commands{0};
  std::array<counter, kRespCommandSlots> resp_commands{};
  RequestTimings timings;  // per route class (request_timing.hh)

  // Release, so that a reader that sees a "closed"/"finished" also sees the matching
  // "opened"/"started" (which was bumped earlier, possibly on another worker's block).
  static void bump(counter& c) { c.fetch_add(1, std::memory_order_release); }
};

struct StatsTotals {
  std::uint64_t requests = 0, hits = 0, misses = 0, sets = 0, deletes = 0, reads = 0, writes = 0;
  std::uint64_t connections_opened = 0, connections_closed = 0;
  std::uint64_t busy_started = 0, busy_finished = 0;
  std::uint64_t rejected_connections = 0;
  std::uint64_t resp_connections_opened = 0, resp_connections_closed = 0;
  std::uint64_t resp_unknown_commands = 0;
  std::array<std::uint64_t, kRespCommandSlots> resp_commands{};
  std::uint64_t open_connections() const { return connections_opened - connections_closed; }
  std::uint64_t busy_connections() const { return busy_started - busy_finished; }
  std::uint64_t open_resp_connections() const {
    return resp_connections_opened - resp_connections_closed;
  }
};

class StatsRegistry {
 public:
  explicit StatsRegistry(std::size_t workers)
      : count_(workers), workers_(std::make_unique<WorkerStats[]>(workers)) {}
  std::size_t size() const { return count_; }
  WorkerStats& worker(std::size_t i) { return workers_[i % count_]; }
  StatsTotals sum() const;
  TimingTotals sum_timings() const;

  // A connection refused past --max-connections (called by the listener, any thread).
  void count_rejected_connection() {
    rejected_connections_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  std::size_t count_;
  std::atomic<std::uint64_t> rejected_connections_{0};
  std::unique_ptr<WorkerStats[]> workers_;
};

}  // namespace server
