// What one load-generating thread measures, and the recording of it: the headline histograms
// (open loop: corrected from the planned send time, the uncorrected one from the actual send, and
// the send lag), the per-second series, the counts by operation and by error, and --targets' per
// node figures. The Recorder is the only writer of a thread's WorkerStats during the point;
// threaded_performance() (perf.cc) merges the threads' stats after they joined. Split from the
// connection loop (worker.hh) so that what is recorded, and when a sample lands in which second,
// reads in one place.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "client/histogram.hh"

namespace client {

using Clock = std::chrono::steady_clock;

// Latencies of one second of the measured window, as sparse histogram buckets: the completed
// requests, and, exactly as in the headline histogram, the timed-out requests (at the time they
// waited, in the second they were given up) and the open loop's unsent planned sends (at their
// lower bound, in the window's last second).
struct SecondSample {
  std::uint32_t second = 0;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> buckets;
  std::uint64_t completed = 0, timed_out = 0, unsent = 0;
};

// --targets: what one worker saw of one node (the requests placed on it).
struct NodeStats {
  static constexpr std::size_t kStatusSlots = 1000;
  Histogram latency;  // the same samples as WorkerStats::latency, of this node's requests
  std::uint64_t completed = 0;
  std::uint64_t mismatches = 0;
  std::array<std::uint64_t, kStatusSlots> unexpected_status{};
  std::array<std::uint64_t, 6> io_errors{};  // indexed by IoResult
  std::uint64_t errors() const;
};

struct WorkerStats {
  static constexpr std::size_t kStatusSlots = NodeStats::kStatusSlots;
  Histogram latency;              // closed loop: from send; open loop: from planned send
  Histogram latency_uncorrected;  // open loop only: from the actual send
  Histogram send_lag;             // open loop only: actual send - planned send
  std::uint64_t completed = 0;    // responses received in the measured window
  // Open loop: planned sends the window ended before (every connection was busy). Each is in
  // `latency` at its lower bound, window end - planned time, so an end-of-run stall is not hidden.
  std::uint64_t unsent = 0;
  std::uint64_t gets = 0, get_hits = 0, get_misses = 0, sets = 0, deletes = 0;
  // GET hits whose bytes differ from the derived value; board reads whose answer fails its check
  // (board_workload.hh), and, after the preload, board reads answered 404.
  std::uint64_t mismatches = 0;
  std::uint64_t verified = 0;  // answers checked in full (--verify)
  std::array<std::uint64_t, kStatusSlots> unexpected_status{};
  std::array<std::uint64_t, 6> io_errors{};  // indexed by IoResult
  Clock::time_point last_completion{};
  std::vector<SecondSample> series;  // in second order (sorted by Recorder::finish)
  bool fatal = false;
  std::string fatal_message;
  bool interrupted = false;  // stopped by SIGINT/SIGTERM (interrupt.hh); the point is unfinished
  // --targets: one per node (empty otherwise). Open-loop unsent planned sends have no node: they
  // are in `latency` and `unsent` only.
  std::vector<NodeStats> nodes;

  std::uint64_t errors() const;
};

class Recorder {
 public:
  enum class Sample { kCompleted, kTimedOut, kUnsent };

  explicit Recorder(bool open_loop) : open_loop_(open_loop) {}
  WorkerStats& stats() { return stats_; }
  const WorkerStats& stats() const { return stats_; }

  // The measured window starts at t0 (the start gate's): the series' seconds count from it.
  void start(Clock::time_point t0) {
    t0_ = t0;
    stats_.last_completion = t0;
  }
  // A completed request planned at `planned`, sent at `sent`, answered at `done`; returns the
  // latency recorded in the headline histogram (open loop: from the planned time).
  std::uint64_t completed(Clock::time_point planned, Clock::time_point sent,
                          Clock::time_point done);
  // A measured latency in the headline histogram and in the series' second of `at`.
  void latency(std::uint64_t ns, Clock::time_point at, Sample kind);
  // The window ended: the last second is stored and the series put in second order.
  void finish();

 private:
  void flush_second();

  bool open_loop_;
  WorkerStats stats_;
  Histogram second_hist_;
  std::uint32_t current_second_ = 0;
  std::array<std::uint64_t, 3> second_counts_{};  // by Sample, for current_second_
  Clock::time_point t0_{};
};

}  // namespace client
