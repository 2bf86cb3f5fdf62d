// Flag parsing and validation (see cli.hh).
#include "cli.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>

#include "common/duration.hh"
#include "histogram.hh"
#include "workload.hh"

namespace bench {
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

std::optional<WorkloadKind> parse_workload(const std::string& s) {
  for (auto k : {WorkloadKind::kEtc, WorkloadKind::kGetPopular, WorkloadKind::kPutAll,
                 WorkloadKind::kMixed, WorkloadKind::kZipf, WorkloadKind::kUniform,
                 WorkloadKind::kFixedGet, WorkloadKind::kBoardUpdate, WorkloadKind::kBoardTop,
                 WorkloadKind::kBoardMixed, WorkloadKind::kBoardScore})
    if (s == workload_name(k)) return k;
  return std::nullopt;
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
      --server-pid PID[,PID...] sample the server's CPU % from /proc/PID/stat (default: off);
                                several PIDs: their CPU is summed (e.g. nginx workers); with
                                --targets: one PID per target, in --targets order (per-node CPU)
      --timeout DURATION        connect/send/receive timeout per socket operation, 10ms..600s;
                                a bare number is ms (default 5000ms)

Sweep and load
      --threads LIST            explicit client thread counts, e.g. 1,3,5
      --max-threads N           cap of the default counts 1,2,4,8,16 (default 16)
      --connections-per-thread N  keep-alive connections per thread (default 1)
      --pipeline N              requests outstanding per connection, 1..1024 (default 1): each
                                write carries as many requests as there are free slots, back to
                                back; a request's latency runs from the write that carried it to
                                its parsed response. Closed loop only (not with --rate)
  -n, --requests N              measured requests per thread per point (default 50000)
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

Workload
      --workload NAME           etc (default) | get-popular | put-all | mixed | zipf | uniform |
                                fixed-get | board-update | board-top | board-mixed | board-score
                                  etc: Facebook ETC key/value sizes, GET:SET 30:1, Zipf popularity,
                                       20% of GETs aimed at never-stored keys (hit rate ~80%)
                                  get-popular: GETs of --hot-keys keys
                                  put-all: PUTs only (creates, then updates), no preload
                                  mixed: --ratio mix (default 90:10:0), uniform popularity
                                  zipf: --ratio mix (default 30:1:0), Zipf(--theta) popularity
                                  uniform: --ratio mix (default 30:1:0), uniform popularity
                                  fixed-get: GET --path only, any server; 200 is success
                                Leaderboards (board i is b<i>, member j is m<j>; uniform choice
                                of board and member; reads need the preload, which PUTs every
                                member of every board once):
                                  board-update: PUT /board/b/member/m?op=set, random scores,
                                       no preload
                                  board-top: GET /board/b/top?n=--top-n
                                  board-mixed: top-N reads and updates, --ratio R:U:0
                                       (default 90:10:0)
                                  board-score: GET /board/b/member/m
      --ratio G:S:D             GET:SET:DELETE weights (etc, mixed, zipf, uniform); for
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
      --seed N                  random seed; the same seed gives the same requests (default 1)
      --no-preload              keep the server's data: no reset, no preload before the first point
                                (board reads then count a 404 as a miss, not an error)
      --no-reset                do not POST /reset before the preload (keep other data)

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
a ppoll/socket call of the client failed) or interrupted (Ctrl-C/SIGTERM), the finished points
saved; 4 output file could not be written.
)";
}

CliOutcome parse_args(const std::vector<std::string>& args, Config& cfg, std::string& error) {
  std::optional<unsigned> max_threads;
  std::optional<OpRatio> ratio;
  std::optional<double> miss_ratio;
  bool workload_given = false;
  std::string board_flag;  // the last of --boards/--members given
  bool top_n_given = false;
  bool host_given = false, port_given = false, weight_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    auto need = [&](const char* what) -> std::optional<std::string> {
      auto v = value();
      if (!v) error = flag + " needs " + what;
      return v;
    };
    auto bad = [&](const std::string& v, const char* what) {
      error = "invalid value '" + v + "' for " + flag + " (expected " + what + ")";
      return CliOutcome::kError;
    };
    if (flag == "-h" || flag == "--help") return CliOutcome::kHelp;
    if (flag == "-q" || flag == "--quiet") {
      cfg.quiet = true;
      continue;
    }
    if (flag == "--no-preload") {
      cfg.preload = false;
      continue;
    }
    if (flag == "--no-reset") {
      cfg.reset = false;
      continue;
    }

    if (flag == "-s" || flag == "--host") {
      auto v = need("a host");
      if (!v) return CliOutcome::kError;
      if (v->empty()) return bad(*v, "a host name or address");
      cfg.host = *v;
      host_given = true;
    } else if (flag == "-p" || flag == "--port") {
      auto v = need("a port");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint16_t>(*v);
      if (!n || *n == 0) return bad(*v, "a port 1..65535");
      cfg.port = *n;
      port_given = true;
    } else if (flag == "--targets") {
      auto v = need("HOST:PORT[,HOST:PORT...]");
      if (!v) return CliOutcome::kError;
      const std::string why = parse_targets(*v, cfg.targets);
      if (!why.empty()) {
        error = "invalid value '" + *v + "' for --targets: " + why +
                " (expected 1..64 distinct HOST:PORT separated by commas)";
        return CliOutcome::kError;
      }
    } else if (flag == "--target-weight") {
      auto v = need("a weight");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<unsigned>(*v);
      if (!n || *n == 0 || *n > Config::kMaxTargetWeight) return bad(*v, "a weight 1..100");
      cfg.target_weight = *n;
      weight_given = true;
    } else if (flag == "--server-pid") {
      auto v = need("a pid");
      if (!v) return CliOutcome::kError;
      auto list = parse_list<int>(*v, ',');
      if (!list || std::any_of(list->begin(), list->end(), [](int p) { return p <= 0; }))
        return bad(*v, "a positive pid, or a comma-separated list of them");
      cfg.server_pids = *list;
    } else if (flag == "--timeout") {
      auto v = need("a duration");
      if (!v) return CliOutcome::kError;
      auto d = parse_duration_in(*v, common::BareUnit::milliseconds, Config::kMinTimeout,
                                 Config::kMaxTimeout);
      if (!d) return bad(*v, "a duration 10ms..600s such as 500ms or 5s; a bare number is ms");
      cfg.timeout = std::chrono::round<std::chrono::milliseconds>(*d);
    } else if (flag == "--threads") {
      auto v = need("a list like 1,2,4");
      if (!v) return CliOutcome::kError;
      auto list = parse_list<unsigned>(*v, ',');
      if (!list || std::any_of(list->begin(), list->end(),
                               [](unsigned t) { return t == 0 || t > Config::kMaxThreadsLimit; }))
        return bad(*v, "a comma-separated list of thread counts 1..1024");
      cfg.thread_counts = *list;
    } else if (flag == "--max-threads") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<unsigned>(*v);
      if (!n || *n == 0 || *n > Config::kMaxThreadsLimit) return bad(*v, "1..1024");
      max_threads = *n;
    } else if (flag == "--connections-per-thread") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<unsigned>(*v);
      if (!n || *n == 0 || *n > Config::kMaxConnectionsPerThread) return bad(*v, "1..256");
      cfg.connections_per_thread = *n;
    } else if (flag == "--pipeline") {
      auto v = need("a depth");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<unsigned>(*v);
      if (!n || *n == 0 || *n > Config::kMaxPipeline) return bad(*v, "a depth 1..1024");
      cfg.pipeline = *n;
    } else if (flag == "-n" || flag == "--requests") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint64_t>(*v);
      if (!n || *n == 0) return bad(*v, "a positive request count");
      cfg.requests_per_thread = *n;
    } else if (flag == "-d" || flag == "--duration") {
      auto v = need("a duration");
      if (!v) return CliOutcome::kError;
      auto d = parse_duration_in(*v, common::BareUnit::seconds, std::chrono::nanoseconds(1),
                                 kMaxRunTime);
      if (!d) return bad(*v, "a positive duration such as 10s or 500ms; a bare number is seconds");
      cfg.duration = *d;
    } else if (flag == "--warmup") {
      auto v = need("requests or a duration");
      if (!v) return CliOutcome::kError;
      if (!v->empty() &&
          v->back() == 's') {  // "2s", "500ms": a time; a bare number counts requests
        auto d = parse_duration_in(*v, common::BareUnit::required, std::chrono::nanoseconds(0),
                                   kMaxRunTime);
        if (!d) return bad(*v, "N requests or a duration like 2s or 500ms");
        cfg.warmup_time = *d;
        cfg.warmup_requests = 0;
      } else {
        auto n = parse_int<std::uint64_t>(*v);
        if (!n) return bad(*v, "N requests or a duration like 2s or 500ms");
        cfg.warmup_requests = *n;
        cfg.warmup_time = std::chrono::nanoseconds(0);
      }
    } else if (flag == "--rate") {
      auto v = need("requests/s");
      if (!v) return CliOutcome::kError;
      auto r = parse_double(*v);
      if (!r || *r < 0 || *r > 1e8) return bad(*v, "a rate 0..1e8 req/s");
      cfg.rate_rps = *r;
    } else if (flag == "--pin-cpus") {
      auto v = need("a CPU list");
      if (!v) return CliOutcome::kError;
      auto list = parse_list<int>(*v, ',');
      if (!list ||
          std::any_of(list->begin(), list->end(), [](int c) { return c < 0 || c >= 1024; }))
        return bad(*v, "a comma-separated CPU list like 0,1");
      cfg.pin_cpus = *list;
    } else if (flag == "--workload") {
      auto v = need("a workload name");
      if (!v) return CliOutcome::kError;
      auto k = parse_workload(*v);
      if (!k)
        return bad(*v,
                   "etc|get-popular|put-all|mixed|zipf|uniform|fixed-get|board-update|board-top|"
                   "board-mixed|board-score");
      cfg.workload.kind = *k;
      workload_given = true;
    } else if (flag == "--ratio") {
      auto v = need("G:S:D");
      if (!v) return CliOutcome::kError;
      std::vector<double> parts;
      std::istringstream in(*v);
      std::string item;
      while (std::getline(in, item, ':')) {
        auto d = parse_double(item);
        if (!d || *d < 0) return bad(*v, "three non-negative weights G:S:D");
        parts.push_back(*d);
      }
      if (parts.size() != 3 || parts[0] + parts[1] + parts[2] <= 0)
        return bad(*v, "three non-negative weights G:S:D");
      ratio = OpRatio{parts[0], parts[1], parts[2]};
    } else if (flag == "--theta") {
      auto v = need("a number");
      if (!v) return CliOutcome::kError;
      auto d = parse_double(*v);
      if (!d || *d < 0 || *d > 10) return bad(*v, "0..10");
      cfg.workload.theta = *d;
    } else if (flag == "--miss-ratio") {
      auto v = need("a fraction");
      if (!v) return CliOutcome::kError;
      auto d = parse_double(*v);
      if (!d || *d < 0 || *d > 1) return bad(*v, "0..1");
      miss_ratio = *d;
    } else if (flag == "--keys") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint64_t>(*v);
      if (!n || *n == 0 || *n > kMaxKeys) return bad(*v, "1..1000000000");
      cfg.workload.keys = *n;
    } else if (flag == "--hot-keys") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint64_t>(*v);
      if (!n || *n == 0) return bad(*v, "a positive count");
      cfg.workload.hot_keys = *n;
    } else if (flag == "--key-size") {
      auto v = need("bytes");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint32_t>(*v);
      if (!n || *n < 2 || *n > WorkloadConfig::kMaxKeyBytes) return bad(*v, "2..250 bytes");
      cfg.workload.key_bytes = *n;
    } else if (flag == "--value-size") {
      auto v = need("bytes");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint32_t>(*v);
      if (!n || *n > kMaxValueLimit) return bad(*v, "0..67108864 bytes");
      cfg.workload.value_bytes = *n;
      if (*n == 0) cfg.workload.value_bytes = 0;
    } else if (flag == "--max-value-size") {
      auto v = need("bytes");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint32_t>(*v);
      if (!n || *n == 0 || *n > kMaxValueLimit) return bad(*v, "1..67108864 bytes");
      cfg.workload.max_value_bytes = *n;
    } else if (flag == "--path") {
      auto v = need("a path");
      if (!v) return CliOutcome::kError;
      if (v->empty() || v->front() != '/' || v->find_first_of(" \r\n") != std::string::npos)
        return bad(*v, "an absolute path like /mem");
      cfg.workload.path = *v;
      if (!workload_given) cfg.workload.kind = WorkloadKind::kFixedGet;
    } else if (flag == "--boards") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint32_t>(*v);
      if (!n || *n == 0 || *n > WorkloadConfig::kMaxBoards) return bad(*v, "1..1000000");
      cfg.workload.boards = *n;
      board_flag = flag;
    } else if (flag == "--members") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint64_t>(*v);
      if (!n || *n == 0 || *n > WorkloadConfig::kMaxBoardMembers) return bad(*v, "1..1000000000");
      cfg.workload.members = *n;
      board_flag = flag;
    } else if (flag == "--top-n") {
      auto v = need("a count");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint32_t>(*v);
      if (!n || *n == 0 || *n > WorkloadConfig::kMaxTopN) return bad(*v, "1..1000");
      cfg.workload.top_n = *n;
      top_n_given = true;
    } else if (flag == "--seed") {
      auto v = need("a number");
      if (!v) return CliOutcome::kError;
      auto n = parse_int<std::uint64_t>(*v);
      if (!n) return bad(*v, "a non-negative integer");
      cfg.workload.seed = *n;
    } else if (flag == "--json") {
      auto v = need("a file name");
      if (!v) return CliOutcome::kError;
      cfg.json_path = *v;
    } else if (flag == "--csv") {
      auto v = need("a file name");
      if (!v) return CliOutcome::kError;
      cfg.csv_path = *v;
    } else if (flag == "--record-trace") {
      auto v = need("a file name");
      if (!v) return CliOutcome::kError;
      if (v->empty()) return bad(*v, "a file name");
      cfg.record_trace_path = *v;
    } else {
      error = "unknown option '" + flag + "' (see --help)";
      return CliOutcome::kError;
    }
    if (!error.empty()) return CliOutcome::kError;
  }

  // Derived settings and cross-checks.
  if (cfg.thread_counts.empty()) {
    const unsigned cap = max_threads.value_or(Config::kDefaultMaxThreads);
    for (unsigned t : kDefaultThreadCounts)
      if (t <= cap) cfg.thread_counts.push_back(t);
    if (cfg.thread_counts.empty() || cfg.thread_counts.back() != cap) {
      if (cap > cfg.thread_counts.back()) cfg.thread_counts.push_back(cap);
    }
  } else if (max_threads) {
    std::erase_if(cfg.thread_counts, [&](unsigned t) { return t > *max_threads; });
    if (cfg.thread_counts.empty()) {
      error = "--max-threads removes every count of --threads";
      return CliOutcome::kError;
    }
  }
  const WorkloadDefaults d = defaults_for(cfg.workload.kind);
  cfg.workload.ratio = d.ratio;
  cfg.workload.miss_ratio = d.miss_ratio;
  const WorkloadKind kind = cfg.workload.kind;
  const bool takes_miss_ratio = kind == WorkloadKind::kEtc || kind == WorkloadKind::kMixed ||
                                kind == WorkloadKind::kZipf || kind == WorkloadKind::kUniform;
  const bool takes_ratio = takes_miss_ratio || kind == WorkloadKind::kBoardMixed;
  if (ratio) {
    if (!takes_ratio) {
      error = std::string("--ratio does not apply to workload ") + workload_name(kind);
      return CliOutcome::kError;
    }
    if (kind == WorkloadKind::kBoardMixed && ratio->del != 0) {
      error =
          "--ratio for board-mixed is READS:UPDATES:0 (top-N reads : updates); board workloads "
          "send no deletes";
      return CliOutcome::kError;
    }
    cfg.workload.ratio = *ratio;
  }
  const bool board = is_board_workload(kind);
  if (!board_flag.empty() && !board) {
    error = board_flag + " applies to the board workloads only (board-update, board-top, " +
            "board-mixed, board-score), not to " + workload_name(kind);
    return CliOutcome::kError;
  }
  if (top_n_given && kind != WorkloadKind::kBoardTop && kind != WorkloadKind::kBoardMixed) {
    error = std::string("--top-n applies to board-top and board-mixed only, not to ") +
            workload_name(kind);
    return CliOutcome::kError;
  }
  if (board && std::uint64_t{cfg.workload.boards} * cfg.workload.members >
                   WorkloadConfig::kMaxBoardMembers) {
    error = "--boards x --members must be at most 1000000000 (got " +
            std::to_string(cfg.workload.boards) + " x " + std::to_string(cfg.workload.members) +
            ")";
    return CliOutcome::kError;
  }
  if (!cfg.record_trace_path.empty() && board) {
    error =
        std::string("--record-trace records keys; workload ") + workload_name(kind) + " has none";
    return CliOutcome::kError;
  }
  if (miss_ratio) {
    if (!takes_miss_ratio) {
      error = std::string("--miss-ratio does not apply to workload ") +
              workload_name(cfg.workload.kind);
      return CliOutcome::kError;
    }
    cfg.workload.miss_ratio = *miss_ratio;
  }
  if (!cfg.record_trace_path.empty() && cfg.workload.kind == WorkloadKind::kFixedGet) {
    error = "--record-trace records keys; workload fixed-get has none";
    return CliOutcome::kError;
  }
  if (!cfg.targets.empty()) {
    if (host_given || port_given) {
      error = std::string("--targets names the servers: it cannot be combined with ") +
              (host_given ? "--host" : "--port");
      return CliOutcome::kError;
    }
    if (cfg.workload.kind == WorkloadKind::kFixedGet) {
      error =
          "--targets places requests by their key or board; workload fixed-get has none (send it "
          "to one server with --host/--port)";
      return CliOutcome::kError;
    }
    if (!cfg.server_pids.empty() && cfg.server_pids.size() != cfg.targets.size()) {
      error = "--server-pid with --targets needs one PID per target, in --targets order (got " +
              std::to_string(cfg.server_pids.size()) + " PIDs for " +
              std::to_string(cfg.targets.size()) + " targets)";
      return CliOutcome::kError;
    }
  } else if (weight_given) {
    error = "--target-weight applies to --targets only";
    return CliOutcome::kError;
  }
  if (cfg.workload.value_bytes > cfg.workload.max_value_bytes)
    cfg.workload.max_value_bytes = cfg.workload.value_bytes;
  const unsigned max_count = *std::max_element(cfg.thread_counts.begin(), cfg.thread_counts.end());
  if (cfg.pipeline > 1 && cfg.rate_rps > 0) {
    error = "--pipeline above 1 works in the closed loop only; it cannot be combined with --rate";
    return CliOutcome::kError;
  }
  if (cfg.rate_rps > 0 && cfg.rate_rps < max_count) {
    error = "--rate must be at least one request/s per thread";
    return CliOutcome::kError;
  }
  return CliOutcome::kRun;
}

}  // namespace bench
