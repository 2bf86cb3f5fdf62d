// Server probe, reset, preload, metadata collection and the per-thread-count loop (see sweep.hh).
#include "client/sweep.hh"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>

#include "client/git_revision.hh"
#include "client/interrupt.hh"
#include "client/perf.hh"
#include "client/resp.hh"
#include "client/slo_search.hh"

namespace client {
namespace {

constexpr const char* kToolVersion = "1.0";
constexpr unsigned kMaxPreloadThreads = 4;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  return out;
}

void fill_host_meta(RunMeta& meta) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  meta.client_host = host;
  utsname u{};
  if (::uname(&u) == 0) meta.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  meta.cpu_model = cpu_model();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) meta.client_cpus.push_back(c);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  meta.online_cpus = online > 0 ? static_cast<unsigned>(online) : 0;
}

// Board workloads: name, keys (= boards x members, the (board, member) pairs), boards, members,
// top_n (board-top, board-mixed), ratio (get = reads, set = updates), popularity, seed.
boost::json::value board_workload_json(const WorkloadConfig& w) {
  boost::json::object o;
  o["name"] = workload_name(w.kind);
  o["keys"] = std::uint64_t{w.boards} * w.members;
  o["boards"] = w.boards;
  o["members"] = w.members;
  const WorkloadSpec& spec = workload_spec(w.kind);
  if (spec.has(kTakesTopN)) o["top_n"] = w.top_n;
  o["ratio"] = {{"get", w.ratio.get}, {"set", w.ratio.set}, {"delete", w.ratio.del}};
  o["popularity"] = popularity_name(spec.popularity);
  o["seed"] = w.seed;
  return o;
}

boost::json::value workload_json(const Config& cfg) {
  const WorkloadConfig& w = cfg.workload;
  const WorkloadSpec& spec = workload_spec(w.kind);
  if (spec.api == WorkloadApi::kBoards) return board_workload_json(w);
  boost::json::object o;
  o["name"] = workload_name(w.kind);
  o["keys"] = w.keys;
  o["ratio"] = {{"get", w.ratio.get}, {"set", w.ratio.set}, {"delete", w.ratio.del}};
  o["popularity"] = popularity_name(spec.popularity);
  o["theta"] = w.theta;
  o["miss_ratio"] = w.miss_ratio;
  o["hot_keys"] = w.hot_keys;
  if (w.key_bytes)
    o["key_size"] = w.key_bytes;
  else
    o["key_size"] = "gev(30.7984,8.20449,0.078688)";
  if (w.value_bytes)
    o["value_size"] = w.value_bytes;
  else if (spec.has(kEtcValueSizes))
    o["value_size"] = "etc(discrete 0-14, gpareto(15,214.476,0.348238))";
  else
    o["value_size"] = WorkloadConfig::kDefaultFixedValueBytes;
  o["max_value_size"] = w.max_value_bytes;
  o["seed"] = w.seed;
  if (spec.api == WorkloadApi::kFixedPath) o["path"] = w.path;
  return o;
}

boost::json::value mode_json(const Config& cfg) {
  boost::json::object o;
  // --slo: a closed-loop point, then open-loop steps at the rates the search chose ("slo").
  o["loop"] = !cfg.slo.text.empty() ? "slo" : cfg.rate_rps > 0 ? "open" : "closed";
  o["rate_rps"] = cfg.rate_rps;
  o["requests_per_thread"] =
      cfg.duration.count() > 0 || cfg.requests_total > 0 ? 0 : cfg.requests_per_thread;
  o["requests_total"] = cfg.requests_total;  // per point, across threads (0: not given)
  o["duration_s"] = std::chrono::duration<double>(cfg.duration).count();
  if (cfg.warmup_time.count() > 0) {
    o["warmup_s"] = std::chrono::duration<double>(cfg.warmup_time).count();
  } else {
    o["warmup_requests_per_thread"] = cfg.warmup_requests;
  }
  o["connections_per_thread"] = cfg.connections_per_thread;
  o["pipeline"] = cfg.pipeline;
  o["protocol"] = cfg.protocol == Config::Protocol::kResp ? "resp" : "http";  // --protocol
  o["ttl_s"] = cfg.ttl_seconds;     // --ttl on every key PUT (0: none)
  o["verify"] = cfg.verify.text();  // --verify: all, off or N (the first answer, then 1 in N)
  o["timeout_ms"] = cfg.timeout.count();
  boost::json::array counts;
  for (unsigned t : cfg.thread_counts) counts.push_back(t);
  o["thread_counts"] = std::move(counts);
  o["preload"] = cfg.preload;
  o["reset"] = cfg.reset;
  if (!cfg.targets.empty()) o["target_weight"] = cfg.target_weight;  // --targets' ring
  return o;
}

// The corrected latency of a finished point at percentile p, in microseconds.
double point_percentile_us(const PointResult& p, double percentile) {
  auto h = std::make_unique<Histogram>();
  h->merge(p.histogram);
  return static_cast<double>(h->percentile_ns(percentile)) / 1000.0;
}

// Keeps a finished point of the SLO search in out.points (through hooks.point_done), unless it
// was interrupted (dropped). The run's end when it ends there (interrupted, or the point aborted,
// kept partial); nullopt when the search goes on.
std::optional<SweepStatus> keep_slo_point(PointResult&& point, const std::string& what,
                                          const SweepHooks& hooks, SweepResult& out) {
  if (point.interrupted) {
    out.interrupted = out.aborted = true;
    out.abort_reason = std::string("interrupted by ") + interrupt_signal_name() + " during " +
                       what + " (not recorded)";
    return SweepStatus::kInterrupted;
  }
  out.points.push_back(std::move(point));
  if (hooks.point_done) hooks.point_done(out.points.back());
  if (out.points.back().aborted) {
    out.aborted = true;
    out.abort_reason = what + " aborted: " + out.points.back().abort_reason;
    return SweepStatus::kAborted;
  }
  if (interrupted()) {
    out.interrupted = out.aborted = true;
    out.abort_reason = std::string("interrupted by ") + interrupt_signal_name() + " after " + what;
    return SweepStatus::kInterrupted;
  }
  return std::nullopt;
}

// The SLO report's settings, before its first point.
SloReport slo_report_of(const Config& cfg) {
  SloReport slo;
  slo.spec = cfg.slo.text;
  slo.percentile = cfg.slo.percentile;
  slo.bound_us = static_cast<double>(cfg.slo.bound.count()) / 1000.0;
  slo.threads = cfg.thread_counts.front();
  slo.connections = slo.threads * cfg.connections_per_thread;
  slo.precision = cfg.slo.precision;
  return slo;
}

// One finished step of the search, its point being out.points[point].
SloStepRecord slo_step_record(const SloStep& step, std::size_t point) {
  SloStepRecord r;
  r.step = step.step;
  r.rate_rps = step.rate_rps;
  r.achieved_rps = step.outcome.achieved_rps;
  r.percentile_us = step.outcome.percentile_us;
  r.valid = step.outcome.valid;
  r.invalid_reason = step.outcome.invalid_reason;
  r.meets = step.meets;
  r.point = point;
  return r;
}

// --slo: the closed-loop point at the one thread count (the saturation throughput), then the
// search's open-loop steps, each a point of the same length (slo_search.hh). Every point goes
// into out.points and through hooks.point_done; out.slo holds the steps and the answer.
SweepStatus run_slo_search(const Config& cfg, const Bench& bench, const SweepHooks& hooks,
                           SweepResult& out) {
  const unsigned threads = cfg.thread_counts.front();
  const std::uint64_t nreqs = cfg.duration.count() > 0 ? 0 : cfg.requests_per_thread;
  SloReport& slo = out.slo.emplace(slo_report_of(cfg));
  std::optional<SweepStatus> ended =
      keep_slo_point(bench.threaded_performance(threads, nreqs, 0.0),
                     "the closed-loop point of the SLO search", hooks, out);
  if (ended) return *ended;
  slo.saturation_rps = out.points.front().throughput_rps;

  SloSearchParams params;
  params.bound_us = slo.bound_us;
  params.saturation_rps = slo.saturation_rps;
  params.max_rate_rps = cfg.slo.max_rate_rps;
  params.precision = cfg.slo.precision;
  auto measure = [&](double rate) {
    SloStepOutcome outcome;
    const std::string what = "SLO step " + std::to_string(slo.steps.size() + 1);
    ended = keep_slo_point(bench.threaded_performance(threads, nreqs, rate), what, hooks, out);
    if (ended) {
      outcome.stop = true;
      return outcome;
    }
    const PointResult& p = out.points.back();
    outcome.achieved_rps = p.throughput_rps;
    outcome.percentile_us = point_percentile_us(p, slo.percentile);
    outcome.valid = p.valid;
    outcome.invalid_reason = p.invalid_reason;
    return outcome;
  };
  auto step_done = [&](const SloStep& step) {
    if (step.outcome.stop) return;  // its point was not finished: not a step of the answer
    slo.steps.push_back(slo_step_record(step, out.points.size() - 1));
    if (hooks.slo_step) hooks.slo_step(slo, slo.steps.back());
  };
  const SloSearchResult found = search_slo_capacity(params, measure, step_done);
  slo.top_rps = found.top_rps;
  slo.capacity_rps = found.capacity_rps;
  slo.capacity_percentile_us = found.capacity_percentile_us;
  slo.conclusion = found.conclusion;
  if (hooks.slo_done) hooks.slo_done(slo);
  return ended ? *ended : SweepStatus::kOk;
}

}  // namespace

ServerProbe probe_server(const Endpoint& ep, std::chrono::milliseconds timeout) {
  ServerProbe probe;
  Connection conn;
  if (!conn.connect(ep, timeout, probe.error)) return probe;
  probe.reachable = true;
  const std::string request = "GET /stats HTTP/1.1\r\nHost: " + ep.host + "\r\n\r\n";
  Response response;
  IoResult r = conn.send_all(request);
  if (r == IoResult::kOk) r = conn.read_response(true, false, response);
  if (r != IoResult::kOk) {
    probe.stats_error = std::string("GET /stats failed: ") + io_result_name(r);
    return probe;
  }
  if (response.status != 200) {
    probe.stats_error = "GET /stats answered HTTP " + std::to_string(response.status);
    return probe;
  }
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(response.body, ec);
  if (ec || !v.is_object()) {
    probe.stats_error = "GET /stats did not return a JSON object";
    return probe;
  }
  probe.stats_available = true;
  probe.stats = std::move(v);
  return probe;
}

namespace {

// The "error" of a cache_server error body ({"error": "..."}), else the body as it came.
std::string error_text(std::string_view body) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (const auto* e = v.as_object().if_contains("error"); e != nullptr && e->is_string()) {
      return std::string(e->as_string());
    }
  }
  return std::string(body.substr(0, 200));
}

}  // namespace

ResetOutcome reset_server(const Endpoint& ep, std::chrono::milliseconds timeout,
                          const std::string& admin_token) {
  ResetOutcome out;
  Connection conn;
  if (!conn.connect(ep, timeout, out.error)) return out;
  std::string request = "POST /reset HTTP/1.1\r\nHost: " + ep.host + "\r\n";
  if (!admin_token.empty()) request += "Authorization: Bearer " + admin_token + "\r\n";
  request += "Content-Length: 0\r\n\r\n";
  Response response;
  IoResult r = conn.send_all(request);
  if (r == IoResult::kOk) r = conn.read_response(true, false, response);
  if (r != IoResult::kOk) {
    out.error = std::string("POST /reset failed: ") + io_result_name(r);
    return out;
  }
  if (response.status == 204 || response.status == 200) return out;
  out.error = "POST /reset answered HTTP " + std::to_string(response.status);
  if (response.status == 401 || response.status == 403) {
    // The server's admin route refused it (docs/server.md, "Security model"): say which flag helps.
    out.refused = true;
    out.error +=
        " (" + error_text(response.body) + "): " +
        (admin_token.empty() ? "pass --admin-token-file FILE with the server's admin token"
                             : "the token of --admin-token-file is not the server's admin token") +
        ", or --no-reset to keep the server's data";
  }
  return out;
}

namespace {

// Sends one RESP command and reads its reply; false (with `error` set) when either fails.
bool resp_call(Connection& conn, std::initializer_list<std::string_view> args, Response& reply,
               std::string& error) {
  std::string request;
  append_resp_command(request, args);
  IoResult r = conn.send_all(request);
  if (r == IoResult::kOk) r = conn.read_response(true, false, reply);
  if (r == IoResult::kOk) return true;
  error = std::string(*args.begin()) + " failed: " + io_result_name(r);
  return false;
}

}  // namespace

ServerProbe probe_resp_server(const Endpoint& ep, std::chrono::milliseconds timeout) {
  ServerProbe probe;
  Connection conn;
  conn.use_resp(true);
  if (!conn.connect(ep, timeout, probe.error)) return probe;
  probe.stats_error = "--protocol resp: /stats is HTTP's";
  Response reply;
  const char* hint = ": is this a RESP server (cache_server --resp-port, Redis)?";
  if (!resp_call(conn, {"PING"}, reply, probe.error)) {
    probe.error += hint;
    return probe;
  }
  if (reply.status != 200 || reply.body != "PONG") {
    probe.error = "PING answered " +
                  (reply.status == 500 ? "-" + std::string(reply.body) : std::string("not +PONG")) +
                  hint;
    return probe;
  }
  probe.reachable = true;
  return probe;
}

ResetOutcome reset_resp_server(const Endpoint& ep, std::chrono::milliseconds timeout,
                               const std::string& admin_token) {
  ResetOutcome out;
  Connection conn;
  conn.use_resp(true);
  if (!conn.connect(ep, timeout, out.error)) return out;
  Response reply;
  const auto refused = [&](const std::string& what) {
    out.refused = true;
    out.error = what + " answered -" + std::string(reply.body) + ": " +
                (admin_token.empty() ? "pass --admin-token-file FILE with the server's admin token"
                                     : "the token of --admin-token-file is not the server's") +
                ", or --no-reset to keep the server's data";
    return out;
  };
  if (!admin_token.empty()) {
    if (!resp_call(conn, {"AUTH", admin_token}, reply, out.error)) return out;
    if (reply.status != 200) return refused("AUTH");
  }
  if (!resp_call(conn, {"FLUSHALL"}, reply, out.error)) return out;
  if (reply.status == 200) return out;
  const std::string_view text = reply.body;
  if (text.starts_with("NOAUTH") || text.starts_with("WRONGPASS") ||
      text.find("reset is disabled") != std::string_view::npos) {
    return refused("FLUSHALL");
  }
  out.error = "FLUSHALL answered -" + std::string(text.substr(0, 200));
  return out;
}

namespace {

void say(const SweepHooks& hooks, const std::string& message) {
  if (hooks.message) hooks.message(message);
}

SweepStatus stop_interrupted(SweepResult& out, const std::string& during) {
  out.interrupted = true;
  out.aborted = true;
  out.abort_reason = std::string("interrupted by ") + interrupt_signal_name() + " " + during;
  return SweepStatus::kInterrupted;
}

SweepStatus stop(SweepResult& out, SweepStatus status, const std::string& reason) {
  out.aborted = true;
  out.abort_reason = reason;
  return status;
}

// The run's metadata that the flags and this machine give, before any server is asked.
void fill_run_meta(const Config& cfg, const std::string& command_line, RunMeta& meta) {
  meta.tool_version = kToolVersion;
  meta.date_utc = utc_now();
  meta.git_revision = run_time_git_revision();
  meta.command_line = command_line;
  fill_host_meta(meta);
  meta.pinning = cfg.pin_cpus.empty() ? "none" : join_ints(cfg.pin_cpus);
  meta.target = cfg.host + ":" + std::to_string(cfg.port);
  if (!cfg.targets.empty()) {
    meta.target.clear();
    for (const auto& t : cfg.targets) {
      meta.target += (meta.target.empty() ? "" : ",") + t.text;
      meta.targets.push_back(t.text);
    }
  }
  meta.server_pids = cfg.server_pids;
  meta.server_pid = cfg.server_pids.empty() ? 0 : cfg.server_pids.front();
  meta.workload = workload_json(cfg);
  meta.mode = mode_json(cfg);
}

// The servers of the run: the one of --host/--port, or every node of --targets, each resolved
// and probed (whether /stats answers).
struct Servers {
  std::vector<Config::Target> nodes;
  bool several = false;  // --targets
  std::vector<Endpoint> eps;
  std::vector<bool> stats_ok;
};

// Resolves and probes every server into `servers`, their /stats into the metadata. An unreachable
// node ends the run as an unreachable server does: its status, else nullopt.
std::optional<SweepStatus> probe_servers(const Config& cfg, const SweepHooks& hooks,
                                         Servers& servers, SweepResult& out) {
  RunMeta& meta = out.meta;
  servers.nodes = cfg.targets;
  if (servers.nodes.empty()) servers.nodes.push_back({meta.target, cfg.host, cfg.port});
  servers.several = !cfg.targets.empty();
  servers.eps.resize(servers.nodes.size());
  servers.stats_ok.resize(servers.nodes.size());
  boost::json::object by_target;
  for (std::size_t i = 0; i < servers.nodes.size(); ++i) {
    const Config::Target& node = servers.nodes[i];
    const std::string prefix = servers.several ? "target " + node.text + ": " : "";
    std::string err;
    if (!resolve(node.host, node.port, servers.eps[i], err))
      return stop(out, SweepStatus::kUnreachable, prefix + err);
    const bool resp = cfg.protocol == Config::Protocol::kResp;
    ServerProbe probe = resp ? probe_resp_server(servers.eps[i], cfg.timeout)
                             : probe_server(servers.eps[i], cfg.timeout);
    if (!probe.reachable) return stop(out, SweepStatus::kUnreachable, prefix + probe.error);
    servers.stats_ok[i] = probe.stats_available;
    if (!probe.stats_available && !resp)
      say(hooks, "note: " + (servers.several ? "node " + node.text : std::string("server")) +
                     " /stats unavailable (" + probe.stats_error + "); continuing without it");
    if (servers.several) by_target[node.text] = probe.stats;
    if (i == 0) {
      meta.server_stats_available = probe.stats_available;
      meta.server_stats_error = probe.stats_error;
      meta.server_stats = std::move(probe.stats);
    }
  }
  if (servers.several) meta.server_stats_by_target = std::move(by_target);
  return std::nullopt;
}

// POST /reset to every server whose /stats answered (--protocol resp: FLUSHALL to every server).
// A refused reset ends the run (it would measure a server that still holds data); other failures
// are warnings.
std::optional<SweepStatus> reset_servers(const Config& cfg, const SweepHooks& hooks,
                                         const Servers& servers, SweepResult& out) {
  for (std::size_t i = 0; i < servers.eps.size(); ++i) {
    const bool resp = cfg.protocol == Config::Protocol::kResp;
    if (!servers.stats_ok[i] && !resp) continue;
    const ResetOutcome reset = resp
                                   ? reset_resp_server(servers.eps[i], cfg.timeout, cfg.admin_token)
                                   : reset_server(servers.eps[i], cfg.timeout, cfg.admin_token);
    const std::string node =
        servers.several ? "node " + servers.nodes[i].text + ": " : std::string();
    if (reset.refused) return stop(out, SweepStatus::kAborted, node + reset.error);
    if (!reset.error.empty()) say(hooks, "warning: " + node + reset.error);
  }
  return std::nullopt;
}

// The preload (perf.hh), said on stderr and kept in the metadata; a failed one ends the run.
std::optional<SweepStatus> preload_servers(const Config& cfg, const SweepHooks& hooks, Bench& bench,
                                           SweepResult& out) {
  RunMeta& meta = out.meta;
  const unsigned max_threads =
      *std::max_element(cfg.thread_counts.begin(), cfg.thread_counts.end());
  meta.preload = bench.preload(std::min(max_threads, kMaxPreloadThreads));
  const std::string what = workload_spec(cfg.workload.kind).preload == Preload::kBoardMembers
                               ? " board members (" + std::to_string(cfg.workload.boards) +
                                     " boards x " + std::to_string(cfg.workload.members) + ")"
                               : " keys";
  say(hooks, "preload: " + std::to_string(meta.preload.keys) + what + " in " +
                 std::to_string(meta.preload.seconds) + " s, " +
                 std::to_string(meta.preload.errors) + " errors");
  if (interrupted()) return stop_interrupted(out, "during the preload");
  if (!meta.preload.ok) return stop(out, SweepStatus::kAborted, meta.preload.message);
  return std::nullopt;
}

// One point per thread count, in order; stops at the first that aborts or an interruption.
SweepStatus run_points(const Config& cfg, const Bench& bench, const SweepHooks& hooks,
                       SweepResult& out) {
  for (std::size_t i = 0; i < cfg.thread_counts.size(); ++i) {
    const unsigned threads = cfg.thread_counts[i];
    PointResult point =
        bench.threaded_performance(threads, cfg.duration.count() > 0 ? 0 : cfg.requests_per_thread);
    if (point.interrupted)
      return stop_interrupted(
          out, "during the point with " + std::to_string(threads) + " threads (not recorded)");
    out.points.push_back(std::move(point));
    const PointResult& p = out.points.back();
    if (hooks.point_done) hooks.point_done(p);
    if (p.aborted)
      return stop(out, SweepStatus::kAborted,
                  "point with " + std::to_string(threads) + " threads aborted: " + p.abort_reason);
    if (interrupted() && i + 1 < cfg.thread_counts.size())
      return stop_interrupted(out, "after the point with " + std::to_string(threads) + " threads");
  }
  return SweepStatus::kOk;
}

}  // namespace

SweepStatus run_sweep(const Config& cfg, const std::string& command_line, const SweepHooks& hooks,
                      SweepResult& out) {
  fill_run_meta(cfg, command_line, out.meta);
  Servers servers;
  if (auto ended = probe_servers(cfg, hooks, servers, out)) return *ended;
  Bench bench = servers.several ? Bench(cfg, servers.eps) : Bench(cfg, servers.eps[0]);
  if (!cfg.record_trace_path.empty()) bench.record_into(&out.recorded_trace);
  const bool wants_data = workload_spec(cfg.workload.kind).api != WorkloadApi::kFixedPath;
  // The reset belongs to the preload: --no-preload keeps whatever the server already holds.
  if (wants_data && cfg.preload && cfg.reset) {
    if (auto ended = reset_servers(cfg, hooks, servers, out)) return *ended;
  }
  if (wants_data && cfg.preload && bench.keyspace().preload_count() > 0) {
    if (auto ended = preload_servers(cfg, hooks, bench, out)) return *ended;
  }
  if (interrupted()) return stop_interrupted(out, "before the first point");
  if (hooks.started) hooks.started(out);
  if (!cfg.slo.text.empty()) return run_slo_search(cfg, bench, hooks, out);
  return run_points(cfg, bench, hooks, out);
}

}  // namespace client
