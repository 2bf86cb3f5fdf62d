// evictor_paired_bench.cc — cache throughput of each evictor against CLOCK, measured in pairs so
// that a noisy shared VM cancels out.
//
// cache_throughput_bench runs one configuration after another; on a VM whose neighbours come and
// go, two runs of the *same* configuration differ by more than the 5% an evictor is allowed to
// cost (issue 16). Here every evictor's cache is built and filled up front (100k keys of 100 bytes,
// nothing evicted, as in cache_throughput_bench), then each round runs the same operations on
// every cache in turn and times them in thread CPU time. The result per evictor is the median
// over rounds of (CLOCK's time / its time): > 1 means faster than CLOCK. CLOCK is measured twice
// (first and last in each round); the two halves' ratio shows the noise floor.
//   evictor_paired_bench [get|mix|set] [shards] [threads]     (defaults: get 1 1)
//   mix is 95% get / 5% set; set replaces existing keys.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache.hh"

namespace {

constexpr int kKeys = 100'000;
constexpr std::size_t kValueBytes = 100;
constexpr int kRounds = 40;
constexpr int kOpsPerRound = 200'000;  // per thread

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

enum class Mode { get, mix, set };

// Runs one round on `c` with `threads` threads; returns the mean CPU seconds per thread.
double run_round(cache::Cache& c, const std::vector<std::string>& keys, Mode mode, int threads,
                 int round) {
  std::vector<double> cpu(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(round * 131 + t));  // same ops for every cache
      const std::string value(kValueBytes, 'w');
      char buffer[kValueBytes];
      const double start = thread_cpu_seconds();
      for (int i = 0; i < kOpsPerRound; ++i) {
        const unsigned r = rng();
        const std::string& key = keys[(r >> 8) % kKeys];
        if (mode == Mode::set || (mode == Mode::mix && r % 100 < 5)) {
          c.set(key, value);
        } else {
          c.get(key, [&](std::string_view v) { std::memcpy(buffer, v.data(), v.size()); });
        }
      }
      cpu[t] = thread_cpu_seconds() - start;
    });
  }
  for (auto& w : workers) w.join();
  double sum = 0;
  for (double x : cpu) sum += x;
  return sum / threads;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode_name = argc > 1 ? argv[1] : "get";
  const Mode mode = mode_name == "mix" ? Mode::mix : mode_name == "set" ? Mode::set : Mode::get;
  const unsigned shards = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  if (shards < 1 || threads < 1 || (mode == Mode::get && mode_name != "get")) {
    std::fprintf(stderr, "usage: evictor_paired_bench [get|mix|set] [shards] [threads]\n");
    return 2;
  }
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back("key:" + std::to_string(i));

  // CLOCK first and last: their ratio is the noise floor of the run.
  const std::vector<cache::Evictor> order = {cache::Evictor::clock, cache::Evictor::s3fifo,
                                             cache::Evictor::sieve, cache::Evictor::lru,
                                             cache::Evictor::fifo,  cache::Evictor::clock};
  std::vector<std::unique_ptr<cache::Cache>> caches;
  for (cache::Evictor e : order) {
    cache::Options o;
    o.maxmem = std::size_t{kKeys} * 200;  // everything fits, as in cache_throughput_bench
    o.evictor = e;
    o.shards = shards;
    caches.push_back(std::make_unique<cache::Cache>(o));
    const std::string value(kValueBytes, 'v');
    for (const auto& k : keys) caches.back()->set(k, value);
  }

  std::vector<std::vector<double>> seconds(order.size());
  for (int round = 0; round < kRounds; ++round) {
    for (std::size_t i = 0; i < order.size(); ++i) {
      seconds[i].push_back(run_round(*caches[i], keys, mode, threads, round));
    }
  }
  std::printf("%s, %u shard(s), %d thread(s): median over %d rounds of CLOCK time / its time\n",
              mode_name.c_str(), shards, threads, kRounds);
  for (std::size_t i = 1; i < order.size(); ++i) {
    std::vector<double> ratio;
    for (int r = 0; r < kRounds; ++r) {
      const double clock_time = (seconds.front()[r] + seconds.back()[r]) / 2;
      ratio.push_back(i + 1 == order.size() ? seconds.front()[r] / seconds.back()[r]
                                            : clock_time / seconds[i][r]);
    }
    std::printf("  %-22s %.3f   (%.1f ns/op)\n",
                i + 1 == order.size() ? "clock (first / last)" : cache::to_string(order[i]),
                median(ratio), median(seconds[i]) / kOpsPerRound * 1e9);
  }
  return 0;
}
