// S3-FIFO's segment logs (cache/s3fifo.hh, log_item.hh, segment_log.hh, bucket_index.hh): what
// the log layout must keep that the evictor-generic tests do not reach. An item copied to
// another segment (promoted from small, moved on at main's head) keeps its value, version and
// exact expiry; a TTL past the short form's 24 days is kept exactly; a same-size rewrite in
// place still gets a new version; dead bytes count toward maxmem but never past it; values too
// big for a segment (their own allocation) survive promotion, replacement and deletion (ASan
// finds a leak or a use after free); the index grows through its cuckoo moves without losing a
// key. Time is a hand-moved clock.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "cache/cache.hh"

namespace {

using cache::Cache;
using cache::Item;
using cache::SetResult;
using cache::WriteOptions;
using std::chrono::milliseconds;

class SegmentLog : public ::testing::TestWithParam<cache::LockScheme> {
 protected:
  Cache make(std::size_t maxmem, unsigned shards = 1) {
    cache::Options o;
    o.maxmem = maxmem;
    o.evictor = cache::Evictor::s3fifo;
    o.lock = GetParam();
    o.shards = shards;
    o.s3fifo_small_percent = 10;
    o.clock = [this] { return milliseconds(now_ms.load()); };
    return Cache(o);
  }
  static WriteOptions ttl(std::int64_t ms) {
    WriteOptions w;
    w.ttl = milliseconds(ms);
    return w;
  }
  struct Got {
    std::string value;
    std::uint64_t version;
    std::optional<std::int64_t> ttl_left_ms;
  };
  static std::optional<Got> get(const Cache& c, const std::string& key) {
    std::optional<Got> out;
    c.get_item(key, [&](const Item& i) {
      out = Got{std::string(i.value), i.version, std::nullopt};
      if (i.ttl_left) out->ttl_left_ms = i.ttl_left->count();
    });
    return out;
  }
  std::atomic<std::int64_t> now_ms{5'000'000};
};

// maxmem 40, 2-byte entries: small holds 2 (10%), main 18. After "a" is hit twice, the next
// eviction promotes it: a copy in a segment opened later (another base time), re-encoded.
TEST_P(SegmentLog, PromotionKeepsValueVersionAndExactExpiry) {
  Cache c = make(40);
  const auto written = c.set("a", "1", ttl(100'000));
  ASSERT_EQ(written.result, SetResult::created);
  for (char k = 'b'; k <= 't'; ++k) c.set(std::string(1, k), "1");
  ASSERT_TRUE(get(c, "a").has_value());
  ASSERT_TRUE(get(c, "a").has_value());  // two hits: promoted at small's head
  now_ms += 40'000;
  for (char k = 'u'; k <= 'z'; ++k) c.set(std::string(1, k), "1");  // evicts; a moves to main
  EXPECT_GT(c.stats().evictions, 0u);
  const auto a = get(c, "a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->value, "1");
  EXPECT_EQ(a->version, written.version);
  ASSERT_TRUE(a->ttl_left_ms.has_value());
  EXPECT_EQ(*a->ttl_left_ms, 60'000);
}

// Main's head moves hit items on (copied forward, frequency lowered), many times over here.
TEST_P(SegmentLog, CopiesForwardKeepEveryItemIntact) {
  Cache c = make(4000);
  std::uint64_t versions[50];
  for (int i = 0; i < 50; ++i) {
    versions[i] =
        c.set("hot" + std::to_string(i), std::string(20, 'a' + i % 26), ttl(1'000'000)).version;
  }
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(get(c, "hot" + std::to_string(i)).has_value());
    for (int i = 0; i < 20; ++i)
      c.set("cold" + std::to_string(round * 20 + i), std::string(20, 'c'));
    now_ms += 1000;
  }
  EXPECT_GT(c.stats().evictions, 0u);
  for (int i = 0; i < 50; ++i) {
    const auto g = get(c, "hot" + std::to_string(i));
    ASSERT_TRUE(g.has_value()) << i;
    EXPECT_EQ(g->value, std::string(20, 'a' + i % 26));
    EXPECT_EQ(g->version, versions[i]);
    ASSERT_TRUE(g->ttl_left_ms.has_value());
    EXPECT_EQ(*g->ttl_left_ms, 1'000'000 - 40 * 1000);
  }
}

// 30 days is past the 4-byte relative expiry's 24: the item carries its expiry absolute.
TEST_P(SegmentLog, ALongTtlIsKeptExactly) {
  Cache c = make(1 << 20);
  const std::int64_t days30 = 30LL * 24 * 3600 * 1000;
  ASSERT_EQ(c.set("long", "v", ttl(days30)).result, SetResult::created);
  ASSERT_EQ(c.set("short", "v", ttl(1000)).result, SetResult::created);
  now_ms += 500;
  EXPECT_EQ(*get(c, "long")->ttl_left_ms, days30 - 500);
  EXPECT_EQ(*get(c, "short")->ttl_left_ms, 500);
  now_ms += days30 - 500;
  EXPECT_FALSE(get(c, "long").has_value());
}

// A clock that goes back (the cache's clock source is the caller's) must not stretch a TTL:
// the segment base an expiry is stored against is never after the time of the write.
TEST_P(SegmentLog, AClockThatGoesBackDoesNotLengthenATtl) {
  Cache c = make(1 << 20);
  now_ms += 20'000;  // (a source that steps back past the cache's epoch reads as the epoch)
  ASSERT_EQ(c.set("a", "v", ttl(60'000)).result, SetResult::created);
  now_ms -= 10'000;
  ASSERT_EQ(c.set("b", "v", ttl(1000)).result, SetResult::created);
  EXPECT_EQ(*get(c, "b")->ttl_left_ms, 1000);
  EXPECT_EQ(*get(c, "a")->ttl_left_ms, 70'000);
}

// A same-size rewrite of an item in main happens in place, and is still a new version.
TEST_P(SegmentLog, ARewriteInPlaceGetsANewVersion) {
  Cache c = make(1 << 20);
  std::uint64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    const auto w = c.set("k", std::string(10, static_cast<char>('0' + i % 10)), WriteOptions{});
    EXPECT_GT(w.version, last);
    last = w.version;
    EXPECT_EQ(get(c, "k")->value, std::string(10, static_cast<char>('0' + i % 10)));
    EXPECT_EQ(get(c, "k")->version, w.version);
  }
  EXPECT_EQ(c.space_used(), 11u);
}

// Overwrites of changing sizes leave dead bytes; they count, so the cache evicts rather than
// grow past maxmem, and space_used() never exceeds it. Every key keeps its newest value.
TEST_P(SegmentLog, DeadBytesCountButNeverPastMaxmem) {
  Cache c = make(10'000);
  for (int i = 0; i < 20'000; ++i) {
    const std::string key = "k" + std::to_string(i % 30);
    ASSERT_NE(c.set(key, std::string(1 + i % 97, 'x')), SetResult::too_big);
    ASSERT_LE(c.space_used(), 10'000u);
    const auto g = get(c, key);
    ASSERT_TRUE(g.has_value());
    ASSERT_EQ(g->value.size(), static_cast<std::size_t>(1 + i % 97));
    if (i % 7 == 0) c.del("k" + std::to_string((i + 3) % 30));
  }
}

// Values over an eighth of a segment live in their own allocation: promoted, replaced by
// inline ones and back, deleted, evicted, reset (ASan reports any leak or use after free).
TEST_P(SegmentLog, ValuesBiggerThanASegmentSurviveEveryPath) {
  Cache c = make(400'000);
  const std::string big(20'000, 'B');
  for (int i = 0; i < 200; ++i) {
    std::string key = "b";
    key.append(std::to_string(i % 25));
    std::string value = "small";
    if (i % 3 != 0) value = big, value.append(std::to_string(i));
    c.set(key, value);
    get(c, "b0");
    get(c, "b0");
    if (i % 11 == 0) c.del("b" + std::to_string((i + 5) % 25));
  }
  const auto b = get(c, "b24");
  ASSERT_TRUE(b.has_value() || c.stats().evictions > 0);
  if (b) {
    std::string newest = big;
    newest.append("199");
    EXPECT_EQ(b->value, newest);
  }
  EXPECT_LE(c.space_used(), 400'000u);
  c.reset();
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.stats().mapped_bytes, 0u);
}

// 200k keys in one shard: the index grows ~80 times and fills to 95%, moving items along cuckoo
// paths; every key is still found, and its memory shows in Stats::mapped_bytes.
TEST_P(SegmentLog, TheIndexGrowsWithoutLosingAKey) {
  Cache c = make(std::size_t{1} << 30);
  for (int i = 0; i < 200'000; ++i) {
    ASSERT_EQ(c.set("key" + std::to_string(i), "v"), SetResult::created);
  }
  for (int i = 0; i < 200'000; ++i) ASSERT_TRUE(get(c, "key" + std::to_string(i)).has_value()) << i;
  for (int i = 0; i < 200'000; i += 2) ASSERT_TRUE(c.del("key" + std::to_string(i)));
  for (int i = 0; i < 200'000; ++i) {
    ASSERT_EQ(get(c, "key" + std::to_string(i)).has_value(), i % 2 == 1) << i;
  }
  EXPECT_GE(c.stats().mapped_bytes, 200'000u * 8);  // at least the index's slots
}

INSTANTIATE_TEST_SUITE_P(Locks, SegmentLog,
                         ::testing::Values(cache::LockScheme::shared_reads,
                                           cache::LockScheme::exclusive_all),
                         [](const auto& info) {
                           return std::string(cache::to_string(info.param));
                         });

}  // namespace
