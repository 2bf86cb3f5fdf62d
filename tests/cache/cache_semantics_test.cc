// The cache's contract, one behaviour per test: set/get/del/reset, accounting, key and size
// limits, binary values, options validation, injected hashers. Run for both lock schemes.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cache/cache.hh"

namespace {

using cache::Cache;
using cache::Evictor;
using cache::LockScheme;
using cache::Options;
using cache::SetResult;

// "prefix" + std::to_string(i) trips GCC 12's false -Wrestrict (PR105329); append instead.
std::string key_of(const char* prefix, int i) {
  std::string k(prefix);
  k += std::to_string(i);
  return k;
}

Options opts(std::size_t maxmem, Evictor e, LockScheme lock, unsigned shards = 1) {
  Options o;
  o.maxmem = maxmem;
  o.evictor = e;
  o.lock = lock;
  o.shards = shards;
  return o;
}

class Semantics : public ::testing::TestWithParam<LockScheme> {
 protected:
  Cache make(std::size_t maxmem = 1024, Evictor e = Evictor::none) {
    return Cache(opts(maxmem, e, GetParam()));
  }
};

TEST_P(Semantics, SetThenGetReturnsValue) {
  Cache c = make();
  EXPECT_EQ(c.set("k", "value"), SetResult::created);
  EXPECT_EQ(c.get("k"), "value");
  EXPECT_EQ(c.size(), 1u);
}

TEST_P(Semantics, MissReturnsNulloptAndSinkIsNotCalled) {
  Cache c = make();
  bool called = false;
  EXPECT_FALSE(c.get("absent", [&](std::string_view) { called = true; }));
  EXPECT_FALSE(called);
  EXPECT_EQ(c.get("absent"), std::nullopt);
}

TEST_P(Semantics, SinkSeesExactlyTheStoredBytes) {
  Cache c = make();
  c.set("k", "abc");
  std::string seen;
  int calls = 0;
  EXPECT_TRUE(c.get("k", [&](std::string_view v) {
    seen.assign(v);
    ++calls;
  }));
  EXPECT_EQ(seen, "abc");
  EXPECT_EQ(calls, 1);
}

TEST_P(Semantics, SpaceUsedIsKeyPlusValueBytes) {
  Cache c = make();
  c.set("ab", "cde");
  c.set("f", "");
  EXPECT_EQ(c.space_used(), 2u + 3u + 1u);
}

TEST_P(Semantics, ReplaceUpdatesValueAndAccounting) {
  Cache c = make();
  EXPECT_EQ(c.set("k", "short"), SetResult::created);
  EXPECT_EQ(c.set("k", "a much longer value"), SetResult::replaced);
  EXPECT_EQ(c.get("k"), "a much longer value");
  EXPECT_EQ(c.space_used(), 1u + 19u);
  EXPECT_EQ(c.set("k", "x"), SetResult::replaced);
  EXPECT_EQ(c.space_used(), 2u);
  EXPECT_EQ(c.size(), 1u);
}

TEST_P(Semantics, DeleteRemovesAndReportsPresence) {
  Cache c = make();
  c.set("k", "v");
  EXPECT_TRUE(c.del("k"));
  EXPECT_FALSE(c.del("k"));
  EXPECT_EQ(c.get("k"), std::nullopt);
  EXPECT_EQ(c.space_used(), 0u);
  EXPECT_EQ(c.size(), 0u);
}

TEST_P(Semantics, ResetEmptiesEverything) {
  Cache c = make();
  for (int i = 0; i < 50; ++i) c.set(key_of("key", i), "v");
  c.reset();
  EXPECT_EQ(c.space_used(), 0u);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.get("key7"), std::nullopt);
  EXPECT_EQ(c.set("key7", "again"), SetResult::created);  // usable after reset
  EXPECT_EQ(c.get("key7"), "again");
}

TEST_P(Semantics, BinaryValuesWithNulBytesRoundTrip) {
  Cache c = make();
  const std::string value("a\0b\0\xff\x01", 6);
  c.set("bin", value);
  EXPECT_EQ(c.get("bin"), value);
  EXPECT_EQ(c.space_used(), 3u + 6u);
}

TEST_P(Semantics, BinaryKeysAreDistinct) {
  Cache c = make();
  c.set(std::string("a\0b", 3), "1");
  c.set(std::string("a\0c", 3), "2");
  EXPECT_EQ(c.get(std::string("a\0b", 3)), "1");
  EXPECT_EQ(c.get(std::string("a\0c", 3)), "2");
}

TEST_P(Semantics, EmptyValueIsStoredAndIsAHit) {
  Cache c = make();
  EXPECT_EQ(c.set("empty", ""), SetResult::created);
  EXPECT_EQ(c.get("empty"), std::string());
}

TEST_P(Semantics, KeyLengthLimits) {
  Cache c = make(4096);
  EXPECT_EQ(c.set("", "v"), SetResult::bad_key);
  EXPECT_EQ(c.set(std::string(250, 'k'), "v"), SetResult::created);
  EXPECT_EQ(c.set(std::string(251, 'k'), "v"), SetResult::bad_key);
  EXPECT_FALSE(c.get(std::string(251, 'k')).has_value());
  EXPECT_FALSE(c.del(""));
  EXPECT_EQ(c.space_used(), 251u);
}

TEST_P(Semantics, ItemLargerThanMaxmemIsRefusedAndOldValueKept) {
  Cache c = make(100, Evictor::lru);
  c.set("k", "old");
  EXPECT_EQ(c.set("k", std::string(100, 'x')), SetResult::too_big);  // 1 + 100 > 100
  EXPECT_EQ(c.get("k"), "old");
  EXPECT_EQ(c.set("j", std::string(99, 'x')), SetResult::created);  // exactly maxmem fits
  EXPECT_EQ(c.space_used(), 100u);
}

TEST_P(Semantics, WithoutEvictorASetThatDoesNotFitIsRefused) {
  Cache c = make(10, Evictor::none);
  EXPECT_EQ(c.set("a", "1234"), SetResult::created);  // 5
  EXPECT_EQ(c.set("b", "1234"), SetResult::created);  // 10
  EXPECT_EQ(c.set("c", "1"), SetResult::no_space);
  EXPECT_EQ(c.get("a"), "1234");
  EXPECT_EQ(c.get("b"), "1234");
  EXPECT_EQ(c.set("a", "12345"), SetResult::no_space);  // a replace that grows is refused too
  EXPECT_EQ(c.get("a"), "1234");
  EXPECT_EQ(c.set("a", "12"), SetResult::replaced);  // a replace that shrinks fits
  EXPECT_EQ(c.space_used(), 8u);
}

TEST_P(Semantics, ManyKeysSurviveTableGrowth) {
  Cache c = make(1 << 20);
  for (int i = 0; i < 5000; ++i)
    ASSERT_EQ(c.set(key_of("key", i), std::to_string(i)), SetResult::created);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(c.get(key_of("key", i)), std::to_string(i));
  for (int i = 0; i < 5000; i += 2) ASSERT_TRUE(c.del(key_of("key", i)));
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(c.get(key_of("key", i)).has_value(), i % 2 == 1) << i;
  }
}

TEST_P(Semantics, ConstantHasherStillWorks) {
  cache::Options o = opts(1 << 16, Evictor::lru, GetParam());
  o.hasher = [](std::string_view) -> std::size_t { return 42; };
  Cache c(o);
  for (int i = 0; i < 200; ++i) c.set(key_of("k", i), std::to_string(i));
  for (int i = 0; i < 200; i += 3) c.del(key_of("k", i));
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(c.get(key_of("k", i)).has_value(), i % 3 != 0) << i;
  }
}

TEST_P(Semantics, InjectedHasherIsCalled) {
  int calls = 0;
  cache::Options o = opts(1024, Evictor::none, GetParam());
  o.hasher = [&calls](std::string_view k) -> std::size_t {
    ++calls;
    return std::hash<std::string_view>{}(k);
  };
  Cache c(o);
  c.set("a", "1");
  c.get("a");
  EXPECT_GE(calls, 2);
}

TEST_P(Semantics, ShardedCacheKeepsTotalUnderMaxmemAndFindsKeys) {
  Cache c(opts(10000, Evictor::clock, GetParam(), 8));
  EXPECT_EQ(c.shards(), 8u);
  for (int i = 0; i < 2000; ++i) c.set(key_of("key", i), "0123456789");
  EXPECT_LE(c.space_used(), 10000u);
  EXPECT_GT(c.stats().evictions, 0u);
  c.set("fresh", "value");
  EXPECT_EQ(c.get("fresh"), "value");
}

TEST_P(Semantics, StatsReportItemsSpaceAndMaxmem) {
  Cache c = make(1000, Evictor::fifo);
  c.set("a", "12");
  c.set("b", "34");
  const cache::Stats st = c.stats();
  EXPECT_EQ(st.items, 2u);
  EXPECT_EQ(st.space_used, 6u);
  EXPECT_EQ(st.maxmem, 1000u);
  EXPECT_EQ(st.evictions, 0u);
}

TEST_P(Semantics, MovedCacheKeepsItsContents) {
  Cache a = make();
  a.set("k", "v");
  Cache b(std::move(a));
  EXPECT_EQ(b.get("k"), "v");
}

INSTANTIATE_TEST_SUITE_P(Locks, Semantics,
                         ::testing::Values(LockScheme::shared_reads, LockScheme::exclusive_all),
                         [](const auto& info) {
                           return std::string(cache::to_string(info.param));
                         });

TEST(Options, InvalidOptionsThrow) {
  EXPECT_THROW(Cache(0), std::invalid_argument);
  EXPECT_THROW(Cache(100, 0.0), std::invalid_argument);
  EXPECT_THROW(Cache(100, 0.96), std::invalid_argument);
  EXPECT_THROW(Cache(100, -1.0), std::invalid_argument);
  Options o;
  o.shards = 0;
  EXPECT_THROW(Cache{o}, std::invalid_argument);
  o.shards = 2000;
  EXPECT_THROW(Cache{o}, std::invalid_argument);
  o.shards = 4;
  o.maxmem = 3;
  EXPECT_THROW(Cache{o}, std::invalid_argument);
  Options s3;
  s3.evictor = cache::Evictor::s3fifo;
  for (unsigned bad : {0u, 51u}) {
    s3.s3fifo_small_percent = bad;
    EXPECT_THROW(Cache{s3}, std::invalid_argument) << bad;
  }
  s3.s3fifo_small_percent = 50;
  for (unsigned bad : {0u, 101u}) {
    s3.s3fifo_ghost_percent = bad;
    EXPECT_THROW(Cache{s3}, std::invalid_argument) << bad;
  }
  s3.s3fifo_ghost_percent = 100;
  EXPECT_NO_THROW(Cache{s3});
}

TEST(Options, CourseConstructorUsesDefaults) {
  Cache c(1000);
  EXPECT_EQ(c.maxmem(), 1000u);
  EXPECT_EQ(c.evictor(), cache::kDefaultEvictor);
  EXPECT_EQ(c.lock_scheme(), LockScheme::shared_reads);
  EXPECT_EQ(c.shards(), 1u);
}

TEST(Names, EvictorNamesRoundTrip) {
  for (Evictor e : {Evictor::none, Evictor::fifo, Evictor::lru, Evictor::clock, Evictor::s3fifo,
                    Evictor::sieve}) {
    EXPECT_EQ(cache::parse_evictor(cache::to_string(e)), e);
  }
  EXPECT_EQ(cache::parse_evictor("LRU"), std::nullopt);
  EXPECT_EQ(cache::parse_evictor(""), std::nullopt);
  EXPECT_STREQ(cache::to_string(SetResult::no_space), "no_space");
}

}  // namespace
