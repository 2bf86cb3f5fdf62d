// Flag parsing and validation (see cli.hh), on CLI11 (Debian's libcli11-dev, header-only): CLI11
// recognizes the flags, their values (also --flag=value), unknown flags, missing values and
// --help; this file keeps what is ours: each value's parser and range, the one-line error texts
// other tools match, the cross-flag rules, and the hand-written --help text (grouped as a user
// reads it, with the exit codes; CLI11's generated help would list flags without that story).
#include "client/cli.hh"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "client/histogram.hh"
#include "client/workload.hh"
#include "common/duration.hh"

namespace client {
namespace {

constexpr std::uint64_t kMaxKeys = 1'000'000'000;
constexpr std::uint32_t kMaxValueLimit = 64u * 1024 * 1024;
const std::vector<unsigned> kDefaultThreadCounts = {1, 2, 4, 8, 16};

template <typename T>
std::optional<T> parse_int(const std::string& s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
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

template <typename T>
std::optional<std::vector<T>> parse_list(const std::string& s, char sep) {
  std::vector<T> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) {
    auto v = parse_int<T>(item);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  if (out.empty() || s.back() == sep) return std::nullopt;
  return out;
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

// A request that times out is recorded at the time it waited, a little above --timeout (it is
// noticed at the next wake-up): the histogram's range must hold the longest timeout with room.
static_assert(std::chrono::nanoseconds(Config::kMaxTimeout).count() * 3 / 2 <
                  static_cast<std::int64_t>(Histogram::kMaxTrackableNs),
              "--timeout's upper bound must lie well inside the latency histogram's range");

constexpr std::chrono::nanoseconds kMaxRunTime = std::chrono::seconds(1'000'000);  // -d, --warmup

// --targets HOST:PORT[,HOST:PORT...]: each entry is split at its last ':' (as nginx splits a
// server line's name); the host as --host takes it, the port as --port. Returns the error, or "".
std::string parse_targets(const std::string& s, std::vector<Config::Target>& out) {
  out.clear();
  if (s.empty() || s.back() == ',') return "an empty entry in '" + s + "'";
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) return "an empty entry in '" + s + "'";
    const auto colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) return "'" + item + "' is not HOST:PORT";
    Config::Target t;
    t.text = item;
    t.host = item.substr(0, colon);
    if (t.host.find_first_of(":[]") != std::string::npos)
      return "'" + item +
             "': IPv6 hosts are not supported by --targets (use an IPv4 address or a "
             "host name)";
    const auto port = parse_int<std::uint16_t>(item.substr(colon + 1));
    if (!port || *port == 0) return "'" + item + "' has no port 1..65535";
    t.port = *port;
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

std::optional<WorkloadKind> parse_workload(const std::string& s) {
  for (const WorkloadSpec& w : workload_specs())
    if (s == w.name) return w.kind;
  return std::nullopt;
}

// The names of the workloads `pick` selects: "a", "a and b", "a, b and c" (`last` = " and "), or
// joined by `last` alone ("a|b|c").
template <class Pick>
std::string workload_names(const Pick& pick, const std::string& sep, const std::string& last) {
  std::vector<std::string> names;
  for (const WorkloadSpec& w : workload_specs())
    if (pick(w)) names.emplace_back(w.name);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? last : sep) + names[i];
  return out;
}

constexpr std::size_t kHelpColumn = 32;  // --help: flag names, then their text from this column
constexpr std::size_t kHelpWidth = 100;

// --help's --workload entry, from the table: the names (the default marked), then each row's
// text, the board rows after the paragraph they share.
std::string workload_help() {
  const std::string indent(kHelpColumn, ' ');
  std::string out = "      --workload NAME" + std::string(kHelpColumn - 21, ' ');
  std::string line;
  for (const WorkloadSpec& w : workload_specs()) {
    std::string name = w.name;
    if (w.kind == WorkloadConfig{}.kind) name += " (default)";
    if (!line.empty() && kHelpColumn + line.size() + 3 + name.size() + 2 > kHelpWidth) {
      out += line + " |\n" + indent;
      line.clear();
    }
    line += (line.empty() ? "" : " | ") + name;
  }
  out += line + "\n";
  bool boards = false;
  for (const WorkloadSpec& w : workload_specs()) {
    if (w.api == WorkloadApi::kBoards && !boards) {
      boards = true;
      out += indent + "Leaderboards (board i is b<i>, member j is m<j>; uniform choice\n" + indent +
             "of board and member; reads need the preload, which PUTs every\n" + indent +
             "member of every board once):\n";
    }
    std::string text = w.help;
    for (auto nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', nl + 1))
      text.insert(nl + 1, indent + "       ");
    out += indent + "  " + w.name + ": " + text + "\n";
  }
  return out;
}

}  // namespace

std::string help_text() {
  return R"(usage: bench_client [options]
Load generator for the cache server: runs threaded_performance() once per client thread count and
prints one table row per count (latencies in microseconds, throughput in requests/second).

Target
  -s, --host HOST               server address (default 127.0.0.1)
  -p, --port PORT               server port (default 8080)
      --targets HOST:PORT[,HOST:PORT...]
                                1..64 nodes of a consistent-hash cluster instead of --host/--port:
                                each request goes straight to the node nginx's `hash $cache_key
                                consistent` would pick (key K of /key/K, board name B of
                                /board/B/...); results per node and merged. Each thread opens
                                --connections-per-thread connections to every node; one request
                                per write (--pipeline is the depth per connection). Not with
                                fixed-get; IPv4 addresses or names only (no IPv6)
      --target-weight W         nginx's weight= of every node, 1..100 (default 10); must equal
                                the weight= in the nginx upstream's server lines (scripts/
                                cluster.sh writes weight=10)
      --server-pid PID[,PID...] sample the server's CPU % from its CPU clock (default: off);
                                several PIDs: their CPU is summed (e.g. nginx workers); with
                                --targets: one PID per target, in --targets order (per-node CPU)
      --admin-token-file FILE   the server's admin token (its --admin-token-file), sent with the
                                POST /reset before the preload as "Authorization: Bearer"; a
                                reset the server refuses (401, 403) ends the run (exit 3)
      --timeout DURATION        connect/send/receive timeout per socket operation, 10ms..600s;
                                a bare number is ms (default 5000ms)

Sweep and load
      --threads LIST            explicit client thread counts, e.g. 1,3,5
      --max-threads N           cap of the default counts 1,2,4,8,16 (default 16)
      --connections-per-thread N  keep-alive connections per thread, 1..4096 (default 1); e.g.
                                3000 connections from one thread: --threads 1
                                --connections-per-thread 3000
      --pipeline N              requests outstanding per connection, 1..1024 (default 1): each
                                write carries as many requests as there are free slots, back to
                                back; a request's latency runs from the write that carried it to
                                its parsed response. With --rate (or --slo) a write carries the
                                sends that are due, up to the free slots, each timed from its
                                own planned time
  -n, --requests N              measured requests per thread per point (default 50000)
      --requests-total N        measured requests per point across all threads, like ab -n
                                (split evenly; not with -n or --duration)
  -d, --duration DURATION       measure each point this long instead of --requests (10s, 500ms;
                                a bare number is seconds)
      --warmup N | DURATION     warm-up per point, not recorded: N requests per thread, or a
                                duration with its unit, 2s or 500ms (default 1000 requests;
                                0 or 0s = none)
      --rate R                  open loop: constant total rate of R requests/s with planned send
                                times; latency is measured from the planned time (coordinated-
                                omission corrected), the uncorrected figure is reported too
                                (default 0 = closed loop)
      --pin-cpus LIST           pin client thread i to CPU LIST[i % len] (default: no pinning)

Capacity at an SLO
      --slo pP=BOUND            search for the highest open-loop rate whose corrected percentile P
                                stays within BOUND, e.g. p99=1ms, p99.9=500us, p50=2ms (a bare
                                BOUND is us): a closed-loop point at --threads N (one value) gives
                                the saturation rate, then open-loop steps bisect up to 1.1 x that;
                                a step counts only when its point is valid (achieved rate within
                                1% of the planned one, the schedule kept). Prints each step and
                                the capacity; JSON "slo". Not with --rate; with --pipeline N
                                both the closed-loop point and the steps run at depth N
      --slo-max-rate R          top of the search instead of 1.1 x the saturation rate
      --slo-precision F         stop when the bracket hi/lo - 1 is below F, 0 < F <= 0.5
                                (default 0.02)

Workload
)" + workload_help() +
         R"(      --ratio G:S:D             GET:SET:DELETE weights (etc, mixed, zipf, uniform); for
                                board-mixed READS:UPDATES:0, top-N reads : member updates (the
                                third weight must be 0)
      --theta T                 Zipf exponent, T >= 0 (default 0.99; etc and zipf)
      --miss-ratio F            share of GETs aimed at never-stored keys, 0..1 (etc default 0.2)
      --keys N                  key-space size (default 10000)
      --hot-keys N              hot keys of get-popular (default 8)
      --key-size BYTES          fixed key size, 2..250 (default: ETC GEV model)
      --value-size BYTES        fixed value size (default: ETC model for etc, 100 otherwise)
      --max-value-size BYTES    cap of model-drawn value sizes (default 102400)
      --path PATH               the path of fixed-get (implies --workload fixed-get)
      --boards B                boards of the board workloads, 1..1000000 (default 1)
      --members N               members per board of the board workloads (default 100000);
                                boards x members at most 1000000000
      --top-n N                 n of the top-N reads (board-top, board-mixed), 1..1000
                                (default 100)
      --score-max S             board workloads: scores in [0, S) in tenths (default 1e9)
      --seed N                  random seed; the same seed gives the same requests (default 1)
      --no-preload              keep the server's data: no reset, no preload before the first point
                                (board reads then count a 404 as a miss, not an error)
      --no-reset                do not POST /reset before the preload (keep other data)
      --ttl SECONDS             put ?ttl=SECONDS (1..315360000) on every key PUT, the preload's
                                and the workload's, so every item expires (default: none).
                                A read of an expired key is a miss (404), as any absent key

Answer checking
      --verify all|N|off        which answers are checked in full (a GET's bytes against the
                                value it must return; a board answer parsed, its count, ranks,
                                order and names checked): the first answer of every connection,
                                then one in N (default 64; N 1..1000000000); all = every answer;
                                off = none in full. Every answer's status and framing (and a
                                GET's length) is checked whatever the setting. A wrong answer
                                (mismatch) makes its point invalid and the exit status 6.
                                JSON: each point's "verified" is the number checked in full

Output
      --json FILE               write {"meta": {...}, "points": [...]} to FILE
      --csv FILE                write one CSV row per point to FILE
      --record-trace FILE       record the key of every request sent (warm-up and measured, every
                                point, not the preload) as a trace for traces/trace_replay: one
                                key per line, or the binary trace form if FILE ends in .bin.
                                Threads are merged round-robin (traces/README.md)
  -q, --quiet                   no progress messages on stderr
  -h, --help                    this text

Durations are a decimal number with a unit, ms or s: 500ms, 2s, 0.5s.

bench_client merge A.json B.json ... --json OUT.json combines the results of several load machines
run at the same time with the same flags (bench_client merge --help).
bench_client place --targets LIST < keys prints the node of each key, as nginx places it
(bench_client place --help).

Exit status: 0 success (also when responses had errors, e.g. parse errors: see the errors
column); 1 bad flags; 2 server unreachable; 3 run aborted (a point failed, e.g. the server died or
an epoll_wait/socket call of the client failed; or the server refused the POST /reset: see
--admin-token-file) or interrupted (Ctrl-C/SIGTERM), the finished points saved; 4 output file could not be written; 6 a wrong answer (mismatch): a point is invalid, all
points saved.
)";
}

namespace {

// A bad flag value or combination; its text is the one-line error.
struct FlagError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

// The flags that take a value: CLI11 collects each value; `store` parses it into the Config
// (false: invalid). Errors name the flag by its long name.
class ValueFlags {
 public:
  explicit ValueFlags(CLI::App& app) : app_(app) {}

  // names: "-p,--port"; needs: what a missing value lacks ("a port"); expected: the valid range.
  CLI::Option* add(const std::string& names, const std::string& needs, const std::string& expected,
                   std::function<bool(const std::string&)> store) {
    CLI::Option* opt = app_.add_option_function<std::string>(
        names, [store, expected, names](const std::string& v) {
          if (!store(v))
            throw FlagError("invalid value '" + v + "' for " + long_name(names) + " (expected " +
                            expected + ")");
        });
    opt->type_name("");
    needs_[long_name(names)] = needs;
    return opt;
  }
  // "--top-n needs a count" for CLI11's "missing value" error about `flag`.
  std::string needs(const std::string& flag) const {
    const auto it = needs_.find(flag);
    return flag + " needs " + (it != needs_.end() ? it->second : "a value");
  }

 private:
  static std::string long_name(const std::string& names) {
    return names.substr(names.rfind(',') + 1);
  }
  CLI::App& app_;
  std::map<std::string, std::string> needs_;
};

// What the command line said beyond the Config's values: the cross-flag rules need it.
struct Given {
  std::optional<unsigned> max_threads;
  std::optional<OpRatio> ratio;
  std::optional<double> miss_ratio;
  bool workload = false, path = false, top_n = false, score_max = false;
  std::string board_flag;      // "--boards" or "--members" when one was given
  std::string host_port_flag;  // "--host" or "--port" when one was given
  bool targets = false, weight = false;
  bool requests = false, requests_total = false, duration = false;
  bool slo_max_rate = false, slo_precision = false;
};

void fail(const std::string& message) {
  throw FlagError(message);
}

// Derived settings (default thread counts, workload defaults) and the rules between flags.
void finish_config(Config& cfg, const Given& g) {
  if (cfg.thread_counts.empty()) {
    const unsigned cap = g.max_threads.value_or(Config::kDefaultMaxThreads);
    for (unsigned t : kDefaultThreadCounts)
      if (t <= cap) cfg.thread_counts.push_back(t);
    if (cfg.thread_counts.empty() || cfg.thread_counts.back() != cap) {
      if (cfg.thread_counts.empty() || cap > cfg.thread_counts.back())
        cfg.thread_counts.push_back(cap);
    }
  } else if (g.max_threads) {
    std::erase_if(cfg.thread_counts, [&](unsigned t) { return t > *g.max_threads; });
    if (cfg.thread_counts.empty()) fail("--max-threads removes every count of --threads");
  }
  if (g.path && !g.workload) cfg.workload.kind = WorkloadKind::kFixedGet;
  const WorkloadSpec& w = workload_spec(cfg.workload.kind);
  cfg.workload.ratio = w.ratio;
  cfg.workload.miss_ratio = w.miss_ratio;
  const bool board = w.api == WorkloadApi::kBoards;
  if (g.ratio) {
    if (!w.has(kTakesRatio)) fail(std::string("--ratio does not apply to workload ") + w.name);
    if (board && g.ratio->del != 0)
      fail(std::string("--ratio for ") + w.name +
           " is READS:UPDATES:0 (top-N reads : updates); board workloads send no deletes");
    cfg.workload.ratio = *g.ratio;
  }
  const auto is_board = [](const WorkloadSpec& s) { return s.api == WorkloadApi::kBoards; };
  if (!g.board_flag.empty() && !board)
    fail(g.board_flag + " applies to the board workloads only (" +
         workload_names(is_board, ", ", ", ") + "), not to " + w.name);
  if (g.top_n && !w.has(kTakesTopN))
    fail("--top-n applies to " +
         workload_names([](const WorkloadSpec& s) { return s.has(kTakesTopN); }, ", ", " and ") +
         " only, not to " + w.name);
  if (g.score_max && !board)
    fail(std::string("--score-max applies to the board workloads only, not to ") + w.name);
  if (board &&
      std::uint64_t{cfg.workload.boards} * cfg.workload.members > WorkloadConfig::kMaxBoardMembers)
    fail("--boards x --members must be at most 1000000000 (got " +
         std::to_string(cfg.workload.boards) + " x " + std::to_string(cfg.workload.members) + ")");
  // A trace records keys: the board and fixed-path workloads have none.
  if (!cfg.record_trace_path.empty() && w.api != WorkloadApi::kKeys)
    fail(std::string("--record-trace records keys; workload ") + w.name + " has none");
  if (g.miss_ratio) {
    if (!w.has(kTakesMissRatio))
      fail(std::string("--miss-ratio does not apply to workload ") + w.name);
    cfg.workload.miss_ratio = *g.miss_ratio;
  }
  if (g.targets) {
    if (!g.host_port_flag.empty())
      fail("--targets names the servers: it cannot be combined with " + g.host_port_flag);
    if (w.api == WorkloadApi::kFixedPath)
      fail(std::string("--targets places requests by their key or board; workload ") + w.name +
           " has none (send it to one server with --host/--port)");
    if (!cfg.server_pids.empty() && cfg.server_pids.size() != cfg.targets.size())
      fail("--server-pid with --targets needs one PID per target, in --targets order (got " +
           std::to_string(cfg.server_pids.size()) + " PIDs for " +
           std::to_string(cfg.targets.size()) + " targets)");
  } else if (g.weight) {
    fail("--target-weight applies to --targets only");
  }
  if (cfg.workload.value_bytes > cfg.workload.max_value_bytes)
    cfg.workload.max_value_bytes = cfg.workload.value_bytes;
  const unsigned max_count = *std::max_element(cfg.thread_counts.begin(), cfg.thread_counts.end());
  if (cfg.rate_rps > 0 && cfg.rate_rps < max_count)
    fail("--rate must be at least one request/s per thread");
  if (g.requests_total && (g.requests || g.duration))
    fail(std::string("--requests-total sets each point's requests in all: it cannot be combined "
                     "with ") +
         (g.requests ? "-n/--requests" : "-d/--duration"));
  if (cfg.slo.text.empty()) {
    if (g.slo_max_rate || g.slo_precision)
      fail(std::string(g.slo_max_rate ? "--slo-max-rate" : "--slo-precision") +
           " applies to --slo only");
  } else {
    if (cfg.thread_counts.size() != 1)
      fail("--slo searches at one load level: give --threads N (one value)");
    if (cfg.rate_rps > 0) fail("--slo chooses the open-loop rates itself: it takes no --rate");
    if (!cfg.targets.empty()) fail("--slo searches against one server: not with --targets");
  }
}

template <typename T>
std::function<bool(const std::string&)> int_in(T& out, T min, T max) {
  return [&out, min, max](const std::string& v) {
    const auto n = parse_int<T>(v);
    if (!n || *n < min || *n > max) return false;
    out = *n;
    return true;
  };
}

}  // namespace

CliOutcome parse_args(const std::vector<std::string>& args, Config& cfg, std::string& error) {
  CLI::App app{"bench_client"};
  app.set_help_flag("-h,--help");
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  ValueFlags flags(app);
  Given given;

  // Target
  auto* host =
      flags.add("-s,--host", "a host", "a host name or address", [&](const std::string& v) {
        cfg.host = v;
        return !v.empty();
      });
  auto* port = flags.add("-p,--port", "a port", "a port 1..65535",
                         int_in<std::uint16_t>(cfg.port, 1, 65535));
  auto* targets = flags.add("--targets", "HOST:PORT[,HOST:PORT...]", "", [&](const std::string& v) {
    const std::string why = parse_targets(v, cfg.targets);
    if (!why.empty())
      throw FlagError("invalid value '" + v + "' for --targets: " + why +
                      " (expected 1..64 distinct HOST:PORT separated by commas)");
    return true;
  });
  auto* weight = flags.add("--target-weight", "a weight", "a weight 1..100",
                           int_in<unsigned>(cfg.target_weight, 1, Config::kMaxTargetWeight));
  flags.add("--server-pid", "a pid", "a positive pid, or a comma-separated list of them",
            [&](const std::string& v) {
              auto list = parse_list<int>(v, ',');
              if (!list || std::any_of(list->begin(), list->end(), [](int p) { return p <= 0; }))
                return false;
              cfg.server_pids = *list;
              return true;
            });
  flags.add("--admin-token-file", "a file name", "a file name", [&](const std::string& v) {
    cfg.admin_token_file = v;
    if (const std::string why = read_admin_token(v, cfg.admin_token); !why.empty())
      throw FlagError(why);
    return true;
  });
  flags.add("--timeout", "a duration",
            "a duration 10ms..600s such as 500ms or 5s; a bare number is ms",
            [&](const std::string& v) {
              auto d = parse_duration_in(v, common::BareUnit::milliseconds, Config::kMinTimeout,
                                         Config::kMaxTimeout);
              if (d) cfg.timeout = std::chrono::round<std::chrono::milliseconds>(*d);
              return d.has_value();
            });

  // Sweep and load
  flags.add("--threads", "a list like 1,2,4", "a comma-separated list of thread counts 1..1024",
            [&](const std::string& v) {
              auto list = parse_list<unsigned>(v, ',');
              if (!list || std::any_of(list->begin(), list->end(), [](unsigned t) {
                    return t == 0 || t > Config::kMaxThreadsLimit;
                  }))
                return false;
              cfg.thread_counts = *list;
              return true;
            });
  flags.add("--max-threads", "a count", "1..1024", [&](const std::string& v) {
    auto n = parse_int<unsigned>(v);
    if (!n || *n == 0 || *n > Config::kMaxThreadsLimit) return false;
    given.max_threads = *n;
    return true;
  });
  flags.add("--connections-per-thread", "a count", "1..4096",
            int_in<unsigned>(cfg.connections_per_thread, 1, Config::kMaxConnectionsPerThread));
  flags.add("--pipeline", "a depth", "a depth 1..1024",
            int_in<unsigned>(cfg.pipeline, 1, Config::kMaxPipeline));
  flags.add("--ttl", "a number of seconds", "a whole number of seconds 1..315360000",
            int_in<std::uint32_t>(cfg.ttl_seconds, 1, Config::kMaxTtlSeconds));
  auto* requests = flags.add("-n,--requests", "a count", "a positive request count",
                             int_in<std::uint64_t>(cfg.requests_per_thread, 1, UINT64_MAX));
  auto* requests_total =
      flags.add("--requests-total", "a count", "a request count 1..1000000000000",
                int_in<std::uint64_t>(cfg.requests_total, 1, Config::kMaxRequestsTotal));
  auto* duration = flags.add("-d,--duration", "a duration",
                             "a positive duration such as 10s or 500ms; a bare number is seconds",
                             [&](const std::string& v) {
                               auto d = parse_duration_in(v, common::BareUnit::seconds,
                                                          std::chrono::nanoseconds(1), kMaxRunTime);
                               if (d) cfg.duration = *d;
                               return d.has_value();
                             });
  flags.add("--warmup", "requests or a duration", "N requests or a duration like 2s or 500ms",
            [&](const std::string& v) {
              if (!v.empty() && v.back() == 's') {  // "2s", "500ms": a time; a bare number counts
                auto d = parse_duration_in(v, common::BareUnit::required,
                                           std::chrono::nanoseconds(0), kMaxRunTime);
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
            });
  flags.add("--rate", "requests/s", "a rate 0..1e8 req/s", [&](const std::string& v) {
    auto r = parse_double(v);
    if (!r || *r < 0 || *r > 1e8) return false;
    cfg.rate_rps = *r;
    return true;
  });
  flags.add("--slo", "pP=BOUND", "pP=BOUND such as p99=1ms, p99.9=500us or p50=2ms; P in (0,100)",
            [&](const std::string& v) { return parse_slo(v, cfg.slo); });
  auto* slo_max_rate = flags.add("--slo-max-rate", "requests/s", "a rate above 0, up to 1e8 req/s",
                                 [&](const std::string& v) {
                                   auto r = parse_double(v);
                                   if (!r || *r <= 0 || *r > 1e8) return false;
                                   cfg.slo.max_rate_rps = *r;
                                   return true;
                                 });
  auto* slo_precision = flags.add("--slo-precision", "a fraction", "a fraction above 0, up to 0.5",
                                  [&](const std::string& v) {
                                    auto f = parse_double(v);
                                    if (!f || *f <= 0 || *f > 0.5) return false;
                                    cfg.slo.precision = *f;
                                    return true;
                                  });
  flags.add("--verify", "all, off or a count", "all, off or a count N 1..1000000000",
            [&](const std::string& v) {
              const auto policy = VerifyPolicy::parse(v);
              if (policy) cfg.verify = *policy;
              return policy.has_value();
            });
  flags.add("--pin-cpus", "a CPU list", "a comma-separated CPU list like 0,1",
            [&](const std::string& v) {
              auto list = parse_list<int>(v, ',');
              if (!list ||
                  std::any_of(list->begin(), list->end(), [](int c) { return c < 0 || c >= 1024; }))
                return false;
              cfg.pin_cpus = *list;
              return true;
            });

  // Workload
  auto* workload = flags.add("--workload", "a workload name",
                             workload_names([](const WorkloadSpec&) { return true; }, "|", "|"),
                             [&](const std::string& v) {
                               auto k = parse_workload(v);
                               if (k) cfg.workload.kind = *k;
                               return k.has_value();
                             });
  flags.add("--ratio", "G:S:D", "three non-negative weights G:S:D", [&](const std::string& v) {
    std::vector<double> parts;
    std::istringstream in(v);
    std::string item;
    while (std::getline(in, item, ':')) {
      auto d = parse_double(item);
      if (!d || *d < 0) return false;
      parts.push_back(*d);
    }
    if (parts.size() != 3 || parts[0] + parts[1] + parts[2] <= 0) return false;
    given.ratio = OpRatio{parts[0], parts[1], parts[2]};
    return true;
  });
  flags.add("--theta", "a number", "0..10", [&](const std::string& v) {
    auto d = parse_double(v);
    if (!d || *d < 0 || *d > 10) return false;
    cfg.workload.theta = *d;
    return true;
  });
  flags.add("--miss-ratio", "a fraction", "0..1", [&](const std::string& v) {
    auto d = parse_double(v);
    if (!d || *d < 0 || *d > 1) return false;
    given.miss_ratio = *d;
    return true;
  });
  flags.add("--keys", "a count", "1..1000000000",
            int_in<std::uint64_t>(cfg.workload.keys, 1, kMaxKeys));
  flags.add("--hot-keys", "a count", "a positive count",
            int_in<std::uint64_t>(cfg.workload.hot_keys, 1, UINT64_MAX));
  flags.add("--key-size", "bytes", "2..250 bytes",
            int_in<std::uint32_t>(cfg.workload.key_bytes, 2, WorkloadConfig::kMaxKeyBytes));
  flags.add("--value-size", "bytes", "0..67108864 bytes",
            int_in<std::uint32_t>(cfg.workload.value_bytes, 0, kMaxValueLimit));
  flags.add("--max-value-size", "bytes", "1..67108864 bytes",
            int_in<std::uint32_t>(cfg.workload.max_value_bytes, 1, kMaxValueLimit));
  auto* path =
      flags.add("--path", "a path", "an absolute path like /mem", [&](const std::string& v) {
        cfg.workload.path = v;
        return !v.empty() && v.front() == '/' && v.find_first_of(" \r\n") == std::string::npos;
      });
  auto* boards =
      flags.add("--boards", "a count", "1..1000000",
                int_in<std::uint32_t>(cfg.workload.boards, 1, WorkloadConfig::kMaxBoards));
  auto* members =
      flags.add("--members", "a count", "1..1000000000",
                int_in<std::uint64_t>(cfg.workload.members, 1, WorkloadConfig::kMaxBoardMembers));
  auto* top_n = flags.add("--top-n", "a count", "1..1000",
                          int_in<std::uint32_t>(cfg.workload.top_n, 1, WorkloadConfig::kMaxTopN));
  auto* score_max = flags.add("--score-max", "a number", "a score bound above 0, up to 1e9",
                              [&](const std::string& v) {
                                auto d = parse_double(v);
                                if (!d || *d <= 0 || *d > WorkloadConfig::kDefaultScoreMax)
                                  return false;
                                cfg.workload.score_max = *d;
                                return true;
                              });
  flags.add("--seed", "a number", "a non-negative integer",
            int_in<std::uint64_t>(cfg.workload.seed, 0, UINT64_MAX));
  app.add_flag_callback("--no-preload", [&] { cfg.preload = false; });
  app.add_flag_callback("--no-reset", [&] { cfg.reset = false; });

  // Output
  flags.add("--json", "a file name", "a file name", [&](const std::string& v) {
    cfg.json_path = v;
    return true;
  });
  flags.add("--csv", "a file name", "a file name", [&](const std::string& v) {
    cfg.csv_path = v;
    return true;
  });
  flags.add("--record-trace", "a file name", "a file name", [&](const std::string& v) {
    cfg.record_trace_path = v;
    return !v.empty();
  });
  app.add_flag_callback("-q,--quiet", [&] { cfg.quiet = true; });

  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them reversed
    given.workload = workload->count() > 0;
    given.path = path->count() > 0;
    given.top_n = top_n->count() > 0;
    given.score_max = score_max->count() > 0;
    // The last of --boards/--members given names the error (as the flags were read).
    if (boards->count() > 0 || members->count() > 0) {
      const auto order = app.parse_order();
      const auto last = std::find_if(order.rbegin(), order.rend(), [&](const CLI::Option* o) {
        return o == boards || o == members;
      });
      given.board_flag = *last == boards ? "--boards" : "--members";
    }
    if (host->count() > 0) given.host_port_flag = "--host";
    if (port->count() > 0 && given.host_port_flag.empty()) given.host_port_flag = "--port";
    given.targets = targets->count() > 0;
    given.weight = weight->count() > 0;
    given.requests = requests->count() > 0;
    given.requests_total = requests_total->count() > 0;
    given.duration = duration->count() > 0;
    given.slo_max_rate = slo_max_rate->count() > 0;
    given.slo_precision = slo_precision->count() > 0;
    finish_config(cfg, given);
  } catch (const CLI::CallForHelp&) {
    return CliOutcome::kHelp;
  } catch (const CLI::ExtrasError& e) {
    const auto extras = app.remaining();
    error = "unknown option '" + (extras.empty() ? std::string(e.what()) : extras.front()) +
            "' (see --help)";
    return CliOutcome::kError;
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string what = e.what();  // "--top-n: 1 required TEXT missing"
    error = flags.needs(what.substr(0, what.find(':')));
    return CliOutcome::kError;
  } catch (const CLI::ParseError& e) {
    error = e.what();
    return CliOutcome::kError;
  } catch (const FlagError& e) {
    error = e.what();
    return CliOutcome::kError;
  }
  return CliOutcome::kRun;
}

}  // namespace client
