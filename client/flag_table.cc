// bench_client's flag table (see flag_table.hh) and the parsers of its values: each row holds all
// that is known of one flag, in the order --help lists them. The errors' texts are the ones other
// tools match; the rules between flags are cli.cc's (finish_config).
#include "client/flag_table.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <type_traits>

#include "client/histogram.hh"
#include "client/workload.hh"
#include "common/duration.hh"

namespace client {

bool GivenFlags::has(std::string_view long_name) const {
  return std::find(in_order.begin(), in_order.end(), long_name) != in_order.end();
}

std::string GivenFlags::last_of(std::string_view a, std::string_view b) const {
  const auto last = std::find_if(in_order.rbegin(), in_order.rend(),
                                 [&](const std::string& name) { return name == a || name == b; });
  return last == in_order.rend() ? std::string() : *last;
}

std::string FlagRow::long_name() const {
  return names.substr(names.rfind(',') + 1);
}

std::string FlagRow::short_name() const {
  const auto comma = names.find(',');
  return comma == std::string::npos ? std::string() : names.substr(0, comma);
}

namespace {

constexpr std::uint64_t kMaxKeys = 1'000'000'000;
constexpr std::uint32_t kMaxValueLimit = 64u * 1024 * 1024;
constexpr std::chrono::nanoseconds kMaxRunTime = std::chrono::seconds(1'000'000);  // -d, --warmup

// A request that times out is recorded at the time it waited, a little above --timeout (it is
// noticed at the next wake-up): the histogram's range must hold the longest timeout with room.
static_assert(std::chrono::nanoseconds(Config::kMaxTimeout).count() * 3 / 2 <
                  static_cast<std::int64_t>(Histogram::kMaxTrackableNs),
              "--timeout's upper bound must lie well inside the latency histogram's range");

template <typename T>
std::optional<T> parse_int(const std::string& s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// `s` as an integer in [min, max] into `out`; false (out unchanged) otherwise.
template <typename T>
bool int_in(const std::string& s, T& out, T min, T max) {
  const auto n = parse_int<T>(s);
  if (!n || *n < min || *n > max) return false;
  out = *n;
  return true;
}

std::optional<double> parse_double(const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

// `s` as a finite number with min < value <= max (min <= value with `min_included`) into `out`.
bool double_in(const std::string& s, double& out, double min, double max, bool min_included) {
  const auto d = parse_double(s);
  if (!d || *d > max || *d < min || (*d == min && !min_included)) return false;
  out = *d;
  return true;
}

// The part of Config a field pointer points into: Config itself, its workload or its --slo.
template <class Part>
Part& part_of(Config& c) {
  if constexpr (std::is_same_v<Part, WorkloadConfig>) {
    return c.workload;
  } else if constexpr (std::is_same_v<Part, SloConfig>) {
    return c.slo;
  } else {
    return c;
  }
}
template <class Member>
struct MemberOf;
template <class Part, class T>
struct MemberOf<T Part::*> {
  using part = Part;
  using type = T;
};

// A row's parser that stores an integer in [Min, Max] in `Field` (&Config::port, ...).
template <auto Field, auto Min, auto Max>
bool int_field(Config& c, GivenFlags&, const std::string& v) {
  using Member = MemberOf<decltype(Field)>;
  using T = typename Member::type;
  return int_in<T>(v, part_of<typename Member::part>(c).*Field, T(Min), T(Max));
}

enum class Text { kAny, kNonEmpty };  // whether a text field may be ""

// A row's parser that stores its value as it is in `Field` (&Config::json_path, ...).
template <auto Field, Text Allowed = Text::kAny>
bool text_field(Config& c, GivenFlags&, const std::string& v) {
  c.*Field = v;
  return Allowed == Text::kAny || !v.empty();
}

enum class Bound { kIncluded, kExcluded };  // whether a number field's Min is a valid value

// A row's parser that stores a finite number in [Min, Max] (Min excluded: (Min, Max]) in `Field`.
template <auto Field, double Min, double Max, Bound MinBound = Bound::kIncluded>
bool number_field(Config& c, GivenFlags&, const std::string& v) {
  using Part = typename MemberOf<decltype(Field)>::part;
  return double_in(v, part_of<Part>(c).*Field, Min, Max, MinBound == Bound::kIncluded);
}

// "1,2,4": each item an integer that `valid` accepts; no empty item.
template <typename T, typename Valid>
bool list_of(const std::string& s, std::vector<T>& out, Valid valid) {
  std::vector<T> items;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ',')) {
    auto v = parse_int<T>(item);
    if (!v || !valid(*v)) return false;
    items.push_back(*v);
  }
  if (items.empty() || s.back() == ',') return false;
  out = std::move(items);
  return true;
}

// A duration flag (common/duration.hh: "500ms", "2s", "0.5s"); `bare` keeps the meaning the flag's
// bare numbers had before units existed. nullopt unless min <= value <= max.
std::optional<std::chrono::nanoseconds> parse_duration_in(const std::string& s,
                                                          common::BareUnit bare,
                                                          std::chrono::nanoseconds min,
                                                          std::chrono::nanoseconds max) {
  const auto d = common::parse_duration(s, bare);
  if (!d || *d < min || *d > max) return std::nullopt;
  return d;
}

// One entry of --targets, HOST:PORT, split at its last ':' (as nginx splits a server line's
// name); the host as --host takes it, the port as --port. Returns the error, or "".
std::string parse_target(const std::string& item, Config::Target& t) {
  const auto colon = item.rfind(':');
  if (colon == std::string::npos || colon == 0) return "'" + item + "' is not HOST:PORT";
  t.text = item;
  t.host = item.substr(0, colon);
  if (t.host.find_first_of(":[]") != std::string::npos)
    return "'" + item +
           "': IPv6 hosts are not supported by --targets (use an IPv4 address or a "
           "host name)";
  const auto port = parse_int<std::uint16_t>(item.substr(colon + 1));
  if (!port || *port == 0) return "'" + item + "' has no port 1..65535";
  t.port = *port;
  return {};
}

// --targets HOST:PORT[,HOST:PORT...]. Returns the error, or "".
std::string parse_targets(const std::string& s, std::vector<Config::Target>& out) {
  out.clear();
  if (s.empty() || s.back() == ',') return "an empty entry in '" + s + "'";
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) return "an empty entry in '" + s + "'";
    Config::Target t;
    if (std::string why = parse_target(item, t); !why.empty()) return why;
    for (const auto& other : out)
      if (other.text == t.text) return "'" + item + "' is given twice";
    out.push_back(std::move(t));
    if (out.size() > Config::kMaxTargets) return "more than 64 targets";
  }
  return {};
}

// --admin-token-file FILE: the token is the file's bytes with trailing whitespace trimmed, as the
// server reads its own (docs/server.md, "Security model"). Returns the error, or "".
std::string read_admin_token(const std::string& path, std::string& token) {
  constexpr std::size_t kMaxTokenBytes = 4096;  // the server's limit
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return "cannot read --admin-token-file '" + path + "': it is a directory";
  std::ifstream in(path, std::ios::binary);
  std::string text;
  if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) return "cannot read --admin-token-file '" + path + "'";
  text.erase(text.find_last_not_of(" \t\r\n\v\f") + 1);
  if (text.empty()) return "--admin-token-file '" + path + "' is empty";
  if (text.size() > kMaxTokenBytes) return "--admin-token-file '" + path + "' is too long";
  if (std::any_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f;
      }))
    return "--admin-token-file '" + path + "' holds whitespace or control bytes inside the token";
  token = std::move(text);
  return {};
}

// --warmup N | DURATION: "2s", "500ms" is a time; a bare number counts requests.
bool parse_warmup(const std::string& v, Config& cfg) {
  if (!v.empty() && v.back() == 's') {
    auto d =
        parse_duration_in(v, common::BareUnit::required, std::chrono::nanoseconds(0), kMaxRunTime);
    if (!d) return false;
    cfg.warmup_time = *d;
    cfg.warmup_requests = 0;
    return true;
  }
  auto n = parse_int<std::uint64_t>(v);
  if (!n) return false;
  cfg.warmup_requests = *n;
  cfg.warmup_time = std::chrono::nanoseconds(0);
  return true;
}

// --slo pP=BOUND: P in (0, 100), BOUND a duration ("1ms", "0.5s", "500us"; a bare number is us).
bool parse_slo(const std::string& text, SloConfig& slo) {
  const auto eq = text.find('=');
  if (text.size() < 4 || text[0] != 'p' || eq == std::string::npos) return false;
  const auto p = parse_double(text.substr(1, eq - 1));
  if (!p || *p <= 0 || *p >= 100) return false;
  std::string bound = text.substr(eq + 1);
  std::optional<std::chrono::nanoseconds> d;
  const bool micro = bound.size() > 2 && bound.ends_with("us");
  if (micro || (!bound.empty() && std::isdigit(static_cast<unsigned char>(bound.back())))) {
    if (micro) bound.resize(bound.size() - 2);
    d = common::parse_duration(bound + "ms", common::BareUnit::required);  // us = ms / 1000
    if (d) *d /= 1000;
  } else {
    d = common::parse_duration(bound, common::BareUnit::required);
  }
  if (!d || d->count() <= 0 || *d > std::chrono::nanoseconds(Config::kMaxTimeout)) return false;
  slo.text = text;
  slo.percentile = *p;
  slo.bound = *d;
  return true;
}

// --ratio G:S:D: three non-negative weights, not all 0.
std::optional<OpRatio> parse_ratio(const std::string& v) {
  std::vector<double> parts;
  std::istringstream in(v);
  std::string item;
  while (std::getline(in, item, ':')) {
    auto d = parse_double(item);
    if (!d || *d < 0) return std::nullopt;
    parts.push_back(*d);
  }
  if (parts.size() != 3 || parts[0] + parts[1] + parts[2] <= 0) return std::nullopt;
  return OpRatio{parts[0], parts[1], parts[2]};
}

bool any_workload(const WorkloadSpec&) {
  return true;
}

// --workload's help, from the workload table: the names (the default marked), then each row's
// text, the board rows after the paragraph they share.
std::string workload_help() {
  constexpr std::size_t kTextWidth = kHelpWidth - kHelpColumn;
  std::string out, line;
  for (const WorkloadSpec& w : workload_specs()) {
    std::string name = w.name;
    if (w.kind == WorkloadConfig{}.kind) name += " (default)";
    if (!line.empty() && line.size() + 3 + name.size() + 2 > kTextWidth) {
      out += line + " |\n";
      line.clear();
    }
    line += (line.empty() ? "" : " | ") + name;
  }
  out += line;
  bool boards = false;
  for (const WorkloadSpec& w : workload_specs()) {
    if (w.api == WorkloadApi::kBoards && !boards) {
      boards = true;
      out +=
          "\nLeaderboards (board i is b<i>, member j is m<j>; uniform choice\n"
          "of board and member; reads need the preload, which PUTs every\n"
          "member of every board once):";
    }
    std::string text = w.help;
    for (auto nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', nl + 1))
      text.insert(nl + 1, "       ");
    out += "\n  " + std::string(w.name) + ": " + text;
  }
  return out;
}

using Given = GivenFlags;  // the rows' parsers are one line each where they can be
using Value = const std::string&;

constexpr const char* kTargetsExpected = "1..64 distinct HOST:PORT separated by commas";

constexpr const char* kTarget = "Target";
constexpr const char* kSweep = "Sweep and load";
constexpr const char* kSlo = "Capacity at an SLO";
constexpr const char* kWorkload = "Workload";
constexpr const char* kChecking = "Answer checking";
constexpr const char* kOutput = "Output";

// The table: one row per flag, in --help order (flag_table.hh says what each field is).
const std::vector<FlagRow> kFlags = {
    // Target
    {kTarget, "-s,--host", "HOST", "server address", "127.0.0.1", "a host",
     "a host name or address", text_field<&Config::host, Text::kNonEmpty>},
    {kTarget, "-p,--port", "PORT", "server port", "8080", "a port", "a port 1..65535",
     int_field<&Config::port, 1, 65535>},
    {kTarget, "--protocol", "http|resp",
     "what the key workloads speak: HTTP/1.1 (/key/K), or the Redis\n"
     "protocol, RESP2 (GET, SET [EX --ttl], DEL) to cache_server's\n"
     "RESP port or Redis; a nil reply counts as a miss (404). With\n"
     "resp: no /stats (the metadata's server fields stay empty), the\n"
     "reset before the preload is FLUSHALL; not with the board\n"
     "workloads or fixed-get",
     "http", "a protocol", "http or resp",
     [](Config& c, Given&, Value v) {
       if (v != "http" && v != "resp") return false;
       c.protocol = v == "resp" ? Config::Protocol::kResp : Config::Protocol::kHttp;
       return true;
     }},
    {kTarget, "--targets", "HOST:PORT[,HOST:PORT...]",
     "1..64 nodes of a consistent-hash cluster instead of --host/--port:\n"
     "each request goes straight to the node nginx's `hash $cache_key\n"
     "consistent` would pick (key K of /key/K, board name B of\n"
     "/board/B/...); results per node and merged. Each thread opens\n"
     "--connections-per-thread connections to every node; one request\n"
     "per write (--pipeline is the depth per connection). Not with\n"
     "fixed-get; IPv4 addresses or names only (no IPv6)",
     "", "HOST:PORT[,HOST:PORT...]", kTargetsExpected,
     [](Config& c, Given&, Value v) {
       if (const std::string why = parse_targets(v, c.targets); !why.empty())
         throw FlagError("invalid value '" + v + "' for --targets: " + why + " (expected " +
                         kTargetsExpected + ")");
       return true;
     }},
    {kTarget, "--target-weight", "W",
     "nginx's weight= of every node, 1..100; must equal the weight=\n"
     "in the nginx upstream's server lines, as scripts/cluster.sh's\n"
     "weight=10",
     "10", "a weight", "a weight 1..100",
     int_field<&Config::target_weight, 1, Config::kMaxTargetWeight>},
    {kTarget, "--server-pid", "PID[,PID...]",
     "sample the server's CPU % from its CPU clock; several PIDs:\n"
     "their CPU is summed (e.g. nginx workers); with --targets:\n"
     "one PID per target, in --targets order, for per-node CPU",
     "off", "a pid", "a positive pid, or a comma-separated list of them",
     [](Config& c, Given&, Value v) {
       return list_of<int>(v, c.server_pids, [](int pid) { return pid > 0; });
     }},
    {kTarget, "--admin-token-file", "FILE",
     "the server's admin token (its --admin-token-file), sent with the\n"
     "POST /reset before the preload as \"Authorization: Bearer\"; a\n"
     "reset the server refuses (401, 403) ends the run (exit 3)",
     "", "a file name", "a file name",
     [](Config& c, Given&, Value v) {
       c.admin_token_file = v;
       if (const std::string why = read_admin_token(v, c.admin_token); !why.empty())
         throw FlagError(why);
       return true;
     }},
    {kTarget, "--timeout", "DURATION",
     "connect/send/receive timeout per socket operation, 10ms..600s;\n"
     "a bare number is ms",
     "5000ms", "a duration", "a duration 10ms..600s such as 500ms or 5s; a bare number is ms",
     [](Config& c, Given&, Value v) {
       const auto d = parse_duration_in(v, common::BareUnit::milliseconds, Config::kMinTimeout,
                                        Config::kMaxTimeout);
       if (d) c.timeout = std::chrono::round<std::chrono::milliseconds>(*d);
       return d.has_value();
     }},
    // Sweep and load
    {kSweep, "--threads", "LIST", "explicit client thread counts, e.g. 1,3,5", "",
     "a list like 1,2,4", "a comma-separated list of thread counts 1..1024",
     [](Config& c, Given&, Value v) {
       return list_of<unsigned>(v, c.thread_counts,
                                [](unsigned t) { return t > 0 && t <= Config::kMaxThreadsLimit; });
     }},
    {kSweep, "--max-threads", "N", "cap of the default counts 1,2,4,8,16", "16", "a count",
     "1..1024",
     [](Config&, Given& g, Value v) {
       unsigned n = 0;
       if (!int_in(v, n, 1u, Config::kMaxThreadsLimit)) return false;
       g.max_threads = n;
       return true;
     }},
    {kSweep, "--connections-per-thread", "N",
     "keep-alive connections per thread, 1..4096 (3000 from one\n"
     "thread: --threads 1 --connections-per-thread 3000)",
     "1", "a count", "1..4096",
     int_field<&Config::connections_per_thread, 1, Config::kMaxConnectionsPerThread>},
    {kSweep, "--pipeline", "N",
     "requests outstanding per connection, 1..1024: each write\n"
     "carries as many requests as there are free slots, back to back;\n"
     "a request's latency runs from the write that carried it to its\n"
     "parsed response. With --rate (or --slo) a write carries the\n"
     "sends that are due, up to the free slots, each timed from its\n"
     "own planned time",
     "1", "a depth", "a depth 1..1024", int_field<&Config::pipeline, 1, Config::kMaxPipeline>},
    {kSweep, "-n,--requests", "N", "measured requests per thread per point", "50000", "a count",
     "a positive request count", int_field<&Config::requests_per_thread, 1, UINT64_MAX>},
    {kSweep, "--requests-total", "N",
     "measured requests per point across all threads, like ab -n\n"
     "(split evenly; not with -n or --duration)",
     "", "a count", "a request count 1..1000000000000",
     int_field<&Config::requests_total, 1, Config::kMaxRequestsTotal>},
    {kSweep, "-d,--duration", "DURATION",
     "measure each point this long instead of --requests (10s, 500ms;\n"
     "a bare number is seconds)",
     "", "a duration", "a positive duration such as 10s or 500ms; a bare number is seconds",
     [](Config& c, Given&, Value v) {
       const auto d = parse_duration_in(v, common::BareUnit::seconds, std::chrono::nanoseconds(1),
                                        kMaxRunTime);
       if (d) c.duration = *d;
       return d.has_value();
     }},
    {kSweep, "--warmup", "N | DURATION",
     "warm-up per point, not recorded: N requests per thread, or a\n"
     "duration with its unit, 2s or 500ms; 0 or 0s = none",
     "1000 requests", "requests or a duration", "N requests or a duration like 2s or 500ms",
     [](Config& c, Given&, Value v) { return parse_warmup(v, c); }},
    {kSweep, "--rate", "R",
     "open loop: constant total rate of R requests/s with planned send\n"
     "times; latency is measured from the planned time (coordinated-\n"
     "omission corrected), the uncorrected figure is reported too",
     "0 = closed loop", "requests/s", "a rate 0..1e8 req/s",
     number_field<&Config::rate_rps, 0.0, 1e8>},
    {kSweep, "--pin-cpus", "LIST", "pin client thread i to CPU LIST[i % len]", "no pinning",
     "a CPU list", "a comma-separated CPU list like 0,1",
     [](Config& c, Given&, Value v) {
       return list_of<int>(v, c.pin_cpus, [](int cpu) { return cpu >= 0 && cpu < 1024; });
     }},
    // Capacity at an SLO
    {kSlo, "--slo", "pP=BOUND",
     "search for the highest open-loop rate whose corrected percentile P\n"
     "stays within BOUND, e.g. p99=1ms, p99.9=500us, p50=2ms (a bare\n"
     "BOUND is us): a closed-loop point at --threads N (one value) gives\n"
     "the saturation rate, then open-loop steps bisect up to 1.1 x that;\n"
     "a step counts only when its point is valid (achieved rate within\n"
     "1% of the planned one, the schedule kept). Prints each step and\n"
     "the capacity; JSON \"slo\". Not with --rate; with --pipeline N\n"
     "both the closed-loop point and the steps run at depth N",
     "", "pP=BOUND", "pP=BOUND such as p99=1ms, p99.9=500us or p50=2ms; P in (0,100)",
     [](Config& c, Given&, Value v) { return parse_slo(v, c.slo); }},
    {kSlo, "--slo-max-rate", "R", "top of the search instead of 1.1 x the saturation rate", "",
     "requests/s", "a rate above 0, up to 1e8 req/s",
     number_field<&SloConfig::max_rate_rps, 0.0, 1e8, Bound::kExcluded>},
    {kSlo, "--slo-precision", "F", "stop when the bracket hi/lo - 1 is below F, 0 < F <= 0.5",
     "0.02", "a fraction", "a fraction above 0, up to 0.5",
     number_field<&SloConfig::precision, 0.0, 0.5, Bound::kExcluded>},
    // Workload
    {kWorkload, "--workload", "NAME", workload_help(), "", "a workload name",
     workload_names(any_workload, "|", "|"),
     [](Config& c, Given&, Value v) {
       for (const WorkloadSpec& w : workload_specs()) {
         if (v != w.name) continue;
         c.workload.kind = w.kind;
         return true;
       }
       return false;
     }},
    {kWorkload, "--ratio", "G:S:D",
     "GET:SET:DELETE weights (etc, mixed, zipf, uniform); for\n"
     "board-mixed READS:UPDATES:0, top-N reads : member updates (the\n"
     "third weight must be 0)",
     "", "G:S:D", "three non-negative weights G:S:D",
     [](Config&, Given& g, Value v) {
       g.ratio = parse_ratio(v);
       return g.ratio.has_value();
     }},
    {kWorkload, "--theta", "T", "Zipf exponent of etc and zipf, T >= 0", "0.99", "a number",
     "0..10", number_field<&WorkloadConfig::theta, 0.0, 10.0>},
    {kWorkload, "--miss-ratio", "F", "share of GETs aimed at never-stored keys, 0..1",
     "0.2 for etc", "a fraction", "0..1",
     [](Config&, Given& g, Value v) {
       double ratio = 0;
       if (!double_in(v, ratio, 0, 1, true)) return false;
       g.miss_ratio = ratio;
       return true;
     }},
    {kWorkload, "--keys", "N", "key-space size", "10000", "a count", "1..1000000000",
     int_field<&WorkloadConfig::keys, 1, kMaxKeys>},
    {kWorkload, "--hot-keys", "N", "hot keys of get-popular", "8", "a count", "a positive count",
     int_field<&WorkloadConfig::hot_keys, 1, UINT64_MAX>},
    {kWorkload, "--key-size", "BYTES", "fixed key size, 2..250", "ETC GEV model", "bytes",
     "2..250 bytes", int_field<&WorkloadConfig::key_bytes, 2, WorkloadConfig::kMaxKeyBytes>},
    {kWorkload, "--value-size", "BYTES", "fixed value size", "ETC model for etc, 100 otherwise",
     "bytes", "0..67108864 bytes", int_field<&WorkloadConfig::value_bytes, 0, kMaxValueLimit>},
    {kWorkload, "--max-value-size", "BYTES", "cap of model-drawn value sizes", "102400", "bytes",
     "1..67108864 bytes", int_field<&WorkloadConfig::max_value_bytes, 1, kMaxValueLimit>},
    {kWorkload, "--path", "PATH", "the path of fixed-get (implies --workload fixed-get)", "",
     "a path", "an absolute path like /mem",
     [](Config& c, Given&, Value v) {
       c.workload.path = v;
       return !v.empty() && v.front() == '/' && v.find_first_of(" \r\n") == std::string::npos;
     }},
    // Workload: the leaderboards, the seed and the server's data
    {kWorkload, "--boards", "B", "boards of the board workloads, 1..1000000", "1", "a count",
     "1..1000000", int_field<&WorkloadConfig::boards, 1, WorkloadConfig::kMaxBoards>},
    {kWorkload, "--members", "N",
     "members per board of the board workloads; boards x members at\n"
     "most 1000000000",
     "100000", "a count", "1..1000000000",
     int_field<&WorkloadConfig::members, 1, WorkloadConfig::kMaxBoardMembers>},
    {kWorkload, "--top-n", "N", "n of the top-N reads (board-top, board-mixed), 1..1000", "100",
     "a count", "1..1000", int_field<&WorkloadConfig::top_n, 1, WorkloadConfig::kMaxTopN>},
    {kWorkload, "--score-max", "S", "board workloads: scores in [0, S) in tenths", "1e9",
     "a number", "a score bound above 0, up to 1e9",
     number_field<&WorkloadConfig::score_max, 0.0, WorkloadConfig::kDefaultScoreMax,
                  Bound::kExcluded>},
    {kWorkload, "--seed", "N", "random seed; the same seed gives the same requests", "1",
     "a number", "a non-negative integer", int_field<&WorkloadConfig::seed, 0, UINT64_MAX>},
    {kWorkload, "--no-preload", "",
     "keep the server's data: no reset, no preload before the first point\n"
     "(board reads then count a 404 as a miss, not an error)",
     "", "", "",
     [](Config& c, Given&, Value) {
       c.preload = false;
       return true;
     }},
    {kWorkload, "--no-reset", "", "do not POST /reset before the preload (keep other data)", "", "",
     "",
     [](Config& c, Given&, Value) {
       c.reset = false;
       return true;
     }},
    {kWorkload, "--ttl", "SECONDS",
     "put ?ttl=SECONDS (1..315360000) on every key PUT, the preload's\n"
     "and the workload's, so every item expires. A read of an expired\n"
     "key is a miss (404), as any absent key",
     "none", "a number of seconds", "a whole number of seconds 1..315360000",
     int_field<&Config::ttl_seconds, 1, Config::kMaxTtlSeconds>},
    // Answer checking and output
    {kChecking, "--verify", "all|N|off",
     "which answers are checked in full (a GET's bytes against the\n"
     "value it must return; a board answer parsed, its count, ranks,\n"
     "order and names checked). Every answer's status and framing (and\n"
     "a GET's length) is checked whatever the setting. A wrong answer\n"
     "(mismatch) makes its point invalid and the exit status 6. JSON:\n"
     "each point's \"verified\" is the number checked in full. all =\n"
     "every answer; off = none in full; N: the first answer of every\n"
     "connection, then one in N, N 1..1000000000",
     "64", "all, off or a count", "all, off or a count N 1..1000000000",
     [](Config& c, Given&, Value v) {
       const auto policy = VerifyPolicy::parse(v);
       if (policy) c.verify = *policy;
       return policy.has_value();
     }},
    {kOutput, "--json", "FILE", "write {\"meta\": {...}, \"points\": [...]} to FILE", "",
     "a file name", "a file name", text_field<&Config::json_path>},
    {kOutput, "--csv", "FILE", "write one CSV row per point to FILE", "", "a file name",
     "a file name", text_field<&Config::csv_path>},
    {kOutput, "--record-trace", "FILE",
     "record the key of every request sent (warm-up and measured, every\n"
     "point, not the preload) as a trace for traces/trace_replay: one\n"
     "key per line, or the binary trace form if FILE ends in .bin.\n"
     "Threads are merged round-robin (traces/README.md)",
     "", "a file name", "a file name", text_field<&Config::record_trace_path, Text::kNonEmpty>},
    {kOutput, "-q,--quiet", "", "no progress messages on stderr", "", "", "",
     [](Config& c, Given&, Value) {
       c.quiet = true;
       return true;
     }},
    {kOutput, "-h,--help", "", "this text", "", "", "", nullptr},
};

}  // namespace

const std::vector<FlagRow>& flag_table() {
  return kFlags;
}

}  // namespace client
