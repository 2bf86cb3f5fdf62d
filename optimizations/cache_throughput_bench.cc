// cache_throughput_bench.cc — get/set ops/s of the cache library for each evictor and lock
// scheme, at 1 and 2 threads, on a warm cache of 100k 100-byte values (all gets hit).
//   BM_Get      100% hits
//   BM_Set      100% replacements of existing keys (no growth, constant eviction-free churn)
//   BM_Mixed95  95% get / 5% set, the shape of the "shared_lock reads" optimization
// Arguments: evictor (0 none, 1 fifo, 2 lru, 3 clock, 4 s3fifo, 5 sieve), lock (0 shared_reads, 1
// exclusive_all), shards. Run: build/release/optimizations/cache_throughput_bench
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cache/cache.hh"

namespace {

constexpr int kKeys = 100'000;
constexpr std::size_t kValueBytes = 100;

const std::vector<std::string>& keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> v;
    v.reserve(kKeys);
    for (int i = 0; i < kKeys; ++i) v.push_back("key:" + std::to_string(i));
    return v;
  }();
  return k;
}

std::unique_ptr<cache::Cache> g_cache;  // shared by the benchmark's threads; thread 0 owns it

void setup(const benchmark::State& state) {
  if (state.thread_index() != 0) return;
  cache::Options o;
  o.maxmem = std::size_t{kKeys} * 200;  // everything fits: these measure lookups, not eviction
  o.evictor = static_cast<cache::Evictor>(state.range(0));
  o.lock = static_cast<cache::LockScheme>(state.range(1));
  o.shards = static_cast<unsigned>(state.range(2));
  g_cache = std::make_unique<cache::Cache>(o);
  const std::string value(kValueBytes, 'v');
  for (const auto& k : keys()) g_cache->set(k, value);
}

void teardown(const benchmark::State& state) {
  if (state.thread_index() == 0) g_cache.reset();
}

void label(benchmark::State& state) {
  state.SetLabel(std::string(cache::to_string(static_cast<cache::Evictor>(state.range(0)))) + "/" +
                 cache::to_string(static_cast<cache::LockScheme>(state.range(1))) + "/" +
                 std::to_string(state.range(2)) + "sh");
}

void BM_Get(benchmark::State& state) {
  setup(state);
  std::mt19937 rng(state.thread_index() + 1);
  char buffer[kValueBytes];
  const auto& k = keys();
  for (auto _ : state) {
    const bool hit = g_cache->get(
        k[rng() % kKeys], [&](std::string_view v) { std::memcpy(buffer, v.data(), v.size()); });
    benchmark::DoNotOptimize(hit);
    benchmark::DoNotOptimize(buffer);
  }
  state.SetItemsProcessed(state.iterations());
  label(state);
  teardown(state);
}

void BM_Set(benchmark::State& state) {
  setup(state);
  std::mt19937 rng(state.thread_index() + 1);
  const std::string value(kValueBytes, 'w');
  const auto& k = keys();
  for (auto _ : state) benchmark::DoNotOptimize(g_cache->set(k[rng() % kKeys], value));
  state.SetItemsProcessed(state.iterations());
  label(state);
  teardown(state);
}

void BM_Mixed95(benchmark::State& state) {
  setup(state);
  std::mt19937 rng(state.thread_index() + 1);
  const std::string value(kValueBytes, 'w');
  char buffer[kValueBytes];
  const auto& k = keys();
  for (auto _ : state) {
    const unsigned r = rng();
    const std::string& key = k[(r >> 8) % kKeys];
    if (r % 100 < 5) {
      benchmark::DoNotOptimize(g_cache->set(key, value));
    } else {
      benchmark::DoNotOptimize(
          g_cache->get(key, [&](std::string_view v) { std::memcpy(buffer, v.data(), v.size()); }));
    }
  }
  state.SetItemsProcessed(state.iterations());
  label(state);
  teardown(state);
}

void matrix(benchmark::internal::Benchmark* b) {
  for (int evictor : {0, 1, 2, 3, 4, 5}) {
    for (int lock : {0, 1}) {
      for (int shards : {1, 8}) b->Args({evictor, lock, shards});
    }
  }
  b->ArgNames({"evictor", "lock", "shards"})->Threads(1)->Threads(2)->UseRealTime();
}

BENCHMARK(BM_Get)->Apply(matrix);
BENCHMARK(BM_Set)->Apply(matrix);
BENCHMARK(BM_Mixed95)->Apply(matrix);

}  // namespace

BENCHMARK_MAIN();
