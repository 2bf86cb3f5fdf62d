// evictor_op_cost.cc — a fixed, deterministic workload per evictor for counting instructions per
// operation with callgrind (wall-clock on a shared VM cannot resolve a few percent; instruction
// counts repeat exactly). Three phases, each its own function so callgrind can isolate it:
//   run_get     100k GET hits on a cache of 100k keys (nothing evicted)
//   run_set     100k SETs replacing existing keys (the paired bench's "set")
//   run_insert  100k SETs of new keys into a full cache (each evicts one entry)
// Usage: evictor_op_cost EVICTOR, e.g.
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='run_get*'
//            build/release/optimizations/evictor_op_cost s3fifo        (one command line)
// then Ir per operation = callgrind_annotate's PROGRAM TOTALS / 100,000.
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cache/cache.hh"

namespace {

constexpr int kKeys = 100'000;
constexpr int kOps = 100'000;

std::vector<std::string> g_keys;   // present in the cache
std::vector<std::string> g_fresh;  // never set before run_insert
std::vector<int> g_order;          // random key indices, the same for every evictor
char g_buffer[256];

__attribute__((noinline)) void run_get(cache::Cache& c) {
  for (int i = 0; i < kOps; ++i) {
    c.get(g_keys[g_order[i]],
          [](std::string_view v) { std::memcpy(g_buffer, v.data(), v.size()); });
  }
}

__attribute__((noinline)) void run_set(cache::Cache& c, const std::string& value) {
  for (int i = 0; i < kOps; ++i) c.set(g_keys[g_order[i]], value);
}

__attribute__((noinline)) void run_insert(cache::Cache& c, const std::string& value) {
  for (int i = 0; i < kOps; ++i) c.set(g_fresh[i], value);
}

}  // namespace

int main(int argc, char** argv) {
  const auto evictor = argc == 2 ? cache::parse_evictor(argv[1]) : std::nullopt;
  if (!evictor) {
    std::fprintf(stderr,
                 "usage: evictor_op_cost EVICTOR (none, fifo, lru, clock, s3fifo, sieve)\n");
    return 2;
  }
  for (int i = 0; i < kKeys; ++i) g_keys.push_back("key:" + std::to_string(i));
  for (int i = 0; i < kOps; ++i) g_fresh.push_back("new:" + std::to_string(i));
  std::mt19937 rng(7);
  for (int i = 0; i < kOps; ++i) g_order.push_back(static_cast<int>((rng() >> 8) % kKeys));
  const std::string value(100, 'v');

  cache::Options roomy;
  roomy.maxmem = std::size_t{kKeys} * 200;  // everything fits, as in the throughput benches
  roomy.evictor = *evictor;
  cache::Cache c(roomy);
  for (const auto& k : g_keys) c.set(k, value);
  run_get(c);
  run_set(c, value);

  cache::Options full = roomy;
  full.maxmem = std::size_t{kKeys} * 109;  // about the 100k keys' bytes: every new key evicts
  cache::Cache d(full);
  for (const auto& k : g_keys) d.set(k, value);
  run_insert(d, value);
  std::printf("%s: %zu items, %zu items after inserting (%llu evictions)\n", argv[1], c.size(),
              d.size(), static_cast<unsigned long long>(d.stats().evictions));
  return 0;
}
