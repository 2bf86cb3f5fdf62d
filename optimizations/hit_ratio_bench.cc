// hit_ratio_bench.cc — the hit ratio of each evictor on a Zipf(0.99) trace over 100k keys with
// room for 10% of them, as a look-aside cache (a miss is followed by a set of the key).
//   scan=0  the Zipf trace alone
//   scan=1  the same trace with a one-pass scan mixed in: during the first 200k measured
//           requests, every Zipf request is followed by a request for a never-seen key
//           (100k of them, 10x the cache), as a batch job or a crawler would.
// Only Zipf requests count toward the hit ratio. Same seed, same trace for every evictor.
// The "hit_ratio" counter is the result; the time column is just the trace's run time.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cache/cache.hh"
#include "optimizations/zipf.hh"

namespace {

constexpr std::size_t kKeys = 100'000;
constexpr std::size_t kCapacityItems = kKeys / 10;
constexpr std::size_t kValueBytes = 100;
constexpr std::size_t kKeyBytes = 8;  // "k%07zu" / "s%07zu"
constexpr int kWarmupRequests = 200'000;
constexpr int kMeasuredRequests = 1'000'000;
constexpr int kScanRequests = 200'000;  // the first 200k measured requests are interleaved

std::string key(char prefix, std::size_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%c%07zu", prefix, i);
  return buf;
}

void BM_HitRatio(benchmark::State& state) {
  const auto evictor = static_cast<cache::Evictor>(state.range(0));
  const bool scan = state.range(1) != 0;
  const std::string value(kValueBytes, 'v');
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < kKeys; ++i) keys.push_back(key('k', i));
  bench::ZipfSampler zipf(kKeys, 0.99);
  double hit_ratio = 0;

  for (auto _ : state) {
    cache::Cache c(kCapacityItems * (kKeyBytes + kValueBytes), cache::kDefaultMaxLoadFactor,
                   evictor);
    std::mt19937_64 rng(42);
    auto access = [&](const std::string& k) {
      if (c.get(k, [](std::string_view) {})) return true;
      c.set(k, value);
      return false;
    };
    for (int i = 0; i < kWarmupRequests; ++i) access(keys[zipf(rng)]);
    long hits = 0;
    std::size_t next_scan_key = 0;
    for (int i = 0; i < kMeasuredRequests; ++i) {
      hits += access(keys[zipf(rng)]);
      if (scan && i < kScanRequests && next_scan_key < kKeys) access(key('s', next_scan_key++));
    }
    hit_ratio = static_cast<double>(hits) / kMeasuredRequests;
  }
  state.counters["hit_ratio"] = hit_ratio;
  state.SetLabel(std::string(cache::to_string(evictor)) + (scan ? "+scan" : ""));
}

BENCHMARK(BM_HitRatio)
    ->ArgsProduct({{1, 2, 3, 4, 5}, {0, 1}})  // fifo, lru, clock, s3fifo, sieve x without/with scan
    ->ArgNames({"evictor", "scan"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
