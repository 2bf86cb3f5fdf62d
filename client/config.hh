// The whole run configuration of bench_client in one struct, with named defaults carrying units.
// Parsed by the flag table (flag_table.cc) and cli.cc, validated there, and passed by const
// reference everywhere; no globals.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "client/verify_sampler.hh"

namespace client {

enum class WorkloadKind {
  kEtc,
  kGetPopular,
  kPutAll,
  kMixed,
  kZipf,
  kUniform,
  kFixedGet,
  kBoardUpdate,  // PUT /board/b<i>/member/m<j>?op=set with random scores
  kBoardTop,     // GET /board/b<i>/top?n=<top_n>
  kBoardMixed,   // top-N reads and updates, --ratio G:S:0 = reads:updates
  kBoardScore,   // GET /board/b<i>/member/m<j>
};

const char* workload_name(WorkloadKind kind);
// The leaderboard workloads (board.hh): they talk to /board/..., not /key/....
bool is_board_workload(WorkloadKind kind);

// Operation mix in relative weights (GET:SET:DELETE); need not sum to anything in particular.
// board-mixed reads GET as top-N reads and SET as member updates (DELETE must be 0).
struct OpRatio {
  double get = 30.0;
  double set = 1.0;
  double del = 0.0;
};

struct WorkloadConfig {
  static constexpr std::uint64_t kDefaultKeys = 10'000;
  static constexpr std::uint64_t kDefaultHotKeys = 8;
  static constexpr double kDefaultTheta = 0.99;  // Zipf exponent of the popularity law
  static constexpr double kEtcMissRatio = 0.20;  // share of ETC GETs aimed at never-stored keys
  static constexpr std::uint32_t kDefaultFixedValueBytes = 100;
  static constexpr std::uint32_t kDefaultMaxValueBytes = 100 * 1024;
  static constexpr std::uint32_t kMaxKeyBytes = 250;
  static constexpr std::uint32_t kDefaultBoards = 1;
  static constexpr std::uint64_t kDefaultMembers = 100'000;  // per board
  static constexpr std::uint32_t kDefaultTopN = 100;
  static constexpr std::uint32_t kMaxBoards = 1'000'000;
  static constexpr std::uint64_t kMaxBoardMembers = 1'000'000'000;  // boards x members, in total
  static constexpr std::uint32_t kMaxTopN = 1'000;

  WorkloadKind kind = WorkloadKind::kEtc;
  OpRatio ratio{};               // effective mix (filled from the workload's default or --ratio)
  double theta = kDefaultTheta;  // Zipf exponent (etc, zipf)
  double miss_ratio = kEtcMissRatio;  // share of GETs aimed at the cold (never stored) namespace
  std::uint64_t keys = kDefaultKeys;
  std::uint64_t hot_keys = kDefaultHotKeys;
  std::uint32_t value_bytes = 0;  // 0 = the workload's size model (etc: Facebook ETC)
  std::uint32_t key_bytes = 0;    // 0 = GEV key-size model
  std::uint32_t max_value_bytes = kDefaultMaxValueBytes;
  std::string path = "/";                   // fixed-get only
  std::uint32_t boards = kDefaultBoards;    // board workloads: boards b0..b<boards-1>
  std::uint64_t members = kDefaultMembers;  // board workloads: members m0..m<members-1> per board
  std::uint32_t top_n = kDefaultTopN;       // board-top, board-mixed: n of GET .../top?n=
  // --score-max: board-update scores are drawn from [0, score_max) in steps of 0.1
  static constexpr double kDefaultScoreMax = 1e9;
  double score_max = kDefaultScoreMax;
  std::uint64_t seed = 1;
};

// --slo pP=BOUND (e.g. p99=1ms, p99.9=500us): search for the highest open-loop rate whose corrected
// percentile P meets BOUND (slo_search.hh). Empty text = no search.
struct SloConfig {
  static constexpr double kDefaultPrecision = 0.02;  // stop when hi/lo - 1 is below this
  std::string text;                                  // as given, e.g. "p99=1ms"
  double percentile = 0.0;                           // 99 for p99, 99.9 for p99.9
  std::chrono::nanoseconds bound{0};                 // the latency the percentile must not exceed
  double max_rate_rps = 0.0;             // --slo-max-rate: upper end of the search; 0 = measured
  double precision = kDefaultPrecision;  // --slo-precision
};

struct Config {
  static constexpr std::uint16_t kDefaultPort = 8080;
  static constexpr unsigned kDefaultMaxThreads = 16;
  static constexpr unsigned kMaxThreadsLimit = 1024;
  static constexpr unsigned kMaxConnectionsPerThread = 4096;
  static constexpr unsigned kMaxPipeline = 1024;
  static constexpr std::uint64_t kMaxRequestsTotal = 1'000'000'000'000;  // --requests-total
  static constexpr std::uint64_t kDefaultRequestsPerThread = 50'000;
  static constexpr std::uint64_t kDefaultWarmupRequests = 1'000;
  static constexpr std::chrono::milliseconds kDefaultTimeout{5'000};
  static constexpr std::chrono::milliseconds kMinTimeout{10};
  static constexpr std::chrono::milliseconds kMaxTimeout{600'000};  // inside the histogram's range
  static constexpr std::chrono::seconds kMaxSeriesSeconds{3'600};   // time series is capped here

  static constexpr std::size_t kMaxTargets = 64;
  static constexpr unsigned kDefaultTargetWeight = 10;  // scripts/cluster.sh's weight=
  static constexpr unsigned kMaxTargetWeight = 100;

  std::string host = "127.0.0.1";
  std::uint16_t port = kDefaultPort;
  // --protocol: what the key workloads speak. kResp sends GET/SET/DEL as Redis commands
  // (client/resp.hh) to a RESP server: cache_server --resp-port, Redis.
  enum class Protocol { kHttp, kResp };
  Protocol protocol = Protocol::kHttp;
  // --targets: the nodes of a consistent-hash cluster (placement.hh), each request sent straight
  // to the node nginx's `hash ... consistent` would pick; empty = the one server --host/--port.
  struct Target {
    std::string text;  // HOST:PORT as given (the ring hashes this string)
    std::string host;
    std::uint16_t port = 0;
  };
  std::vector<Target> targets;
  unsigned target_weight = kDefaultTargetWeight;  // nginx's weight= of every node
  std::vector<unsigned> thread_counts;  // the sweep's points, after --threads/--max-threads
  unsigned connections_per_thread = 1;
  unsigned pipeline = 1;  // requests outstanding per connection (closed and open loop)
  // --ttl: every key PUT (preload and workload) carries ?ttl=SECONDS (docs/api.md, "Expiry");
  // 0 = none. Board writes are not keys and carry none.
  std::uint32_t ttl_seconds = 0;
  static constexpr std::uint32_t kMaxTtlSeconds = 315'360'000;    // the server's ten years
  std::uint64_t requests_per_thread = kDefaultRequestsPerThread;  // ignored when duration > 0
  // --requests-total: the point's measured requests across all threads (like ab -n), split as
  // evenly as possible; 0 = requests_per_thread per thread. Ignored when duration > 0.
  std::uint64_t requests_total = 0;
  std::chrono::nanoseconds duration{0};                    // > 0: each point runs this long instead
  std::uint64_t warmup_requests = kDefaultWarmupRequests;  // per thread, when warmup_time == 0
  std::chrono::nanoseconds warmup_time{0};
  double rate_rps = 0.0;                                // > 0: open loop at this total rate
  std::chrono::milliseconds timeout = kDefaultTimeout;  // per socket operation
  bool preload = true;
  bool reset = true;  // POST /reset before the preload (when /stats works)
  // --admin-token-file: the server's admin token (the file's bytes, trailing whitespace trimmed),
  // sent as "Authorization: Bearer <token>" with the POST /reset; empty = none is sent.
  std::string admin_token_file;
  std::string admin_token;
  // --server-pid: empty = do not sample the server's CPU. Without --targets, the CPU of all is
  // summed (e.g. nginx's workers); with --targets, one per target, in --targets order.
  std::vector<int> server_pids;
  std::vector<int> pin_cpus;  // empty = no pinning; thread i -> pin_cpus[i % n]
  std::string json_path;
  std::string csv_path;
  std::string record_trace_path;  // --record-trace: every request's key (trace_record.hh)
  bool quiet = false;
  VerifyPolicy verify;  // --verify all|N|off: which answers are checked in full
  SloConfig slo;
  WorkloadConfig workload;
};

}  // namespace client
