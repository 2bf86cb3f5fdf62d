// Table, JSON and CSV writers (see output.hh).
#include "client/output.hh"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "client/histogram_json.hh"

namespace client {
namespace {

boost::json::value num(double x) {
  if (!std::isfinite(x)) return nullptr;
  return x;
}

// Rounds to 3 decimals so the JSON stays readable (values are us, s, %, ratios).
boost::json::value num3(double x) {
  if (!std::isfinite(x)) return nullptr;
  return std::round(x * 1000.0) / 1000.0;
}

boost::json::object latency_json(const LatencySummary& s) {
  return {{"mean_us", num3(s.mean_us)}, {"min_us", num3(s.min_us)}, {"p50_us", num3(s.p50_us)},
          {"p90_us", num3(s.p90_us)},   {"p95_us", num3(s.p95_us)}, {"p99_us", num3(s.p99_us)},
          {"p999_us", num3(s.p999_us)}, {"max_us", num3(s.max_us)}};
}

template <class Codes>
boost::json::object codes_json(const Codes& errors_by_code) {
  boost::json::object codes;
  for (const auto& [code, n] : errors_by_code) codes[code] = n;
  return codes;
}

// A point's per-second series.
boost::json::array series_json(const std::vector<SeriesPoint>& points) {
  boost::json::array series;
  for (const auto& s : points)
    series.push_back({{"t_s", s.second},
                      {"requests", s.requests},
                      {"throughput_rps", num3(s.throughput_rps)},
                      {"p99_us", num3(s.p99_us)},
                      {"timed_out", s.timed_out},
                      {"unsent", s.unsent}});
  return series;
}

// --targets: each node's share of the point, in --targets order.
boost::json::array nodes_json(const std::vector<NodeResult>& nodes) {
  boost::json::array out;
  for (const NodeResult& n : nodes)
    out.push_back({{"target", n.target},
                   {"requests", n.requests},
                   {"errors", n.errors},
                   {"throughput_rps", num3(n.throughput_rps)},
                   {"latency", latency_json(n.latency)},
                   {"server_cpu_pct", num3(n.server_cpu_pct)},
                   {"errors_by_code", codes_json(n.errors_by_code)},
                   {"histogram", histogram_to_json(n.histogram)}});
  return out;
}

boost::json::object point_json(const PointResult& p) {
  boost::json::object o;
  o["threads"] = p.threads;
  o["connections"] = p.connections;
  o["requests"] = p.requests;
  o["errors"] = p.errors;
  o["duration_s"] = num(std::round(p.duration_s * 1e6) / 1e6);
  o["throughput_rps"] = num3(p.throughput_rps);
  o["mean_us"] = num3(p.latency.mean_us);
  o["min_us"] = num3(p.latency.min_us);
  o["p50_us"] = num3(p.latency.p50_us);
  o["p90_us"] = num3(p.latency.p90_us);
  o["p95_us"] = num3(p.latency.p95_us);
  o["p99_us"] = num3(p.latency.p99_us);
  o["p999_us"] = num3(p.latency.p999_us);
  o["max_us"] = num3(p.latency.max_us);
  o["hit_rate"] = num(p.hit_rate);
  o["server_cpu_pct"] = num3(p.server_cpu_pct);
  o["client_cpu_pct"] = num3(p.client_cpu_pct);
  o["client_cpu_us_per_response"] = num3(p.client_cpu_us_per_response);
  o["verified"] = p.verified;  // answers checked in full (--verify)
  o["gets"] = p.gets;
  o["get_hits"] = p.get_hits;
  o["sets"] = p.sets;
  o["deletes"] = p.deletes;
  o["errors_by_code"] = codes_json(p.errors_by_code);
  o["latency_above_range"] = p.above_range;
  o["open_loop"] = p.open_loop;
  if (p.open_loop) {
    o["target_rps"] = num3(p.target_rps);
    o["rate_sustained"] = p.rate_sustained;
    o["send_lag_p99_us"] = num3(p.send_lag_p99_us);
    o["unsent_planned"] = p.unsent;
    o["uncorrected"] = latency_json(p.uncorrected);
  }
  o["valid"] = p.valid;  // open loop: the achieved rate and the schedule held (--slo counts it)
  if (p.valid)
    o["invalid_reason"] = nullptr;
  else
    o["invalid_reason"] = p.invalid_reason;
  o["series"] = series_json(p.series);
  o["histogram"] = histogram_to_json(p.histogram);
  if (!p.nodes.empty()) o["nodes"] = nodes_json(p.nodes);
  o["aborted"] = p.aborted;
  if (p.aborted) o["abort_reason"] = p.abort_reason;
  return o;
}

boost::json::object meta_json(const SweepResult& r) {
  const RunMeta& m = r.meta;
  boost::json::object o;
  o["tool"] = "bench_client";
  o["tool_version"] = m.tool_version;
  o["date_utc"] = m.date_utc;
  o["git_revision"] = m.git_revision;
  o["command_line"] = m.command_line;
  o["client_host"] = m.client_host;
  o["kernel"] = m.kernel;
  o["cpu_model"] = m.cpu_model;
  boost::json::array cpus;
  for (int c : m.client_cpus) cpus.push_back(c);
  o["client_cpus"] = std::move(cpus);
  o["online_cpus"] = m.online_cpus;
  o["pinning"] = m.pinning;
  o["target"] = m.target;
  o["server_pid"] = m.server_pid;
  if (m.server_pids.size() > 1 || !m.targets.empty()) {
    boost::json::array pids;
    for (int pid : m.server_pids) pids.push_back(pid);
    o["server_pids"] = std::move(pids);
  }
  if (!m.targets.empty()) {
    boost::json::array targets;
    for (const auto& t : m.targets) targets.push_back(boost::json::string(t));
    o["targets"] = std::move(targets);
  }
  o["workload"] = m.workload;
  o["mode"] = m.mode;
  o["server_stats_available"] = m.server_stats_available;
  if (!m.server_stats_available) o["server_stats_error"] = m.server_stats_error;
  o["server_stats"] = m.server_stats;
  if (!m.targets.empty()) o["server_stats_by_target"] = m.server_stats_by_target;
  o["preload"] = {
      {"keys", m.preload.keys}, {"errors", m.preload.errors}, {"seconds", num3(m.preload.seconds)}};
  o["aborted"] = r.aborted;
  if (r.aborted) o["abort_reason"] = r.abort_reason;
  o["interrupted"] = r.interrupted;
  if (!m.merged_from.is_null()) o["merged_from"] = m.merged_from;  // bench_client merge
  return o;
}

boost::json::value optional_num3(const std::optional<double>& x) {
  return x ? num3(*x) : boost::json::value(nullptr);
}

// --slo: the search, or null (docs/client.md, "Capacity at an SLO").
boost::json::value slo_json(const SweepResult& r) {
  if (!r.slo) return nullptr;
  const SloReport& s = *r.slo;
  boost::json::array steps;
  for (const SloStepRecord& st : s.steps) {
    boost::json::object o;
    o["step"] = st.step;
    o["rate_rps"] = num3(st.rate_rps);
    o["achieved_rps"] = num3(st.achieved_rps);
    o["percentile_us"] = num3(st.percentile_us);
    o["valid"] = st.valid;
    if (st.valid)
      o["invalid_reason"] = nullptr;
    else
      o["invalid_reason"] = st.invalid_reason;
    o["meets"] = st.meets;
    o["point"] = st.point;
    steps.push_back(std::move(o));
  }
  return boost::json::object{{"spec", s.spec},
                             {"percentile", s.percentile},
                             {"bound_us", num3(s.bound_us)},
                             {"threads", s.threads},
                             {"connections", s.connections},
                             {"precision", s.precision},
                             {"saturation_rps", num3(s.saturation_rps)},
                             {"top_rps", num3(s.top_rps)},
                             {"steps", std::move(steps)},
                             {"capacity_rps", optional_num3(s.capacity_rps)},
                             {"capacity_percentile_us", optional_num3(s.capacity_percentile_us)},
                             {"conclusion", s.conclusion}};
}

// Doubles in their shortest round-trip form ("0.99", "30"), everything else as Boost.JSON writes
// it.
void write_scalar(std::ostream& os, const boost::json::value& v) {
  if (v.is_double()) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
    os.write(buf, end - buf);
  } else {
    os << boost::json::serialize(v);
  }
}

void write_inline_object(std::ostream& os, const boost::json::object& obj) {
  os << '{';
  bool first = true;
  for (const auto& kv : obj) {
    if (!first) os << ", ";
    first = false;
    os << boost::json::serialize(boost::json::string(kv.key())) << ": ";
    write_scalar(os, kv.value());
  }
  os << '}';
}

void pretty(std::ostream& os, const boost::json::value& v, int indent) {
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  const std::string close_pad(static_cast<std::size_t>(indent), ' ');
  if (v.is_object()) {
    const auto& obj = v.get_object();
    if (obj.empty()) {
      os << "{}";
      return;
    }
    os << "{\n";
    bool first = true;
    for (const auto& kv : obj) {
      if (!first) os << ",\n";
      first = false;
      os << pad << boost::json::serialize(boost::json::string(kv.key())) << ": ";
      pretty(os, kv.value(), indent + 2);
    }
    os << "\n" << close_pad << "}";
  } else if (v.is_array()) {
    const auto& arr = v.get_array();
    if (arr.empty()) {
      os << "[]";
      return;
    }
    // A histogram's [index, count] pairs: all on one line.
    if (std::all_of(arr.begin(), arr.end(), [](const auto& e) { return e.is_array(); })) {
      os << boost::json::serialize(arr);
      return;
    }
    // Arrays of scalars and of small objects (time series) stay on one line per element.
    os << "[\n";
    for (std::size_t i = 0; i < arr.size(); ++i) {
      os << pad;
      if (arr[i].is_object() && arr[i].get_object().size() > 6)
        pretty(os, arr[i], indent + 2);
      else if (arr[i].is_object())
        write_inline_object(os, arr[i].get_object());
      else
        write_scalar(os, arr[i]);
      os << (i + 1 < arr.size() ? ",\n" : "\n");
    }
    os << close_pad << "]";
  } else {
    write_scalar(os, v);
  }
}

std::string fmt(double x, int decimals) {
  if (!std::isfinite(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string csv_num(double x) {
  if (!std::isfinite(x)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

}  // namespace

std::string to_json_text(const SweepResult& result) {
  boost::json::object doc;
  doc["meta"] = meta_json(result);
  boost::json::array points;
  for (const auto& p : result.points) points.push_back(point_json(p));
  doc["points"] = std::move(points);
  doc["slo"] = slo_json(result);
  std::ostringstream os;
  pretty(os, doc, 0);
  os << "\n";
  return os.str();
}

bool write_json(const SweepResult& result, const std::string& path, std::string& err) {
  std::ofstream out(path, std::ios::trunc);
  out << to_json_text(result);
  out.close();
  if (!out) {
    err = "cannot write JSON file '" + path + "'";
    return false;
  }
  return true;
}

bool write_csv(const SweepResult& result, const std::string& path, std::string& err) {
  std::ofstream out(path, std::ios::trunc);
  out << "threads,requests,errors,duration_s,throughput_rps,mean_us,p50_us,p90_us,p95_us,p99_us,"
         "p999_us,max_us,"
         "hit_rate,server_cpu_pct,client_cpu_pct,connections,gets,get_hits,sets,deletes,open_loop,"
         "target_rps,"
         "uncorrected_p50_us,uncorrected_p99_us,uncorrected_p999_us,uncorrected_max_us,rate_"
         "sustained,aborted,"
         "errors_by_code,pipeline,valid,verified,client_cpu_us_per_response\n";
  for (const auto& p : result.points) {
    std::string codes;
    for (const auto& [code, n] : p.errors_by_code) {
      if (!codes.empty()) codes += ';';
      codes += code;
      codes += '=';
      codes += std::to_string(n);
    }
    out << p.threads << ',' << p.requests << ',' << p.errors << ','
        << (std::isfinite(p.duration_s) ? std::to_string(p.duration_s) : std::string()) << ','
        << csv_num(p.throughput_rps) << ',' << csv_num(p.latency.mean_us) << ','
        << csv_num(p.latency.p50_us) << ',' << csv_num(p.latency.p90_us) << ','
        << csv_num(p.latency.p95_us) << ',' << csv_num(p.latency.p99_us) << ','
        << csv_num(p.latency.p999_us) << ',' << csv_num(p.latency.max_us) << ','
        << csv_num(p.hit_rate) << ',' << csv_num(p.server_cpu_pct) << ','
        << csv_num(p.client_cpu_pct) << ',' << p.connections << ',' << p.gets << ',' << p.get_hits
        << ',' << p.sets << ',' << p.deletes << ',' << (p.open_loop ? 1 : 0) << ','
        << (p.open_loop ? csv_num(p.target_rps) : "") << ','
        << (p.open_loop ? csv_num(p.uncorrected.p50_us) : "") << ','
        << (p.open_loop ? csv_num(p.uncorrected.p99_us) : "") << ','
        << (p.open_loop ? csv_num(p.uncorrected.p999_us) : "") << ','
        << (p.open_loop ? csv_num(p.uncorrected.max_us) : "") << ',' << (p.rate_sustained ? 1 : 0)
        << ',' << (p.aborted ? 1 : 0) << ',' << codes << ',' << p.pipeline << ','
        << (p.valid ? 1 : 0) << ',' << p.verified << ',' << csv_num(p.client_cpu_us_per_response)
        << '\n';
  }
  out.close();
  if (!out) {
    err = "cannot write CSV file '" + path + "'";
    return false;
  }
  return true;
}

void write_table_preamble(std::ostream& os, const SweepResult& r) {
  const RunMeta& m = r.meta;
  const auto& w = m.workload.as_object();
  os << "# bench_client " << m.tool_version << "  target " << m.target << "  workload "
     << boost::json::serialize(w.at("name"));
  if (w.contains("boards")) {  // a board workload
    os << "  boards " << boost::json::serialize(w.at("boards")) << "  members "
       << boost::json::serialize(w.at("members"));
    if (const auto* n = w.if_contains("top_n")) os << "  top_n " << boost::json::serialize(*n);
  } else {
    os << "  keys " << boost::json::serialize(w.at("keys"));
  }
  os << "  loop " << boost::json::serialize(m.mode.at("loop"));
  if (const auto* depth = m.mode.as_object().if_contains("pipeline"))
    os << "  pipeline " << boost::json::serialize(*depth);
  if (const auto* protocol = m.mode.as_object().if_contains("protocol");
      protocol != nullptr && *protocol != "http")
    os << "  protocol " << boost::json::serialize(*protocol);
  os << "\n";
  if (m.server_stats_available) {
    os << "# server /stats:";
    const auto& s = m.server_stats.get_object();
    for (const char* k : {"threads", "maxmem", "evictor", "items"})
      if (const auto* v = s.if_contains(k)) os << ' ' << k << '=' << boost::json::serialize(*v);
    os << "\n";
  } else {
    os << "# server /stats unavailable: " << m.server_stats_error << "\n";
  }
}

void write_table_header(std::ostream& os, bool open_loop) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%7s %10s %11s %9s %9s %9s %9s %10s %6s %7s %8s %8s", "threads",
                "requests", "req/s", "p50_us", "p95_us", "p99_us", "p99.9_us", "max_us", "hit%",
                "errors", "srv_cpu%", "cli_cpu%");
  os << buf;
  if (open_loop) os << "  uncorr_p99_us";
  os << "\n";
}

void write_table_row(std::ostream& os, const PointResult& p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%7u %10llu %11s %9s %9s %9s %9s %10s %6s %7llu %8s %8s",
                p.threads, static_cast<unsigned long long>(p.requests),
                fmt(p.throughput_rps, 1).c_str(), fmt(p.latency.p50_us, 1).c_str(),
                fmt(p.latency.p95_us, 1).c_str(), fmt(p.latency.p99_us, 1).c_str(),
                fmt(p.latency.p999_us, 1).c_str(), fmt(p.latency.max_us, 1).c_str(),
                fmt(p.hit_rate * 100.0, 1).c_str(), static_cast<unsigned long long>(p.errors),
                fmt(p.server_cpu_pct, 1).c_str(), fmt(p.client_cpu_pct, 1).c_str());
  os << buf;
  if (p.open_loop) os << "  " << fmt(p.uncorrected.p99_us, 1);
  os << "\n";
  for (const NodeResult& n : p.nodes) {  // --targets: one line per node
    std::snprintf(buf, sizeof buf, "  node %-21s  req/s %11s  p50 %9s  p99 %9s  errors %llu",
                  n.target.c_str(), fmt(n.throughput_rps, 1).c_str(),
                  fmt(n.latency.p50_us, 1).c_str(), fmt(n.latency.p99_us, 1).c_str(),
                  static_cast<unsigned long long>(n.errors));
    os << buf;
    if (std::isfinite(n.server_cpu_pct)) os << "  srv_cpu% " << fmt(n.server_cpu_pct, 1);
    os << "\n";
  }
}

void write_point_notes(std::ostream& os, const PointResult& p) {
  if (!p.errors_by_code.empty()) {
    os << "#   errors by code:";
    for (const auto& [code, n] : p.errors_by_code) os << ' ' << code << '=' << n;
    os << "\n";
  }
  if (p.open_loop && !p.rate_sustained)
    os << "#   warning: target rate " << fmt(p.target_rps, 0) << " req/s not sustained (achieved "
       << fmt(p.throughput_rps, 0) << " req/s, send lag p99 " << fmt(p.send_lag_p99_us, 0)
       << " us, client cpu " << fmt(p.client_cpu_pct, 0) << "%)\n";
  if (p.above_range)
    os << "#   warning: " << p.above_range
       << " latencies exceeded the histogram's 1000 s range (counted, not clamped; a percentile "
          "among them is reported as the maximum)\n";
  if (!p.valid) os << "#   invalid: " << p.invalid_reason << "\n";
  if (p.aborted) os << "#   aborted: " << p.abort_reason << "\n";
}

namespace {
// "p99" of "p99=1ms", the bound's text after '='.
std::string slo_percentile_name(const SloReport& s) {
  return s.spec.substr(0, s.spec.find('='));
}
std::string slo_bound_text(const SloReport& s) {
  const auto eq = s.spec.find('=');
  return eq == std::string::npos ? fmt(s.bound_us, 0) + " us" : s.spec.substr(eq + 1);
}
}  // namespace

void write_slo_step(std::ostream& os, const SloReport& s, const SloStepRecord& step) {
  os << "# slo step " << step.step << ": rate " << fmt(step.rate_rps, 0) << " req/s, achieved "
     << fmt(step.achieved_rps, 0) << " req/s, " << slo_percentile_name(s) << " "
     << fmt(step.percentile_us, 1) << " us: ";
  if (!step.valid)
    os << "invalid (" << step.invalid_reason << ")";
  else
    os << (step.meets ? "meets" : "misses");
  os << "\n";
}

void write_slo_summary(std::ostream& os, const SloReport& s) {
  os << "# slo search: " << s.conclusion << "\n";
  if (s.capacity_rps)
    os << "# slo capacity: " << fmt(*s.capacity_rps, 0) << " req/s at " << slo_percentile_name(s)
       << " <= " << slo_bound_text(s) << " (" << slo_percentile_name(s) << " "
       << fmt(s.capacity_percentile_us.value_or(0), 1) << " us; saturation "
       << fmt(s.saturation_rps, 0) << " req/s, closed loop, " << s.threads << " threads x "
       << s.connections / std::max(1u, s.threads) << " connections)\n";
  else
    os << "# slo capacity: none: " << slo_percentile_name(s) << " <= " << slo_bound_text(s)
       << " was not met by any valid step (saturation " << fmt(s.saturation_rps, 0)
       << " req/s, closed loop)\n";
}

}  // namespace client
