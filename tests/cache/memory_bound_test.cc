// Bytes of heap per item above key and value, counted by allocation accounting (not RSS, not
// timing): this binary replaces the global operator new/delete with versions that keep the live
// total of malloc_usable_size + 8 (glibc's chunk header) over every block. A cache filled with the
// issue-30 workload (11-byte keys, 100-byte values) must stay under fixed bounds per item, so a
// change that adds per-entry state (a bigger header, a queue record per entry, a looser table)
// fails here. The bounds sit 1.3-2 B above what this design measures (31.3, 32.2, 30.1; before
// issue 30: 55.2, 33.8, 38.0), cache/README.md.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "cache/cache.hh"

namespace {
std::atomic<long long> g_live{0};
constexpr long long kChunkHeader = 8;  // glibc keeps one size word before each block

void* counted(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  g_live.fetch_add(static_cast<long long>(malloc_usable_size(p)) + kChunkHeader,
                   std::memory_order_relaxed);
  return p;
}
void released(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(static_cast<long long>(malloc_usable_size(p)) + kChunkHeader,
                   std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) {
  return counted(n);
}
void* operator new[](std::size_t n) {
  return counted(n);
}
void operator delete(void* p) noexcept {
  released(p);
}
void operator delete[](void* p) noexcept {
  released(p);
}
void operator delete(void* p, std::size_t) noexcept {
  released(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  released(p);
}

namespace {

constexpr std::size_t kKeyBytes = 11, kValueBytes = 100, kItems = 200'000;

struct Fill {
  std::size_t items;
  double overhead_per_item;  // live heap bytes above the key+value bytes held, per item held
};

// Sets `sets` distinct keys into a cache of `maxmem` bytes and `shards` shards (the server's 16).
Fill fill(cache::Evictor evictor, std::size_t maxmem, std::size_t sets) {
  const std::string value(kValueBytes, 'v');
  const long long before = g_live.load();
  cache::Options o;
  o.maxmem = maxmem;
  o.evictor = evictor;
  o.shards = 16;
  cache::Cache c(o);
  char key[24];  // "k%010zu" is 11 bytes for every i below 10^10
  for (std::size_t i = 0; i < sets; ++i) {
    std::snprintf(key, sizeof key, "k%010zu", i);
    c.set(std::string_view(key, kKeyBytes), value);
  }
  const double heap = static_cast<double>(g_live.load() - before);
  const Fill f{c.size(),
               (heap - static_cast<double>(c.space_used())) / static_cast<double>(c.size())};
  std::printf("%s, maxmem %zu: %zu items, %.1f B/item above key+value\n", cache::to_string(evictor),
              maxmem, f.items, f.overhead_per_item);
  return f;
}

constexpr std::size_t kData = kItems * (kKeyBytes + kValueBytes);

// The issue-30 regression: a cache much larger than its data (2 GB holding 111 MB at 1M items)
// let S3-FIFO's small queue hold a 16-byte record for nearly every entry (+14 B per item).
TEST(MemoryBound, S3FifoInALargeCache) {
  const Fill f = fill(cache::Evictor::s3fifo, std::size_t{2} << 30, kItems);
  EXPECT_EQ(f.items, kItems);
  EXPECT_LE(f.overhead_per_item, 33.0);
}

// Eviction running: the ghost's table is in the figure too.
TEST(MemoryBound, S3FifoInACache10PercentSmallerThanItsData) {
  const Fill f = fill(cache::Evictor::s3fifo, kData * 9 / 10, kItems);
  EXPECT_LT(f.items, kItems);
  EXPECT_LE(f.overhead_per_item, 33.5);  // 33.8 before issue 30
}

TEST(MemoryBound, ClockInALargeCache) {
  const Fill f = fill(cache::Evictor::clock, std::size_t{2} << 30, kItems);
  EXPECT_EQ(f.items, kItems);
  EXPECT_LE(f.overhead_per_item, 32.0);
}

// The counter sees the cache's memory at all (so the bounds above cannot pass vacuously).
TEST(MemoryBound, CounterSeesEntries) {
  const Fill f = fill(cache::Evictor::clock, std::size_t{2} << 30, 1000);
  EXPECT_GE(f.overhead_per_item, 8.0);  // at least each entry's header
}

}  // namespace
