// Multi-threaded stress: writers, readers and deleters on a small key space, for every evictor,
// lock scheme and a sharded layout. Every value carries the seed it was generated from, so a
// reader detects a torn or mixed value; a monitor thread checks space_used() <= maxmem while the
// others run. Under ThreadSanitizer (CI's tsan build) this is also the data-race proof for the
// shared-lock read path (CLOCK's and SIEVE's atomic bits, S3-FIFO's atomic counter, LRU's touch
// mutex).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cache/cache.hh"

namespace {

using cache::Evictor;
using cache::LockScheme;

// value = 8-byte seed + payload derived from the seed (length 0..120).
std::string make_value(std::uint64_t seed) {
  std::string v(8 + seed % 121, '\0');
  std::memcpy(v.data(), &seed, 8);
  std::uint64_t x = seed;
  for (std::size_t i = 8; i < v.size(); ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = static_cast<char>(x >> 56);
  }
  return v;
}

bool value_is_whole(std::string_view v) {
  if (v.size() < 8) return false;
  std::uint64_t seed;
  std::memcpy(&seed, v.data(), 8);
  return v == make_value(seed);
}

constexpr int kThreads = 4;
constexpr int kOpsPerThread = 8000;
constexpr int kKeys = 64;

class Stress : public ::testing::TestWithParam<std::tuple<Evictor, LockScheme, unsigned>> {};

TEST_P(Stress, NoTornValuesAndNeverOverBudget) {
  const auto [evictor, lock, shards] = GetParam();
  cache::Options o;
  o.maxmem = 2000 * shards;  // ~15 values per shard: constant eviction pressure
  o.evictor = evictor;
  o.lock = lock;
  o.shards = shards;
  cache::Cache c(o);

  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, over_budget{0};
  std::atomic<long> hits{0};
  std::thread monitor([&] {
    while (!stop.load()) {
      if (c.space_used() > o.maxmem) over_budget.fetch_add(1);
      std::this_thread::yield();
    }
  });

  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      long local_hits = 0;
      for (int i = 0; i < kOpsPerThread; ++i) {
        const std::string key = "key" + std::to_string(rng() % kKeys);
        const unsigned roll = rng() % 100;
        if (roll < 60) {
          bool whole = true;
          if (c.get(key, [&](std::string_view v) { whole = value_is_whole(v); })) ++local_hits;
          if (!whole) torn.fetch_add(1);
        } else if (roll < 95) {
          c.set(key, make_value(rng()));
        } else if (roll < 99) {
          c.del(key);
        } else {
          (void)c.stats();
        }
      }
      hits.fetch_add(local_hits);
    });
  }
  for (auto& w : workers) w.join();
  stop.store(true);
  monitor.join();

  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(over_budget.load(), 0);
  EXPECT_LE(c.space_used(), o.maxmem);
  EXPECT_GT(hits.load(), 0);  // the readers really read something
  // Accounting still matches contents after the storm.
  std::size_t held = 0;
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "key" + std::to_string(k);
    if (auto v = c.get(key)) {
      EXPECT_TRUE(value_is_whole(*v));
      held += key.size() + v->size();
    }
  }
  EXPECT_EQ(c.space_used(), held);
}

INSTANTIATE_TEST_SUITE_P(
    All, Stress,
    ::testing::Combine(::testing::Values(Evictor::clock, Evictor::s3fifo, Evictor::sieve,
                                         Evictor::lru, Evictor::fifo, Evictor::none),
                       ::testing::Values(LockScheme::shared_reads, LockScheme::exclusive_all),
                       ::testing::Values(1u, 4u)),
    [](const auto& info) {
      return std::string(cache::to_string(std::get<0>(info.param))) + "_" +
             cache::to_string(std::get<1>(info.param)) + "_" +
             std::to_string(std::get<2>(info.param)) + "shards";
    });

}  // namespace
