// threaded_performance() and the preload phase (see perf.hh).
#include "client/perf.hh"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>

#include "client/board_workload.hh"
#include "client/cpu.hh"
#include "client/http_request.hh"
#include "client/interrupt.hh"
#include "client/latency_summary.hh"
#include "client/resp.hh"
#include "client/trace_record.hh"
#include "client/worker.hh"

namespace client {
namespace {

// Open loop: the point is flagged when fewer than this share of the target rate completed.
constexpr double kRateSustainedShare = 0.95;
// Open loop: a point is valid (counted by --slo) only when the achieved rate is at least this share
// of the planned one, and the schedule did not slip (point_validity below).
constexpr double kValidAchievedShare = 0.99;
constexpr double kMaxUnsentShare = 0.01;
constexpr double kMaxSendLagUs = 1000.0;
constexpr double kMaxSendLagWindowShare = 0.10;
// Board preload: requests per write (then as many responses are read).
constexpr std::uint64_t kBoardPreloadBatch = 64;

std::vector<SeriesPoint> merge_series(const std::vector<std::unique_ptr<Worker>>& workers,
                                      double window_s) {
  std::uint32_t last = 0;
  bool any = false;
  for (const auto& w : workers)
    for (const auto& s : w->stats().series) {
      last = std::max(last, s.second);
      any = true;
    }
  std::vector<SeriesPoint> out;
  if (!any) return out;
  auto hist = std::make_unique<Histogram>();
  std::vector<std::size_t> cursor(workers.size(), 0);  // each worker's series is in second order
  for (std::uint32_t sec = 0; sec <= last; ++sec) {
    hist->reset();
    SeriesPoint p;
    p.second = sec;
    for (std::size_t i = 0; i < workers.size(); ++i) {
      const auto& series = workers[i]->stats().series;
      for (; cursor[i] < series.size() && series[cursor[i]].second == sec; ++cursor[i]) {
        const SecondSample& s = series[cursor[i]];
        hist->merge_sparse(s.buckets);
        p.requests += s.completed;
        p.timed_out += s.timed_out;
        p.unsent += s.unsent;
      }
    }
    const double len = std::clamp(window_s - sec, 1e-9, 1.0);
    p.throughput_rps = static_cast<double>(p.requests) / len;
    p.p99_us = static_cast<double>(hist->percentile_ns(99)) / kNsPerUs;
    out.push_back(p);
  }
  return out;
}

void add_code(std::map<std::string, std::uint64_t>& m, const std::string& code, std::uint64_t n) {
  if (n != 0) m[code] += n;
}

// The error counts of a WorkerStats or a NodeStats, by code ("mismatch", "http_500", "timeout").
template <class Stats>
void add_codes(std::map<std::string, std::uint64_t>& m, const Stats& s) {
  add_code(m, "mismatch", s.mismatches);
  for (std::size_t code = 0; code < s.unexpected_status.size(); ++code)
    add_code(m, "http_" + std::to_string(code), s.unexpected_status[code]);
  for (std::size_t r = 0; r < s.io_errors.size(); ++r)
    add_code(m, io_result_name(static_cast<IoResult>(r)), s.io_errors[r]);
}

// One preload thread's counts; `fatal` ends the preload (a connection that failed, a signal).
struct PreloadPart {
  std::uint64_t stored = 0, errors = 0;
  std::string fatal;
};

// Runs fill(t, part) on nthreads threads (thread t stores its own share of the entries), then
// merges their errors and any fatal message into result, with the elapsed time.
template <class Fill>
void run_preload_threads(unsigned nthreads, PreloadResult& result, const Fill& fill) {
  std::vector<PreloadPart> parts(nthreads);
  const auto start = Clock::now();
  {
    std::vector<std::jthread> threads;
    for (unsigned t = 0; t < nthreads; ++t) {
      threads.emplace_back([&fill, t, &part = parts[t]] { fill(t, part); });
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const auto& p : parts) {
    result.errors += p.errors;
    if (!p.fatal.empty()) {
      result.ok = false;
      result.message = p.fatal;
    }
  }
}

std::string rps_text(double x) {
  return std::to_string(static_cast<long long>(std::llround(x)));
}

}  // namespace

// --requests-total splits the point's requests across the threads, the first ones taking one
// more; otherwise each thread issues nreqs.
std::uint64_t requests_of_thread(std::uint64_t requests_total, std::uint64_t nreqs,
                                 unsigned nthreads, unsigned thread) {
  if (requests_total == 0) return nreqs;
  return requests_total / nthreads + (thread < requests_total % nthreads ? 1 : 0);
}

// The validity of a point (docs/client.md, "Validity of a point"): invalid when an answer was
// wrong (a "mismatch": a body that failed its check, or a board read answered 404 after the
// preload), in either loop. An open-loop point is also invalid when the achieved rate misses the
// planned one by more than 1%, or when the client's schedule slipped: more than 1% of the planned
// sends were never issued, or the send lag's p99 (actual - planned send time) exceeds
// max(1 ms, 10% of the window).
void mark_point_validity(PointResult& p) {
  if (const auto wrong = p.errors_by_code.find("mismatch");
      wrong != p.errors_by_code.end() && wrong->second > 0) {
    p.valid = false;
    p.invalid_reason = std::to_string(wrong->second) + " wrong answer(s) (mismatch)";
    return;
  }
  if (!p.open_loop) return;
  const double planned = static_cast<double>(p.requests + p.errors + p.unsent);
  const double lag_limit_us = std::max(kMaxSendLagUs, kMaxSendLagWindowShare * p.duration_s * 1e6);
  if (p.throughput_rps < kValidAchievedShare * p.target_rps) {
    p.valid = false;
    p.invalid_reason = "achieved " + rps_text(p.throughput_rps) + " of planned " +
                       rps_text(p.target_rps) + " req/s";
  } else if (planned > 0 && static_cast<double>(p.unsent) > kMaxUnsentShare * planned) {
    p.valid = false;
    p.invalid_reason = "schedule slipped: " + std::to_string(p.unsent) + " of " +
                       rps_text(planned) + " planned sends never issued";
  } else if (p.send_lag_p99_us > lag_limit_us) {
    p.valid = false;
    p.invalid_reason = "schedule slipped: send lag p99 " + rps_text(p.send_lag_p99_us) + " us > " +
                       rps_text(lag_limit_us) + " us";
  }
}

Bench::Bench(const Config& cfg, const Endpoint& ep) : cfg_(cfg), ep_(ep), keys_(cfg.workload) {}

Bench::Bench(const Config& cfg, std::vector<Endpoint> targets)
    : cfg_(cfg), ep_(targets.at(0)), keys_(cfg.workload) {
  std::vector<std::string> names;
  for (const auto& t : cfg.targets) names.push_back(t.text);
  routing_ = std::make_unique<Routing>(std::move(targets), names, cfg.target_weight);
}

Bench::~Bench() = default;

PointResult Bench::threaded_performance(unsigned nthreads, std::uint64_t nreqs) const {
  return threaded_performance(nthreads, nreqs, cfg_.rate_rps);
}

namespace {

// The plan of worker i of a point of nthreads threads.
WorkerPlan plan_of(const Config& cfg, unsigned nthreads, std::uint64_t nreqs, double rate_rps,
                   unsigned i) {
  WorkerPlan plan;
  plan.thread_index = i;
  plan.nthreads = nthreads;
  plan.connections = cfg.connections_per_thread;
  plan.pipeline = cfg.pipeline;
  plan.requests = requests_of_thread(cfg.requests_total, nreqs, nthreads, i);
  plan.duration = cfg.duration;
  plan.warmup_requests = cfg.warmup_requests;
  plan.warmup_time = cfg.warmup_time;
  plan.rate_rps = rate_rps / nthreads;
  if (rate_rps > 0.0)
    plan.schedule_offset = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 * i / rate_rps));
  plan.timeout = cfg.timeout;
  plan.seed = cfg.workload.seed;
  plan.pin_cpu = cfg.pin_cpus.empty() ? -1 : cfg.pin_cpus[i % cfg.pin_cpus.size()];
  return plan;
}

// The three histograms of a point, merged over its workers.
struct PointHistograms {
  Histogram latency, uncorrected, lag;
};

// Adds the workers' counts, histograms and failures to result; returns the end of the measured
// window (the last completion, or t0).
Clock::time_point add_workers(PointResult& result,
                              const std::vector<std::unique_ptr<Worker>>& workers,
                              PointHistograms& h, Clock::time_point t0) {
  Clock::time_point window_end = t0;
  for (const auto& w : workers) {
    const WorkerStats& s = w->stats();
    h.latency.merge(s.latency);
    h.uncorrected.merge(s.latency_uncorrected);
    h.lag.merge(s.send_lag);
    result.requests += s.completed;
    result.unsent += s.unsent;
    result.errors += s.errors();
    result.gets += s.gets;
    result.get_hits += s.get_hits;
    result.sets += s.sets;
    result.deletes += s.deletes;
    result.verified += s.verified;
    add_codes(result.errors_by_code, s);
    if (s.last_completion > window_end) window_end = s.last_completion;
    if (s.fatal && !result.aborted) {
      result.aborted = true;
      result.abort_reason = s.fatal_message;
    }
    if (s.interrupted) result.interrupted = true;
  }
  return window_end;
}

// The server's and the client's CPU over the window; returns the server CPU % of each PID.
std::vector<double> set_cpu_figures(PointResult& result, const StartGate& gate,
                                    const std::vector<std::optional<double>>& server_cpu_end,
                                    double client_cpu_end, double cpu_window) {
  // Several PIDs: the sum (NaN when any is missing or none was given).
  std::vector<double> server_cpu(server_cpu_end.size());
  result.server_cpu_pct = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < server_cpu.size(); ++i) {
    server_cpu[i] = cpu_percent(gate.server_cpu_starts()[i], server_cpu_end[i], cpu_window);
    result.server_cpu_pct = i == 0 ? server_cpu[i] : result.server_cpu_pct + server_cpu[i];
  }
  result.client_cpu_pct = cpu_percent(gate.client_cpu_start(), client_cpu_end, cpu_window);
  result.client_cpu_us_per_response =
      gate.client_cpu_start() && result.requests > 0
          ? (client_cpu_end - *gate.client_cpu_start()) * 1e6 / static_cast<double>(result.requests)
          : std::numeric_limits<double>::quiet_NaN();
  return server_cpu;
}

// --targets: per node, the workers' node stats merged; percentiles from the merged histogram.
std::vector<NodeResult> node_results(const Config& cfg,
                                     const std::vector<std::unique_ptr<Worker>>& workers,
                                     double duration_s, const std::vector<double>& server_cpu) {
  std::vector<NodeResult> nodes;
  auto hist = std::make_unique<Histogram>();
  for (std::size_t n = 0; n < cfg.targets.size(); ++n) {
    NodeResult node;
    node.target = cfg.targets[n].text;
    hist->reset();
    for (const auto& w : workers) {
      const NodeStats& s = w->stats().nodes[n];
      hist->merge(s.latency);
      node.requests += s.completed;
      node.errors += s.errors();
      add_codes(node.errors_by_code, s);
    }
    node.throughput_rps = duration_s > 0 ? static_cast<double>(node.requests) / duration_s : 0.0;
    node.latency = summarize(*hist);
    node.histogram = hist->snapshot();
    node.server_cpu_pct =
        n < server_cpu.size() ? server_cpu[n] : std::numeric_limits<double>::quiet_NaN();
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// No worker reached the measured phase: a failed point (unless a signal stopped it), no figures.
PointResult not_started(PointResult result) {
  result.aborted = !result.interrupted;
  if (result.abort_reason.empty()) result.abort_reason = "no worker reached the measured phase";
  result.hit_rate = result.server_cpu_pct = result.client_cpu_pct =
      result.client_cpu_us_per_response = std::numeric_limits<double>::quiet_NaN();
  return result;
}

}  // namespace

PointResult Bench::threaded_performance(unsigned nthreads, std::uint64_t nreqs,
                                        double rate_rps) const {
  PointResult result;
  result.threads = nthreads;
  result.connections = nthreads * cfg_.connections_per_thread;
  result.pipeline = cfg_.pipeline;
  result.open_loop = rate_rps > 0.0;
  result.target_rps = rate_rps;

  StartGate gate(static_cast<std::ptrdiff_t>(nthreads), cfg_.server_pids);
  std::vector<std::unique_ptr<Worker>> workers;
  workers.reserve(nthreads);
  for (unsigned i = 0; i < nthreads; ++i)
    workers.push_back(std::make_unique<Worker>(
        cfg_, ep_, keys_, plan_of(cfg_, nthreads, nreqs, rate_rps, i), gate, routing_.get()));
  {
    std::vector<std::jthread> threads;
    threads.reserve(nthreads);
    for (auto& w : workers) threads.emplace_back([&worker = *w] { worker.run(); });
  }  // joined here
  const auto sampled_at = Clock::now();
  if (trace_ != nullptr) {
    std::vector<const std::vector<std::uint64_t>*> per_thread;
    for (const auto& w : workers) per_thread.push_back(&w->recorded());
    merge_round_robin(per_thread, *trace_);
  }
  std::vector<std::optional<double>> server_cpu_end;
  for (int pid : cfg_.server_pids) server_cpu_end.push_back(process_cpu_seconds(pid));
  const double client_cpu_end = self_cpu_seconds();

  auto h = std::make_unique<PointHistograms>();  // ~100 KiB: not on the stack
  const Clock::time_point window_end = add_workers(result, workers, *h, gate.t0());
  if (!gate.started()) return not_started(std::move(result));
  result.duration_s = std::chrono::duration<double>(window_end - gate.t0()).count();
  result.throughput_rps =
      result.duration_s > 0 ? static_cast<double>(result.requests) / result.duration_s : 0.0;
  result.latency = summarize(h->latency);
  result.histogram = h->latency.snapshot();
  result.above_range = h->latency.above_range();
  result.hit_rate = result.gets > 0
                        ? static_cast<double>(result.get_hits) / static_cast<double>(result.gets)
                        : std::numeric_limits<double>::quiet_NaN();
  const double cpu_window = std::chrono::duration<double>(sampled_at - gate.t0()).count();
  const std::vector<double> server_cpu =
      set_cpu_figures(result, gate, server_cpu_end, client_cpu_end, cpu_window);
  if (result.open_loop) {
    result.uncorrected = summarize(h->uncorrected);
    result.send_lag_p99_us = static_cast<double>(h->lag.percentile_ns(99)) / kNsPerUs;
    result.rate_sustained = result.throughput_rps >= kRateSustainedShare * rate_rps;
  }
  mark_point_validity(result);
  result.series = merge_series(workers, result.duration_s);
  if (routing_ != nullptr)
    result.nodes = node_results(cfg_, workers, result.duration_s, server_cpu);
  return result;
}

const std::vector<Endpoint>& Bench::endpoints() const {
  return routing_ != nullptr ? routing_->endpoints : single_;
}

// The preload connects once to every node (to the one server without --targets) and sends each
// key to the node that owns it.
PreloadResult Bench::preload(unsigned nthreads) const {
  if (workload_spec(cfg_.workload.kind).preload == Preload::kBoardMembers)
    return preload_boards(nthreads);
  PreloadResult result;
  const std::uint64_t count = keys_.preload_count();
  result.keys = count;
  if (count == 0) return result;
  nthreads = static_cast<unsigned>(std::clamp<std::uint64_t>(nthreads, 1, count));
  const std::vector<Endpoint>& eps = endpoints();
  const bool routed = routing_ != nullptr;
  run_preload_threads(nthreads, result, [&](unsigned t, PreloadPart& part) {
    const bool resp = cfg_.protocol == Config::Protocol::kResp;
    std::vector<Connection> conns(eps.size());
    for (std::size_t n = 0; n < eps.size(); ++n) {
      conns[n].use_resp(resp);
      if (!conns[n].connect(eps[n], cfg_.timeout, part.fatal)) return;
    }
    std::string request, value;
    Response response;
    char key[WorkloadConfig::kMaxKeyBytes];
    for (std::uint64_t idx = t; idx < count; idx += nthreads) {
      if (interrupted()) {
        part.fatal = std::string("preload interrupted by ") + interrupt_signal_name();
        return;
      }
      keys_.make_value(idx, 0, value);
      const std::string_view k(key, keys_.write_key(idx, false, key));
      const std::size_t n = routed ? routing_->ring.node_of(k) : 0;
      Connection& conn = conns[n];
      request.clear();
      if (resp) {
        append_resp_key_command(request, OpType::kSet, k, value, cfg_.ttl_seconds);
      } else {
        append_http_key_request(request, OpType::kSet, k, eps[n].host, value, cfg_.ttl_seconds);
      }
      IoResult r = conn.send_all(request);
      if (r == IoResult::kOk) r = conn.read_response(true, false, response);
      if (r != IoResult::kOk) {
        part.fatal = std::string("preload: connection ") +
                     (routed ? "to " + eps[n].text() + " " : "") + "failed (" + io_result_name(r) +
                     ")";
        return;
      }
      if (response.status == 201 || response.status == 204 || response.status == 200) {
        ++part.stored;
      } else {
        ++part.errors;
      }
      if (response.close && !conn.connect(eps[n], cfg_.timeout, part.fatal)) return;
    }
  });
  return result;
}

namespace {

// Sends one node's batch of `sent` board writes on `conn` and counts their answers into `part`;
// false (part.fatal set) when the connection failed. A server that closes mid-batch loses the
// rest of it (counted as errors), and the connection is opened again.
bool store_board_batch(Connection& conn, const Endpoint& ep, std::chrono::milliseconds timeout,
                       const std::string& batch, std::uint64_t sent, const std::string& node,
                       PreloadPart& part, Response& response) {
  IoResult r = conn.send_all(batch);
  for (std::uint64_t i = 0; i < sent && r == IoResult::kOk; ++i) {
    r = conn.read_response(true, false, response);
    if (r != IoResult::kOk) break;
    if (response.status == 201 || response.status == 200) {
      ++part.stored;
    } else {
      ++part.errors;
    }
    if (response.close) {
      // The server answers nothing after this: the rest of the batch is lost.
      part.errors += sent - i - 1;
      return conn.connect(ep, timeout, part.fatal);
    }
  }
  if (r != IoResult::kOk) {
    part.fatal = "preload: connection " + node + "failed (" + io_result_name(r) + ")";
    return false;
  }
  return true;
}

}  // namespace

// Entry i of [0, boards x members) is member i % members of board i / members; thread t stores
// entries t, t + nthreads, ... in batches of kBoardPreloadBatch requests, one write per node of
// the batch's entries (a board lives on one node).
PreloadResult Bench::preload_boards(unsigned nthreads) const {
  PreloadResult result;
  const std::uint64_t count = keys_.preload_count();
  result.keys = count;
  if (count == 0) return result;
  nthreads = static_cast<unsigned>(std::clamp<std::uint64_t>(nthreads, 1, count));
  const std::uint64_t members = cfg_.workload.members;
  const std::vector<Endpoint>& eps = endpoints();
  const bool routed = routing_ != nullptr;
  std::vector<BoardRequests> requests;
  for (const auto& ep : eps) requests.emplace_back(cfg_.workload, ep.host);
  run_preload_threads(nthreads, result, [&](unsigned t, PreloadPart& part) {
    std::vector<Connection> conns(eps.size());
    for (std::size_t n = 0; n < eps.size(); ++n)
      if (!conns[n].connect(eps[n], cfg_.timeout, part.fatal)) return;
    std::vector<std::string> batch(eps.size());
    std::vector<std::uint64_t> sent(eps.size());
    Response response;
    char name[kMaxBoardNameBytes];
    std::uint64_t idx = t;
    while (idx < count) {
      if (interrupted()) {
        part.fatal = std::string("preload interrupted by ") + interrupt_signal_name();
        return;
      }
      for (auto& b : batch) b.clear();
      std::fill(sent.begin(), sent.end(), 0);
      for (std::uint64_t k = 0; k < kBoardPreloadBatch && idx < count; ++k, idx += nthreads) {
        Op op;
        op.type = OpType::kBoardSet;
        op.board = static_cast<std::uint32_t>(idx / members);
        op.key = idx % members;
        op.score = preload_board_score(op.board, op.key, cfg_.workload.score_max);
        const std::size_t n =
            routed
                ? routing_->ring.node_of(std::string_view(name, write_board_name(op.board, name)))
                : 0;
        requests[n].append(batch[n], op);
        ++sent[n];
      }
      for (std::size_t n = 0; n < eps.size(); ++n) {
        if (sent[n] == 0) continue;
        const std::string node = routed ? "to " + eps[n].text() + " " : "";
        if (!store_board_batch(conns[n], eps[n], cfg_.timeout, batch[n], sent[n], node, part,
                               response))
          return;
      }
    }
  });
  return result;
}

}  // namespace client
