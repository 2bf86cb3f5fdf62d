// Expiry (TTL), versions and conditional writes of the cache library (issue 30), for every
// evictor and both lock schemes: an expired item is never returned and is freed by the sweep
// without being read; every write gets a new version; a conditional write checks and writes in
// one step. Time is a hand-moved clock (Options::clock), so nothing here sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cache/cache.hh"

namespace {

using cache::Cache;
using cache::Condition;
using cache::DelResult;
using cache::Evictor;
using cache::Item;
using cache::LockScheme;
using cache::Options;
using cache::SetResult;
using cache::WriteOptions;
using std::chrono::milliseconds;

std::string key_of(int i) {
  std::string k("key");
  k += std::to_string(i);
  return k;
}

class Expiry : public ::testing::TestWithParam<std::tuple<Evictor, LockScheme>> {
 protected:
  Cache make(std::size_t maxmem = 1 << 20, unsigned shards = 1) {
    Options o;
    o.maxmem = maxmem;
    o.evictor = std::get<0>(GetParam());
    o.lock = std::get<1>(GetParam());
    o.shards = shards;
    o.clock = [this] { return milliseconds(now_ms.load()); };
    return Cache(o);
  }
  void advance(std::int64_t ms) { now_ms += ms; }

  static WriteOptions ttl(std::int64_t ms) {
    WriteOptions w;
    w.ttl = milliseconds(ms);
    return w;
  }
  static std::optional<Item> item(const Cache& c, const std::string& key, std::string* value) {
    std::optional<Item> out;
    c.get_item(key, [&](const Item& i) {
      out = i;
      *value = std::string(i.value);
      out->value = {};
    });
    return out;
  }

  std::atomic<std::int64_t> now_ms{1'000'000};
};

TEST_P(Expiry, AnItemWithATtlIsServedUntilItPassesThenNever) {
  Cache c = make();
  ASSERT_EQ(c.set("k", "v", ttl(5000)).result, SetResult::created);
  std::string v;
  auto got = item(c, "k", &v);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(v, "v");
  ASSERT_TRUE(got->ttl_left.has_value());
  EXPECT_EQ(got->ttl_left->count(), 5000);
  advance(4999);
  got = item(c, "k", &v);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->ttl_left->count(), 1);
  advance(1);
  EXPECT_FALSE(item(c, "k", &v).has_value());
  EXPECT_FALSE(c.get("k").has_value());
  EXPECT_EQ(c.size(), 1u) << "not freed until the sweep or a write meets it";
}

TEST_P(Expiry, WithoutATtlAnItemHasNoneAndASetClearsAnOldOne) {
  Cache c = make();
  ASSERT_EQ(c.set("k", "v", ttl(1000)).result, SetResult::created);
  ASSERT_EQ(c.set("k", "w"), SetResult::replaced);
  std::string v;
  auto got = item(c, "k", &v);
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->ttl_left.has_value());
  advance(2000);
  EXPECT_EQ(c.get("k"), "w");
  EXPECT_EQ(c.reclaim_expired(1), 0u);
  EXPECT_EQ(c.size(), 1u);
}

TEST_P(Expiry, ATtlOutsideItsRangeIsRefusedAndChangesNothing) {
  Cache c = make();
  c.set("k", "v");
  EXPECT_EQ(c.set("k", "x", ttl(-1)).result, SetResult::bad_ttl);
  WriteOptions too_long;
  too_long.ttl = cache::kMaxTtl + milliseconds(1);
  EXPECT_EQ(c.set("k", "x", too_long).result, SetResult::bad_ttl);
  EXPECT_EQ(c.get("k"), "v");
  WriteOptions longest;
  longest.ttl = cache::kMaxTtl;
  EXPECT_EQ(c.set("k", "x", longest).result, SetResult::replaced);
  advance(1'000'000'000);
  EXPECT_EQ(c.get("k"), "x");
}

TEST_P(Expiry, AnExpiredKeyIsAbsentToSetAndDel) {
  Cache c = make();
  c.set("a", "1", ttl(10));
  c.set("b", "2", ttl(10));
  advance(10);
  EXPECT_EQ(c.set("a", "again"), SetResult::created) << "an expired key is not replaced";
  EXPECT_FALSE(c.del("b")) << "nor deleted";
  EXPECT_EQ(c.get("a"), "again");
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.stats().expired, 2u);
  EXPECT_EQ(c.space_used(), 6u);
}

TEST_P(Expiry, TheSweepFreesExpiredItemsNobodyReadsAndOnlyThose) {
  Cache c = make(8 << 20, 4);
  constexpr int n = 5000;
  for (int i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      ASSERT_EQ(c.set(key_of(i), "value", ttl(100 + i % 7)).result, SetResult::created);
    } else {
      ASSERT_EQ(c.set(key_of(i), "value"), SetResult::created);
    }
  }
  EXPECT_EQ(c.reclaim_expired(1), 0u) << "nothing has expired yet";
  advance(106);
  std::size_t freed = 0;
  for (int step = 0; step < 10; ++step) freed += c.reclaim_expired(10);
  EXPECT_EQ(freed, static_cast<std::size_t>(n / 2)) << "one sweep, ten steps, frees them all";
  EXPECT_EQ(c.size(), static_cast<std::size_t>(n / 2));
  EXPECT_EQ(c.stats().expired, static_cast<std::uint64_t>(n / 2));
  EXPECT_EQ(
      c.space_used(), static_cast<std::size_t>(n / 2) * 5 + [] {
        std::size_t k = 0;
        for (int i = 1; i < n; i += 2) k += key_of(i).size();
        return k;
      }());
  for (int i = 0; i < n; ++i) EXPECT_EQ(c.get(key_of(i)).has_value(), i % 2 == 1) << i;
}

TEST_P(Expiry, ASweepStepLooksAtItsShareOfTheSlotsOnly) {
  Cache c = make();
  for (int i = 0; i < 1000; ++i) c.set(key_of(i), "v", ttl(1));
  advance(1);
  const std::size_t first = c.reclaim_expired(100);
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, 100u) << "about 1/100 of the slots per step";
  std::size_t freed = first;
  for (int step = 1; step < 100; ++step) freed += c.reclaim_expired(100);
  EXPECT_EQ(freed, 1000u);
}

TEST_P(Expiry, EveryWriteGivesANewVersionEvenOfTheSameBytes) {
  Cache c = make();
  const auto v1 = c.set("k", "same", WriteOptions{}).version;
  const auto v2 = c.set("k", "same", WriteOptions{}).version;
  const auto v3 = c.set("other", "same", WriteOptions{}).version;
  EXPECT_NE(v1, 0u);
  EXPECT_NE(v1, v2);
  EXPECT_NE(v2, v3);
  std::string v;
  EXPECT_EQ(item(c, "k", &v)->version, v2);
  c.del("k");
  const auto v4 = c.set("k", "same", WriteOptions{}).version;
  EXPECT_NE(v4, v1);
  EXPECT_NE(v4, v2);
  c.reset();
  EXPECT_NE(c.set("k", "same", WriteOptions{}).version, v4) << "versions survive a reset";
}

TEST_P(Expiry, AConditionalSetChecksTheCurrentVersion) {
  Cache c = make();
  const auto v1 = c.set("k", "one", WriteOptions{}).version;
  std::uint64_t expected = v1 + 1000;
  const auto if_match_test = [&expected](const std::uint64_t* current) {
    return current != nullptr && *current == expected;
  };
  const Condition if_match = if_match_test;
  WriteOptions w;
  w.condition = &if_match;
  EXPECT_EQ(c.set("k", "two", w).result, SetResult::precondition_failed);
  EXPECT_EQ(c.get("k"), "one");
  expected = v1;
  const auto written = c.set("k", "two", w);
  EXPECT_EQ(written.result, SetResult::replaced);
  EXPECT_NE(written.version, v1);
  EXPECT_EQ(c.get("k"), "two");
  EXPECT_EQ(c.set("k", "three", w).result, SetResult::precondition_failed) << "v1 is gone";
  EXPECT_EQ(c.set("absent", "x", w).result, SetResult::precondition_failed);
  EXPECT_FALSE(c.get("absent").has_value());

  const auto if_absent_test = [](const std::uint64_t* current) { return current == nullptr; };
  const Condition if_absent = if_absent_test;
  w.condition = &if_absent;
  EXPECT_EQ(c.set("k", "x", w).result, SetResult::precondition_failed);
  EXPECT_EQ(c.set("new", "x", w).result, SetResult::created);
  c.set("short", "x", ttl(5));
  advance(5);
  EXPECT_EQ(c.set("short", "y", w).result, SetResult::created) << "an expired key is absent";
}

TEST_P(Expiry, AConditionalDelChecksTheCurrentVersion) {
  Cache c = make();
  const auto v1 = c.set("k", "one", WriteOptions{}).version;
  std::uint64_t expected = v1 + 1;
  const auto if_match_test = [&expected](const std::uint64_t* current) {
    return current != nullptr && *current == expected;
  };
  const Condition if_match = if_match_test;
  EXPECT_EQ(c.del("k", if_match), DelResult::precondition_failed);
  EXPECT_EQ(c.get("k"), "one");
  expected = v1;
  EXPECT_EQ(c.del("k", if_match), DelResult::deleted);
  EXPECT_EQ(c.del("k", if_match), DelResult::precondition_failed) << "a missing key fails";
  const auto always_test = [](const std::uint64_t*) { return true; };
  const Condition always = always_test;
  EXPECT_EQ(c.del("k", always), DelResult::absent);
}

// Eight threads each add 1 to a counter 300 times by read-modify-write with the version they
// read as the condition, retrying when it fails: no increment is lost.
TEST_P(Expiry, CompareAndSetLosesNoUpdateUnderContention) {
  Cache c = make(1 << 20, 2);
  c.set("counter", "0");
  constexpr int kThreads = 8, kIncrements = 300;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements;) {
        std::uint64_t version = 0;
        long value = 0;
        ASSERT_TRUE(c.get_item("counter", [&](const Item& it) {
          version = it.version;
          value = std::stol(std::string(it.value));
        }));
        const auto if_match_test = [version](const std::uint64_t* current) {
          return current != nullptr && *current == version;
        };
        const Condition if_match = if_match_test;
        WriteOptions w;
        w.condition = &if_match;
        const auto r = c.set("counter", std::to_string(value + 1), w);
        if (r.result == SetResult::replaced) {
          ++i;
        } else {
          ASSERT_EQ(r.result, SetResult::precondition_failed);
          ++conflicts;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.get("counter"), std::to_string(kThreads * kIncrements));
  std::printf("conflicts retried: %d\n", conflicts.load());
}

INSTANTIATE_TEST_SUITE_P(
    AllPolicies, Expiry,
    ::testing::Combine(::testing::Values(Evictor::none, Evictor::fifo, Evictor::lru, Evictor::clock,
                                         Evictor::s3fifo, Evictor::sieve),
                       ::testing::Values(LockScheme::shared_reads, LockScheme::exclusive_all)));

}  // namespace
