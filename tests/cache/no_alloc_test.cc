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

TEST_P(NoAlloc, CounterSeesTheAllocationsOfASet) {
  const std::uint64_t before = counting_new::allocations();
  cache_->set("another", "value");
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

INSTANTIATE_TEST_SUITE_P(Evictors, NoAlloc,
                         ::testing::Values(cache::Evictor::clock, cache::Evictor::s3fifo,
                                           cache::Evictor::sieve, cache::Evictor::lru,
                                           cache::Evictor::fifo, cache::Evictor::none),
                         [](const auto& info) {
                           return std::string(cache::to_string(info.param));
                         });

}  // namespace
