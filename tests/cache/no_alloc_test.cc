// The cstring value path: a GET hit allocates nothing. This binary links the counting
// operator new/delete of tests/support; the first test proves the counter sees the
// allocations a set makes, so the zero below cannot be a counter that never counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "cache/cache.hh"
#include "tests/support/counting_new.hh"

namespace {

class NoAlloc : public ::testing::TestWithParam<cache::Evictor> {
 protected:
  NoAlloc() {
    cache::Options o;
    o.maxmem = 1 << 20;
    o.evictor = GetParam();
    o.shards = 4;
    cache_ = std::make_unique<cache::Cache>(o);
    for (int i = 0; i < 100; ++i) {
      cache_->set("key" + std::to_string(i), std::string(100, static_cast<char>('a' + i % 26)));
    }
  }
  std::unique_ptr<cache::Cache> cache_;
};

// A value too big for a segment: every evictor allocates it (S3-FIFO's own allocation).
TEST_P(NoAlloc, CounterSeesTheAllocationsOfASet) {
  const std::uint64_t before = counting_new::allocations();
  cache_->set("another", std::string(100'000, 'v'));
  EXPECT_GE(counting_new::allocations() - before, 1u);
}

TEST_P(NoAlloc, GetHitAllocatesNothing) {
  char buffer[256];
  std::size_t copied = 0;
  const std::string keys[] = {"key1", "key42", "key99"};  // built before counting
  const std::uint64_t before = counting_new::allocations();
  long hits = 0;
  for (int round = 0; round < 1000; ++round) {
    for (const auto& k : keys) {
      hits += cache_->get(k, [&](std::string_view v) {
        std::memcpy(buffer, v.data(), v.size());  // straight into the caller's buffer
        copied = v.size();
      });
    }
  }
  EXPECT_EQ(counting_new::allocations() - before, 0u);
  EXPECT_EQ(hits, 3000);
  EXPECT_EQ(copied, 100u);
  EXPECT_EQ(buffer[0], 'a' + 99 % 26);
}

TEST_P(NoAlloc, GetMissAllocatesNothing) {
  const std::string key = "absent-key";
  const std::uint64_t before = counting_new::allocations();
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(cache_->get(key, [](std::string_view) {}));
  EXPECT_EQ(counting_new::allocations() - before, 0u);
}

// S3-FIFO appends small items to its segment logs: a replacing set allocates nothing either.
TEST(NoAllocS3Fifo, ReplacingSetAllocatesNothing) {
  cache::Options o;
  o.maxmem = 1 << 20;
  o.evictor = cache::Evictor::s3fifo;
  o.shards = 4;
  auto cache_ = std::make_unique<cache::Cache>(o);
  for (int i = 0; i < 100; ++i) cache_->set("key" + std::to_string(i), std::string(100, 'a'));
  const std::string value(100, 'r');
  // Until the logs have wrapped a few times (~10,000 sets each) a set may map a segment chunk, grow
  // a queue's ring; after that, segments are reused.
  for (int i = 0; i < 200'000; ++i) cache_->set("key" + std::to_string(i % 10), value);
  const std::uint64_t before = counting_new::allocations();
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(cache_->set("key" + std::to_string(i % 10), value), cache::SetResult::replaced);
    }
  }
  EXPECT_EQ(counting_new::allocations() - before, 0u);
}

INSTANTIATE_TEST_SUITE_P(Evictors, NoAlloc,
                         ::testing::Values(cache::Evictor::clock, cache::Evictor::s3fifo,
                                           cache::Evictor::sieve, cache::Evictor::lru,
                                           cache::Evictor::fifo, cache::Evictor::none),
                         [](const auto& info) {
                           return std::string(cache::to_string(info.param));
                         });

}  // namespace
