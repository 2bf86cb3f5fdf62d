// Reading bench_client results back and merging runs of several load machines (see merge.hh).
#include "client/merge.hh"

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "client/histogram_json.hh"
#include "client/latency_summary.hh"

namespace client {
namespace {

namespace json = boost::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMaxValueText = 120;  // a differing value is quoted up to this length

// --- reading ---------------------------------------------------------------------------------

// Field access with errors naming the file and the field's path ("points[1].requests").
class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& what) const { throw MergeError(file_ + ": " + what); }

  const json::value& need(const json::object& o, const char* key, const std::string& at) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr) fail(at + key + " is missing");
    return *v;
  }
  const json::object& object(const json::object& o, const char* key, const std::string& at) const {
    const json::value& v = need(o, key, at);
    if (!v.is_object()) fail(at + key + " is not an object");
    return v.get_object();
  }
  std::uint64_t u64(const json::object& o, const char* key, const std::string& at) const {
    return to_u64(need(o, key, at), at + key);
  }
  std::uint64_t u64_or(const json::object& o, const char* key, const std::string& at,
                       std::uint64_t fallback) const {
    const json::value* v = o.if_contains(key);
    return v == nullptr ? fallback : to_u64(*v, at + key);
  }
  std::uint64_t to_u64(const json::value& v, const std::string& what) const {
    if (v.is_uint64()) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
    fail(what + " is not a non-negative integer");
  }
  // A number; null (how the writer spells NaN) reads as NaN.
  double number(const json::object& o, const char* key, const std::string& at) const {
    return to_double(need(o, key, at), at + key);
  }
  double number_or_nan(const json::object& o, const char* key, const std::string& at) const {
    const json::value* v = o.if_contains(key);
    return v == nullptr ? kNaN : to_double(*v, at + key);
  }
  double to_double(const json::value& v, const std::string& what) const {
    if (v.is_null()) return kNaN;
    if (v.is_double()) return v.get_double();
    if (v.is_int64()) return static_cast<double>(v.get_int64());
    if (v.is_uint64()) return static_cast<double>(v.get_uint64());
    fail(what + " is not a number");
  }
  bool boolean(const json::object& o, const char* key, const std::string& at,
               std::optional<bool> fallback = std::nullopt) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr && fallback) return *fallback;
    if (v == nullptr) fail(at + key + " is missing");
    if (!v->is_bool()) fail(at + key + " is not true/false");
    return v->get_bool();
  }
  // Strings of the meta that only describe the run: absent or mistyped reads as "".
  static std::string text(const json::object& o, const char* key) {
    const json::value* v = o.if_contains(key);
    return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
  }
  std::map<std::string, std::uint64_t> codes(const json::object& o, const std::string& at) const {
    std::map<std::string, std::uint64_t> out;
    const json::value* v = o.if_contains("errors_by_code");
    if (v == nullptr) return out;
    if (!v->is_object()) fail(at + "errors_by_code is not an object");
    for (const auto& kv : v->get_object())
      out[std::string(kv.key())] =
          to_u64(kv.value(), at + "errors_by_code." + std::string(kv.key()));
    return out;
  }
  HistogramSnapshot histogram(const json::object& o, const std::string& at) const {
    const json::value* v = o.if_contains("histogram");
    if (v == nullptr || v->is_null())
      fail(at +
           "histogram is missing: the file was written by a bench_client without mergeable "
           "histograms (older than `bench_client merge`); rerun the load with this "
           "bench_client");
    try {
      return histogram_from_json(*v);
    } catch (const std::exception& e) {
      fail(at + e.what());
    }
  }

 private:
  const std::string& file_;
};

LatencySummary read_summary(const Reader& rd, const json::object& o, const std::string& at) {
  LatencySummary s;
  s.mean_us = rd.number_or_nan(o, "mean_us", at);
  s.min_us = rd.number_or_nan(o, "min_us", at);
  s.p50_us = rd.number_or_nan(o, "p50_us", at);
  s.p90_us = rd.number_or_nan(o, "p90_us", at);
  s.p95_us = rd.number_or_nan(o, "p95_us", at);
  s.p99_us = rd.number_or_nan(o, "p99_us", at);
  s.p999_us = rd.number_or_nan(o, "p999_us", at);
  s.max_us = rd.number_or_nan(o, "max_us", at);
  return s;
}

NodeResult read_node(const Reader& rd, const json::value& v, const std::string& at) {
  if (!v.is_object()) rd.fail(at + " is not an object");
  const json::object& o = v.get_object();
  const std::string dot = at + ".";
  NodeResult n;
  const json::value& target = rd.need(o, "target", dot);
  if (!target.is_string()) rd.fail(dot + "target is not a string");
  n.target = std::string(target.get_string());
  n.requests = rd.u64(o, "requests", dot);
  n.errors = rd.u64(o, "errors", dot);
  n.throughput_rps = rd.number(o, "throughput_rps", dot);
  if (const json::value* lat = o.if_contains("latency"); lat != nullptr && lat->is_object())
    n.latency = read_summary(rd, lat->get_object(), dot + "latency.");
  n.server_cpu_pct = rd.number_or_nan(o, "server_cpu_pct", dot);
  n.errors_by_code = rd.codes(o, dot);
  n.histogram = rd.histogram(o, dot);
  return n;
}

// An open-loop point's fields: the planned rate and how well it was kept.
void read_open_loop(const Reader& rd, const json::object& o, const std::string& dot,
                    PointResult& p) {
  p.target_rps = rd.number(o, "target_rps", dot);
  p.rate_sustained = rd.boolean(o, "rate_sustained", dot, true);
  p.send_lag_p99_us = rd.number_or_nan(o, "send_lag_p99_us", dot);
  p.unsent = rd.u64_or(o, "unsent_planned", dot, 0);
  if (const json::value* u = o.if_contains("uncorrected"); u != nullptr && u->is_object())
    p.uncorrected = read_summary(rd, u->get_object(), dot + "uncorrected.");
}

// A point's per-second "series".
std::vector<SeriesPoint> read_series(const Reader& rd, const json::value& series,
                                     const std::string& dot) {
  if (!series.is_array()) rd.fail(dot + "series is not an array");
  std::vector<SeriesPoint> out;
  for (std::size_t i = 0; i < series.get_array().size(); ++i) {
    const std::string sat = dot + "series[" + std::to_string(i) + "].";
    const json::value& e = series.get_array()[i];
    if (!e.is_object()) rd.fail(sat + " is not an object");
    const json::object& so = e.get_object();
    SeriesPoint s;
    const std::uint64_t t = rd.u64(so, "t_s", sat);
    if (t > UINT32_MAX) rd.fail(sat + "t_s is out of range");
    s.second = static_cast<std::uint32_t>(t);
    s.requests = rd.u64(so, "requests", sat);
    s.throughput_rps = rd.number(so, "throughput_rps", sat);
    s.p99_us = rd.number_or_nan(so, "p99_us", sat);
    s.timed_out = rd.u64_or(so, "timed_out", sat, 0);
    s.unsent = rd.u64_or(so, "unsent", sat, 0);
    out.push_back(s);
  }
  return out;
}

PointResult read_point(const Reader& rd, const json::value& v, const std::string& at,
                       unsigned pipeline) {
  if (!v.is_object()) rd.fail(at + " is not an object");
  const json::object& o = v.get_object();
  const std::string dot = at + ".";
  PointResult p;
  p.threads = static_cast<unsigned>(rd.u64(o, "threads", dot));
  p.connections = static_cast<unsigned>(rd.u64(o, "connections", dot));
  p.pipeline = pipeline;
  p.requests = rd.u64(o, "requests", dot);
  p.errors = rd.u64(o, "errors", dot);
  p.duration_s = rd.number(o, "duration_s", dot);
  p.throughput_rps = rd.number(o, "throughput_rps", dot);
  p.latency = read_summary(rd, o, dot);
  p.hit_rate = rd.number_or_nan(o, "hit_rate", dot);
  p.server_cpu_pct = rd.number_or_nan(o, "server_cpu_pct", dot);
  p.client_cpu_pct = rd.number_or_nan(o, "client_cpu_pct", dot);
  p.client_cpu_us_per_response = rd.number_or_nan(o, "client_cpu_us_per_response", dot);
  p.verified = rd.u64_or(o, "verified", dot, 0);  // absent in runs older than --verify
  p.gets = rd.u64(o, "gets", dot);
  p.get_hits = rd.u64(o, "get_hits", dot);
  p.sets = rd.u64(o, "sets", dot);
  p.deletes = rd.u64(o, "deletes", dot);
  p.errors_by_code = rd.codes(o, dot);
  p.above_range = rd.u64_or(o, "latency_above_range", dot, 0);
  p.open_loop = rd.boolean(o, "open_loop", dot);
  p.valid = rd.boolean(o, "valid", dot, true);  // absent in runs older than the field
  if (const json::value* r = o.if_contains("invalid_reason"); r != nullptr && r->is_string())
    p.invalid_reason = r->get_string().c_str();
  if (p.open_loop) read_open_loop(rd, o, dot, p);
  if (const json::value* series = o.if_contains("series")) p.series = read_series(rd, *series, dot);
  p.histogram = rd.histogram(o, dot);
  if (const json::value* nodes = o.if_contains("nodes")) {
    if (!nodes->is_array()) rd.fail(dot + "nodes is not an array");
    for (std::size_t i = 0; i < nodes->get_array().size(); ++i)
      p.nodes.push_back(
          read_node(rd, nodes->get_array()[i], dot + "nodes[" + std::to_string(i) + "]"));
  }
  p.aborted = rd.boolean(o, "aborted", dot, false);
  p.abort_reason = Reader::text(o, "abort_reason");
  return p;
}

// The metadata's servers: the target, the server PIDs and the --targets nodes.
void read_servers(const Reader& rd, const json::object& o, RunMeta& m) {
  const json::value& target = rd.need(o, "target", "meta.");
  if (!target.is_string()) rd.fail("meta.target is not a string");
  m.target = std::string(target.get_string());
  if (const json::value* pid = o.if_contains("server_pid"); pid != nullptr && pid->is_int64())
    m.server_pid = static_cast<int>(pid->get_int64());
  if (const json::value* pids = o.if_contains("server_pids"); pids != nullptr && pids->is_array())
    for (const auto& pid : pids->get_array())
      if (pid.is_int64()) m.server_pids.push_back(static_cast<int>(pid.get_int64()));
  if (const json::value* targets = o.if_contains("targets")) {
    if (!targets->is_array()) rd.fail("meta.targets is not an array");
    for (const auto& t : targets->get_array()) {
      if (!t.is_string()) rd.fail("meta.targets holds a non-string");
      m.targets.emplace_back(t.get_string());
    }
  }
}

// A merged file's "merged_from", checked: one object with four strings per run.
json::value merged_from(const Reader& rd, const json::value& from) {
  if (!from.is_array()) rd.fail("meta.merged_from is not an array");
  for (const auto& e : from.get_array()) {
    const json::object* eo = e.if_object();
    if (eo == nullptr) rd.fail("meta.merged_from holds a non-object");
    for (const char* k : {"file", "client_host", "date_utc", "command_line"})
      if (!rd.need(*eo, k, "meta.merged_from[].").is_string())
        rd.fail(std::string("meta.merged_from[].") + k + " is not a string");
  }
  return from;
}

void read_meta(const Reader& rd, const json::object& o, RunMeta& m, SweepResult& r) {
  const std::string at = "meta.";
  const json::value* tool = o.if_contains("tool");
  if (tool == nullptr || !tool->is_string() || tool->get_string() != "bench_client")
    rd.fail("meta.tool is not \"bench_client\": not a bench_client result");
  m.tool_version = Reader::text(o, "tool_version");
  m.date_utc = Reader::text(o, "date_utc");
  m.git_revision = Reader::text(o, "git_revision");
  m.command_line = Reader::text(o, "command_line");
  m.client_host = Reader::text(o, "client_host");
  m.kernel = Reader::text(o, "kernel");
  m.cpu_model = Reader::text(o, "cpu_model");
  if (const json::value* cpus = o.if_contains("client_cpus"); cpus != nullptr && cpus->is_array())
    for (const auto& c : cpus->get_array())
      if (c.is_int64()) m.client_cpus.push_back(static_cast<int>(c.get_int64()));
  m.online_cpus = static_cast<unsigned>(rd.u64_or(o, "online_cpus", at, 0));
  m.pinning = Reader::text(o, "pinning");
  read_servers(rd, o, m);
  if (const json::value* by = o.if_contains("server_stats_by_target"))
    m.server_stats_by_target = *by;
  // What the comparison and the table need: a workload with a name and keys, a mode with a loop.
  const json::object& workload = rd.object(o, "workload", at);
  for (const char* k : {"name", "keys"}) rd.need(workload, k, "meta.workload.");
  m.workload = workload;
  const json::object& mode = rd.object(o, "mode", at);
  rd.need(mode, "loop", "meta.mode.");
  m.mode = mode;
  m.server_stats = o.contains("server_stats") ? o.at("server_stats") : json::value();
  m.server_stats_available =
      rd.boolean(o, "server_stats_available", at, false) && m.server_stats.is_object();
  m.server_stats_error = Reader::text(o, "server_stats_error");
  if (const json::value* pre = o.if_contains("preload"); pre != nullptr && pre->is_object()) {
    m.preload.keys = rd.u64_or(pre->get_object(), "keys", "meta.preload.", 0);
    m.preload.errors = rd.u64_or(pre->get_object(), "errors", "meta.preload.", 0);
    m.preload.seconds = rd.number_or_nan(pre->get_object(), "seconds", "meta.preload.");
  }
  r.aborted = rd.boolean(o, "aborted", at, false);
  r.abort_reason = Reader::text(o, "abort_reason");
  r.interrupted = rd.boolean(o, "interrupted", at, false);
  if (const json::value* from = o.if_contains("merged_from"))
    m.merged_from = merged_from(rd, *from);
}

// --- comparing -------------------------------------------------------------------------------

std::string quote(const json::value* v) {
  if (v == nullptr) return "nothing (absent)";
  std::string s = json::serialize(*v);
  if (s.size() > kMaxValueText) s = s.substr(0, kMaxValueText) + "...";
  return s;
}

// The first path at which a and b differ (objects member by member; arrays and scalars whole),
// with both values; nullopt when equal.
struct Difference {
  std::string path;
  std::string a, b;
};
std::optional<Difference> first_difference(const json::value* a, const json::value* b,
                                           const std::string& path) {
  if (a != nullptr && b != nullptr && a->is_object() && b->is_object()) {
    const json::object& oa = a->get_object();
    const json::object& ob = b->get_object();
    for (const auto& kv : oa)
      if (auto d = first_difference(&kv.value(), ob.if_contains(kv.key()),
                                    path + "." + std::string(kv.key())))
        return d;
    for (const auto& kv : ob)
      if (!oa.contains(kv.key()))
        return Difference{path + "." + std::string(kv.key()), quote(nullptr), quote(&kv.value())};
    return std::nullopt;
  }
  if (a != nullptr && b != nullptr && *a == *b) return std::nullopt;
  return Difference{path, quote(a), quote(b)};
}

[[noreturn]] void refuse(const std::string& field, const LoadedRun& a, const std::string& va,
                         const LoadedRun& b, const std::string& vb) {
  throw MergeError(field + " differs: " + a.file + " has " + va + ", " + b.file + " has " + vb +
                   " (only runs of the same configuration can be merged)");
}

void check_same_configuration(const LoadedRun& a, const LoadedRun& b) {
  const RunMeta& ma = a.result.meta;
  const RunMeta& mb = b.result.meta;
  if (auto d = first_difference(&ma.workload, &mb.workload, "meta.workload"))
    refuse(d->path, a, d->a, b, d->b);
  if (auto d = first_difference(&ma.mode, &mb.mode, "meta.mode")) refuse(d->path, a, d->a, b, d->b);
  if (ma.target != mb.target)
    refuse("meta.target", a, json::serialize(json::string(ma.target)), b,
           json::serialize(json::string(mb.target)));
  if (ma.targets != mb.targets) {
    auto list = [](const std::vector<std::string>& v) {
      json::array arr;
      for (const auto& t : v) arr.emplace_back(t);
      return v.empty() ? std::string("none") : json::serialize(arr);
    };
    refuse("meta.targets", a, list(ma.targets), b, list(mb.targets));
  }
  const auto& pa = a.result.points;
  const auto& pb = b.result.points;
  if (pa.size() != pb.size())
    refuse("the number of points", a, std::to_string(pa.size()), b, std::to_string(pb.size()));
  for (std::size_t i = 0; i < pa.size(); ++i) {
    const std::string at = "points[" + std::to_string(i) + "].";
    if (pa[i].threads != pb[i].threads)
      refuse(at + "threads", a, std::to_string(pa[i].threads), b, std::to_string(pb[i].threads));
    if (pa[i].connections != pb[i].connections)
      refuse(at + "connections", a, std::to_string(pa[i].connections), b,
             std::to_string(pb[i].connections));
    if (pa[i].pipeline != pb[i].pipeline)
      refuse(at + "pipeline", a, std::to_string(pa[i].pipeline), b, std::to_string(pb[i].pipeline));
    if (pa[i].open_loop != pb[i].open_loop)
      refuse(at + "open_loop", a, pa[i].open_loop ? "true" : "false", b,
             pb[i].open_loop ? "true" : "false");
    if (pa[i].nodes.size() != pb[i].nodes.size())
      refuse(at + "nodes (their number)", a, std::to_string(pa[i].nodes.size()), b,
             std::to_string(pb[i].nodes.size()));
    for (std::size_t n = 0; n < pa[i].nodes.size(); ++n)
      if (pa[i].nodes[n].target != pb[i].nodes[n].target)
        refuse(at + "nodes[" + std::to_string(n) + "].target", a, pa[i].nodes[n].target, b,
               pb[i].nodes[n].target);
  }
}

// --- merging ---------------------------------------------------------------------------------

// The largest finite value; NaN when none is finite.
double max_finite(double acc, double x) {
  if (!std::isfinite(x)) return acc;
  return std::isfinite(acc) ? std::max(acc, x) : x;
}

void add_codes(std::map<std::string, std::uint64_t>& into,
               const std::map<std::string, std::uint64_t>& from) {
  for (const auto& [code, n] : from) into[code] += n;
}

LatencySummary unknown_summary() {
  return LatencySummary{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
}

// Adds one run's point p (from `file`) to the merged counts, flags and series of out.
void add_point(PointResult& out, const PointResult& p, const std::string& file,
               std::map<std::uint32_t, SeriesPoint>& series) {
  out.requests += p.requests;
  out.errors += p.errors;
  out.duration_s = std::max(out.duration_s, p.duration_s);
  out.throughput_rps += p.throughput_rps;  // the machines ran at the same time
  out.gets += p.gets;
  out.get_hits += p.get_hits;
  out.sets += p.sets;
  out.deletes += p.deletes;
  add_codes(out.errors_by_code, p.errors_by_code);
  out.server_cpu_pct = max_finite(out.server_cpu_pct, p.server_cpu_pct);
  out.client_cpu_pct += p.client_cpu_pct;  // a NaN (not sampled) anywhere stays NaN
  out.verified += p.verified;
  if (p.open_loop) {
    out.target_rps += p.target_rps;
    out.rate_sustained = out.rate_sustained && p.rate_sustained;
    out.unsent += p.unsent;
  }
  if (!p.valid && out.valid) {  // a merged point is valid when every machine's point is
    out.valid = false;
    out.invalid_reason = file + ": " + p.invalid_reason;
  }
  for (const SeriesPoint& s : p.series) {
    SeriesPoint& m = series[s.second];
    m.second = s.second;
    m.requests += s.requests;
    m.throughput_rps += s.throughput_rps;
    m.timed_out += s.timed_out;
    m.unsent += s.unsent;
    m.p99_us = kNaN;  // percentiles of the second were not kept: never averaged
  }
  if (p.aborted && !out.aborted) {
    out.aborted = true;
    out.abort_reason = file + ": " + p.abort_reason;
  }
}

// Node n of point i, merged over the runs (hist: scratch).
NodeResult merge_node(const std::vector<LoadedRun>& runs, std::size_t i, std::size_t n,
                      Histogram& hist) {
  NodeResult node;
  node.target = runs.front().result.points[i].nodes[n].target;
  node.server_cpu_pct = kNaN;
  hist.reset();
  for (const LoadedRun& run : runs) {
    const NodeResult& in = run.result.points[i].nodes[n];
    hist.merge(in.histogram);
    node.requests += in.requests;
    node.errors += in.errors;
    node.throughput_rps += in.throughput_rps;
    add_codes(node.errors_by_code, in.errors_by_code);
    node.server_cpu_pct = max_finite(node.server_cpu_pct, in.server_cpu_pct);
  }
  node.latency = summarize(hist);
  node.histogram = hist.snapshot();
  return node;
}

PointResult merge_point(const std::vector<LoadedRun>& runs, std::size_t i) {
  const PointResult& first = runs.front().result.points[i];
  PointResult out;
  out.threads = first.threads;
  out.connections = first.connections;
  out.pipeline = first.pipeline;
  out.open_loop = first.open_loop;
  out.server_cpu_pct = kNaN;
  out.rate_sustained = true;
  auto hist = std::make_unique<Histogram>();  // 34 KiB: not on the stack
  std::map<std::uint32_t, SeriesPoint> series;
  double client_cpu_us = 0;
  for (const LoadedRun& run : runs) {
    const PointResult& p = run.result.points[i];
    hist->merge(p.histogram);
    add_point(out, p, run.file, series);
    // The machines' CPU time summed (a NaN anywhere stays NaN), per request of the merged point.
    client_cpu_us += p.client_cpu_us_per_response * static_cast<double>(p.requests);
  }
  // The same code path as a run's point (perf.cc): summary, snapshot and above-range count of the
  // one histogram.
  out.latency = summarize(*hist);
  out.histogram = hist->snapshot();
  out.above_range = hist->above_range();
  out.hit_rate =
      out.gets > 0 ? static_cast<double>(out.get_hits) / static_cast<double>(out.gets) : kNaN;
  out.client_cpu_us_per_response =
      out.requests > 0 ? client_cpu_us / static_cast<double>(out.requests) : kNaN;
  if (out.open_loop) {
    // Only the corrected histogram is in the JSON: these cannot be merged exactly.
    out.uncorrected = unknown_summary();
    out.send_lag_p99_us = kNaN;
  }
  for (auto& [second, s] : series) out.series.push_back(s);
  for (std::size_t n = 0; n < first.nodes.size(); ++n)
    out.nodes.push_back(merge_node(runs, i, n, *hist));
  return out;
}

json::object merged_from_entry(const LoadedRun& run) {
  const RunMeta& m = run.result.meta;
  return {{"file", run.file},
          {"client_host", m.client_host},
          {"date_utc", m.date_utc},
          {"command_line", m.command_line}};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MergeError(path + ": cannot be read (" + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw MergeError(path + ": cannot be read");
  return ss.str();
}

}  // namespace

LoadedRun read_run(const std::string& text, const std::string& file) {
  LoadedRun run;
  run.file = file;
  Reader rd(run.file);
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec) rd.fail("not valid JSON (" + ec.message() + ")");
  if (!doc.is_object()) rd.fail("not a bench_client result (the document is not an object)");
  const json::object& o = doc.get_object();
  read_meta(rd, rd.object(o, "meta", ""), run.result.meta, run.result);
  const json::value& points = rd.need(o, "points", "");
  if (!points.is_array()) rd.fail("points is not an array");
  unsigned pipeline = 1;
  if (const json::value* depth = run.result.meta.mode.get_object().if_contains("pipeline"))
    pipeline = static_cast<unsigned>(rd.to_u64(*depth, "meta.mode.pipeline"));
  for (std::size_t i = 0; i < points.get_array().size(); ++i)
    run.result.points.push_back(
        read_point(rd, points.get_array()[i], "points[" + std::to_string(i) + "]", pipeline));
  return run;
}

LoadedRun read_run_file(const std::string& path) {
  return read_run(read_file(path), path);
}

SweepResult merge_runs(const std::vector<LoadedRun>& runs, const std::string& command_line) {
  if (runs.size() < 2)
    throw MergeError("merging needs at least two results, got " + std::to_string(runs.size()));
  for (std::size_t r = 1; r < runs.size(); ++r) check_same_configuration(runs.front(), runs[r]);

  SweepResult out;
  // Fields not compared (they describe one load machine, or the server as one machine saw it
  // before its run) are the first input's; each input's host, date and command line are in
  // merged_from.
  out.meta = runs.front().result.meta;
  out.meta.command_line = command_line;
  json::array from;
  for (const LoadedRun& run : runs) {
    // An input that is itself a merge contributes the runs it was made of.
    if (run.result.meta.merged_from.is_array())
      for (const auto& e : run.result.meta.merged_from.get_array()) from.push_back(e);
    else
      from.push_back(merged_from_entry(run));
  }
  std::string hosts, earliest;
  std::set<std::string> seen;
  for (const auto& e : from) {
    const json::object* eo = e.if_object();
    if (eo == nullptr) continue;
    const std::string host = Reader::text(*eo, "client_host");
    if (seen.insert(host).second) hosts += (hosts.empty() ? "" : ",") + host;
    const std::string date = Reader::text(*eo, "date_utc");
    if (!date.empty() && (earliest.empty() || date < earliest)) earliest = date;
  }
  out.meta.client_host = hosts;
  if (!earliest.empty()) out.meta.date_utc = earliest;
  out.meta.merged_from = std::move(from);
  for (const LoadedRun& run : runs) {
    if (run.result.aborted && !out.aborted) {
      out.aborted = true;
      out.abort_reason = run.file + ": " + run.result.abort_reason;
    }
    out.interrupted = out.interrupted || run.result.interrupted;
  }
  for (std::size_t i = 0; i < runs.front().result.points.size(); ++i)
    out.points.push_back(merge_point(runs, i));
  return out;
}

MergeCliOutcome parse_merge_args(const std::vector<std::string>& args, MergeOptions& opts,
                                 std::string& error) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") return MergeCliOutcome::kHelp;
    if (a == "-q" || a == "--quiet") {
      opts.quiet = true;
    } else if (a == "--json" || a == "--csv") {
      if (i + 1 >= args.size() || args[i + 1].empty()) {
        error = "merge: " + a + " needs a file name";
        return MergeCliOutcome::kError;
      }
      (a == "--json" ? opts.json_path : opts.csv_path) = args[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      error = "merge: unknown option '" + a + "' (see bench_client merge --help)";
      return MergeCliOutcome::kError;
    } else {
      opts.inputs.push_back(a);
    }
  }
  if (opts.inputs.size() < 2) {
    error =
        "merge: needs at least two result files (bench_client merge A.json B.json ... "
        "[--json OUT]), got " +
        std::to_string(opts.inputs.size());
    return MergeCliOutcome::kError;
  }
  return MergeCliOutcome::kRun;
}

std::string merge_help_text() {
  return R"(Usage: bench_client merge A.json B.json [C.json ...] [--json OUT.json] [--csv OUT.csv] [-q]

Combines the JSON results of bench_client runs made at the same time from several load machines,
with the same configuration against the same server(s), into the result one run making all their
requests would have given. Percentiles come from the summed histograms each point carries (never
from averaging percentiles); requests, errors and operation counts are summed; throughput and
client CPU are summed (the machines ran concurrently); duration is the longest; server CPU is the
largest value seen by one machine (not summed). What the JSON has no histogram for (open loop:
uncorrected latency and send lag; the per-second p99) is written as null.

Compared, and refused when they differ: meta.workload, meta.mode (loop, requests, duration, rate
per machine, warm-up, connections, pipeline, timeout, thread counts, preload, reset), meta.target,
meta.targets, the number of points and each point's threads, connections and open_loop (and node
targets). Not compared: client host, date, git revision, CPU model, pinning, command line, server
pid, server /stats (the merged meta holds the first input's; meta.merged_from lists every input's
file, client_host, date_utc and command_line).

      --json FILE               write the merged result to FILE (the shape of a run's --json, plus
                                meta.merged_from)
      --csv FILE                write one CSV row per merged point to FILE
  -q, --quiet                   no table on stdout (with neither --json nor --csv: only check that
                                the files can be merged)
  -h, --help                    this text

Exit status: 0 merged; 1 bad flags (also fewer than two files); 4 an output file could not be
written; 5 the files cannot be merged (unreadable, not bench_client JSON, no histograms because an
older bench_client wrote them, or configurations that differ: the message names the field and the
two files).
)";
}

}  // namespace client
