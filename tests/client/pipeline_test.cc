// --pipeline at the Worker level, against the real cache_server (spawned on an ephemeral port):
// every request of a pipelined run is answered, paired with its own response (a GET answered with
// another key's value would fail verification), and recorded in the latency histogram exactly once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/cli.hh"
#include "client/perf.hh"
#include "client/worker.hh"

extern char** environ;

namespace client {
namespace {

// cache_server -t 1 -p 0 with its output in a file; the port is read from "listening on H:P".
class ServerProcess {
 public:
  explicit ServerProcess(const std::string& binary)
      : log_(testing::TempDir() + "pipeline_server_" + std::to_string(::getpid()) + ".log") {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<std::string> args = {binary, "-t", "1", "-p", "0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 150 && pid_ > 0 && port_ == 0; ++i) {
      std::ifstream in(log_);
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      const auto at = s.find("listening on ");
      const auto eol = at == std::string::npos ? std::string::npos : s.find('\n', at);
      if (eol != std::string::npos) {
        port_ = static_cast<std::uint16_t>(std::stoi(s.substr(s.rfind(':', eol) + 1)));
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::remove(log_.c_str());
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  std::uint16_t port() const { return port_; }

 private:
  std::string log_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

// A cache_server of its own, bench_client's config for it (uniform workload plus the start()
// arguments), the resolved endpoint, and the key space preloaded through one connection.
struct PreloadedServer {
  explicit PreloadedServer(const std::string& binary) : server(binary) {}

  void start(std::vector<std::string> args) {
    ASSERT_NE(server.port(), 0) << "cache_server did not start";
    args.insert(args.begin(), {"-p", std::to_string(server.port()), "--workload", "uniform"});
    std::string err;
    ASSERT_EQ(parse_args(args, cfg, err), CliOutcome::kRun) << err;
    ASSERT_TRUE(resolve(cfg.host, cfg.port, ep, err)) << err;
    bench.emplace(cfg, ep);
    preload = bench->preload(1);
    ASSERT_TRUE(preload.ok) << preload.message;
  }

  // Runs one Worker with `plan` for `requests` requests (the config's timeout) to its end, checks
  // that every request completed without an error, then hands its stats and gate to `check`.
  template <class Check>
  void run_worker(WorkerPlan plan, std::uint64_t requests, Check check) {
    plan.requests = requests;
    plan.timeout = cfg.timeout;
    StartGate gate(1, 0);
    Worker worker(cfg, ep, bench->keyspace(), plan, gate);
    worker.run();
    const WorkerStats& s = worker.stats();
    ASSERT_FALSE(s.fatal) << s.fatal_message;
    EXPECT_EQ(s.completed, requests);
    EXPECT_EQ(s.errors(), 0u);
    check(s, gate);
  }

  ServerProcess server;
  Config cfg;
  Endpoint ep;
  std::optional<Bench> bench;
  PreloadResult preload;
};

class PipelineWorker : public testing::TestWithParam<unsigned> {};

TEST_P(PipelineWorker, EveryRequestIsAnsweredVerifiedAndRecordedOnce) {
#ifndef BENCH_CACHE_SERVER
  GTEST_SKIP() << "cache_server is not built";
#else
  PreloadedServer target(BENCH_CACHE_SERVER);
  ASSERT_NO_FATAL_FAILURE(target.start({"--keys", "200", "--pipeline", "8", "--timeout", "5000"}));
  ASSERT_EQ(target.preload.errors, 0u);
  const Config& cfg = target.cfg;

  constexpr std::uint64_t kRequests = 1003;  // not a multiple of the depth
  WorkerPlan plan;
  plan.connections = GetParam();
  plan.pipeline = cfg.pipeline;
  target.run_worker(plan, kRequests, [&](const WorkerStats& s, const StartGate&) {
    EXPECT_EQ(s.latency.count(), kRequests);  // each request in the histogram exactly once
    EXPECT_EQ(s.gets + s.sets + s.deletes, kRequests);
    EXPECT_GT(s.gets, 0u);
    EXPECT_GT(s.sets, 0u);
    EXPECT_EQ(s.get_hits, s.gets);  // every key was preloaded, and every hit was byte-checked:
    EXPECT_EQ(s.mismatches, 0u);    // a response paired with the wrong request would mismatch
    std::uint64_t in_series = 0;
    for (const auto& second : s.series)
      for (const auto& [bucket, n] : second.buckets) in_series += n;
    EXPECT_EQ(in_series, kRequests);
  });
#endif
}

INSTANTIATE_TEST_SUITE_P(Connections, PipelineWorker, testing::Values(1u, 3u));

// The open loop plans one send time per request, so a Worker at depth 8 with a rate sends only
// the requests that are due (up to 8 outstanding): if it filled its free slots as the closed loop
// does, each planned send would carry a batch of 8 and the run would go 8 times faster than
// planned.
TEST(PipelineWorkerOpenLoop, SendsOnlyWhatIsDueAtDepth8) {
#ifndef BENCH_CACHE_SERVER
  GTEST_SKIP() << "cache_server is not built";
#else
  PreloadedServer target(BENCH_CACHE_SERVER);
  ASSERT_NO_FATAL_FAILURE(target.start({"--keys", "50", "--rate", "2000", "--timeout", "5000"}));

  constexpr std::uint64_t kRequests = 200;  // planned 0.5 ms apart: the last at 99.5 ms
  WorkerPlan plan;
  plan.pipeline = 8;
  plan.rate_rps = 2000.0;
  target.run_worker(plan, kRequests, [&](const WorkerStats& s, const StartGate& gate) {
    EXPECT_EQ(s.send_lag.count(), kRequests);
    // No request goes out before its planned time.
    EXPECT_GE(s.last_completion - gate.t0(), std::chrono::microseconds(99'500));
  });
#endif
}

}  // namespace
}  // namespace client
