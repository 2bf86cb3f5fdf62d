// value_path_bench.cc — the "cstring value path" optimization against its baseline, in
// isolation: the server's own GET handler (Handlers::get_key) answering a hit on a warm cache
// into a reused response buffer, with each value-path policy (server/api/variant.hh).
//   BM_ValuePath_CString  the value is copied from inside the cache's sink into the response
//   BM_ValuePath_String   the value is first copied into a std::string built per GET (baseline)
// Argument: value size in bytes (100, 4096). Besides ns/op, "allocs_per_op" counts calls to the
// global operator new per GET, from the counting operator new defined in this binary.
// Run: build/release/optimizations/value_path_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

#include "cache/cache.hh"
#include "server/api/handlers.hh"
#include "server/api/variant.hh"
#include "server/config.hh"
#include "server/server_context.hh"
#include "server/transport/response_writer.hh"
#include "server/transport/stats.hh"
#include "tests/support/counting_new.hh"

namespace {

constexpr int kKeys = 1000;

template <class ValuePath>
void BM_ValuePath(benchmark::State& state) {
  const auto value_bytes = static_cast<std::size_t>(state.range(0));
  server::Config config;  // the server's defaults: 64 MiB, shared_reads, sharded
  cache::Cache cache(server::cache_options(config));
  server::StatsRegistry stats(1);
  server::ServerContext ctx(config, cache, stats);
  server::Handlers handlers{ctx, stats.worker(0)};
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back("key:" + std::to_string(i));
    if (cache.set(keys.back(), std::string(value_bytes, 'v')) != cache::SetResult::created) {
      state.SkipWithError("cache set failed");
      return;
    }
  }
  std::string out;
  out.reserve(2 * value_bytes + 256);
  server::ResponseWriter writer(out);
  const server::RequestView request;  // a hit needs nothing from the request but the key
  std::size_t i = 0;
  bool ok = true;
  const std::uint64_t before = counting_new::allocations();
  for (auto _ : state) {
    out.clear();
    writer.begin_request(true, false, false, 0);
    const server::HandlerResult r =
        handlers.get_key<ValuePath>(keys[i], /*json=*/false, request, writer);
    ok &= r.ok();
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    if (++i == keys.size()) i = 0;
  }
  const std::uint64_t allocations = counting_new::allocations() - before;
  if (!ok || out.size() < value_bytes) state.SkipWithError("GET did not hit");
  state.counters["allocs_per_op"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * value_bytes));
}

void BM_ValuePath_CString(benchmark::State& state) {
  BM_ValuePath<server::CStringValue>(state);
}
void BM_ValuePath_String(benchmark::State& state) {
  BM_ValuePath<server::StringValue>(state);
}

}  // namespace

BENCHMARK(BM_ValuePath_CString)->Arg(100)->Arg(4096);
BENCHMARK(BM_ValuePath_String)->Arg(100)->Arg(4096);

BENCHMARK_MAIN();
