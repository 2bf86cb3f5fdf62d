// The numbers a run produces. threaded_performance() and the sweep fill these structs; the
// table/JSON/CSV writers only read them (they compute nothing).
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/histogram.hh"

namespace client {

struct LatencySummary {
  double mean_us = 0, min_us = 0, p50_us = 0, p90_us = 0, p95_us = 0, p99_us = 0, p999_us = 0,
         max_us = 0;
};

struct SeriesPoint {
  std::uint32_t second = 0;    // since the start of the measured window
  std::uint64_t requests = 0;  // completed in this second
  double throughput_rps = 0;   // requests / the second's length (the last may be shorter)
  // Over the same samples as the headline percentiles: completed, timed-out and (open loop)
  // unsent requests of this second.
  double p99_us = 0;
  std::uint64_t timed_out = 0;  // requests given up in this second (recorded at the time waited)
  std::uint64_t unsent = 0;     // open loop: planned sends never issued (the window's last second)
};

// One node of a --targets run: the requests the client placed on it (sent to it directly).
struct NodeResult {
  std::string target;          // HOST:PORT as given to --targets
  std::uint64_t requests = 0;  // responses completed in the measured window
  std::uint64_t errors = 0;
  double throughput_rps = 0;    // requests / the point's duration_s
  LatencySummary latency;       // as the point's (open loop: corrected)
  HistogramSnapshot histogram;  // of `latency`, mergeable
  std::map<std::string, std::uint64_t> errors_by_code;
  double server_cpu_pct = 0;  // NaN when not sampled (--server-pid's entry for this node)
};

struct PointResult {
  unsigned threads = 0;
  unsigned connections = 0;    // total across threads
  unsigned pipeline = 1;       // requests outstanding per connection (--pipeline)
  std::uint64_t requests = 0;  // responses completed in the measured window
  std::uint64_t errors = 0;    // unexpected statuses + value mismatches + connection failures
  double duration_s = 0;       // wall-clock length of the measured window
  double throughput_rps = 0;   // requests / duration_s
  LatencySummary latency;      // open loop: from the planned send time (corrected)
  double hit_rate = 0;         // GET 200s / GETs; NaN when no GETs
  std::uint64_t gets = 0, get_hits = 0, sets = 0, deletes = 0;
  std::map<std::string, std::uint64_t> errors_by_code;  // "http_500", "mismatch", "timeout", ...
  double server_cpu_pct = 0;                            // NaN when not sampled
  double client_cpu_pct = 0;
  // The client's CPU time (all threads) over the window, per completed request; NaN when unknown.
  double client_cpu_us_per_response = 0;
  std::uint64_t verified = 0;     // answers checked in full (--verify); the rest by status/framing
  std::uint64_t above_range = 0;  // latencies above the histogram's 1000 s range (not clamped)

  bool open_loop = false;
  double target_rps = 0;
  LatencySummary uncorrected;  // open loop: from the actual send time
  double send_lag_p99_us = 0;  // open loop: actual - planned send time
  bool rate_sustained = true;  // open loop: false when the client fell behind its schedule
  std::uint64_t unsent = 0;    // open loop: planned sends left when the window ended (in latency)
  // Open loop: false when the achieved rate missed the planned one by more than 1% or the
  // schedule slipped (perf.cc point_validity); --slo never counts an invalid point. Closed loop:
  // always true.
  bool valid = true;
  std::string invalid_reason;  // empty when valid

  std::vector<SeriesPoint> series;
  // The histogram behind `latency` (open loop: corrected), mergeable (bench_client merge).
  HistogramSnapshot histogram;
  // --targets: one entry per node, in --targets order; empty for a single target.
  std::vector<NodeResult> nodes;
  bool aborted = false;  // the point failed (a worker's fatal error): its numbers are partial
  std::string abort_reason;
  bool interrupted = false;  // SIGINT/SIGTERM arrived mid-point: the sweep drops the point
};

struct PreloadResult {
  std::uint64_t keys = 0;
  std::uint64_t errors = 0;
  double seconds = 0;
  bool ok = true;
  std::string message;
};

struct RunMeta {
  std::string tool_version;
  std::string date_utc;
  std::string git_revision;
  std::string client_host;
  std::string kernel;
  std::string cpu_model;
  std::vector<int> client_cpus;  // the process's CPU affinity
  unsigned online_cpus = 0;
  std::string pinning;               // "none" or the --pin-cpus list
  std::string target;                // host:port; --targets: the list as given
  int server_pid = 0;                // --server-pid's first PID (0: none)
  std::vector<int> server_pids;      // --server-pid's list
  std::vector<std::string> targets;  // --targets, in order (empty: one server)
  // --targets: {"HOST:PORT": that node's GET /stats, or null}; server_stats is the first node's.
  boost::json::value server_stats_by_target;
  std::string command_line;
  boost::json::value workload;  // workload parameters (built by the sweep)
  boost::json::value mode;      // closed/open loop, requests, duration, warm-up, ...
  bool server_stats_available = false;
  std::string server_stats_error;
  boost::json::value server_stats;  // GET /stats as returned, null when unavailable
  PreloadResult preload;
  // bench_client merge: [{"file", "client_host", "date_utc", "command_line"}, ...], one per
  // merged run (merge.hh); null (not written) for a normal run.
  boost::json::value merged_from;
};

// --slo: one step of the search, as the JSON's "slo.steps" holds it.
struct SloStepRecord {
  unsigned step = 0;    // 1-based
  double rate_rps = 0;  // planned
  double achieved_rps = 0;
  double percentile_us = 0;  // corrected, at the SLO's percentile
  bool valid = true;
  std::string invalid_reason;
  bool meets = false;
  std::size_t point = 0;  // index into SweepResult::points
};

// --slo: the search's parameters, steps and answer (slo_search.hh).
struct SloReport {
  std::string spec;  // as given, "p99=1ms"
  double percentile = 0;
  double bound_us = 0;
  unsigned threads = 0;
  unsigned connections = 0;  // total
  double precision = 0;
  double saturation_rps = 0;  // the closed-loop point, SweepResult::points[0]
  double top_rps = 0;         // the top of the range searched
  std::vector<SloStepRecord> steps;
  std::optional<double> capacity_rps;  // none: the bound was never met by a valid point
  std::optional<double> capacity_percentile_us;
  std::string conclusion;  // why the search ended
};

struct SweepResult {
  RunMeta meta;
  std::vector<PointResult> points;
  std::optional<SloReport> slo;  // --slo only
  // --record-trace: one entry per request sent, points in order, each point's threads merged
  // round-robin; entry = key index << 1 | cold (trace_record.hh).
  std::vector<std::uint64_t> recorded_trace;
  bool aborted = false;  // the run stopped early (a failed point, a failed preload, a signal)
  std::string abort_reason;
  bool interrupted = false;  // stopped by SIGINT/SIGTERM; points holds the finished points only
};

}  // namespace client
