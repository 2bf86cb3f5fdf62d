// Bytes of heap per item above key and value, counted by allocation accounting (not RSS, not
// timing): this binary replaces the global operator new/delete with versions that keep the live
// total of every block's size class, as two allocators would round it:
// - jemalloc, the server's allocator (server/main.cc): 16-byte classes up to 128, then four
//   classes per doubling (160, 192, 224, 256, 320, ...);
// - glibc malloc, the library's default: chunks of max(32, n + 8 rounded up to 16).
// A cache filled with the issue-30 workload (11-byte keys, 100-byte values) must stay under fixed
// bounds per item in jemalloc's classes, what the server pays, so a change that adds per-entry
// state (a bigger header, a queue record per entry, a looser table) fails here. S3-FIFO keeps
// its items in segments it maps itself (issue 47), counted from Stats::mapped_bytes; CLOCK's
// entries are malloc'ed: their 4-byte version (issue 30's ETags) and an expiry fit jemalloc's
// 128-byte class, 119 + 4 + 5 = 128, but under glibc the version takes the entry past a
// chunk's 120 usable bytes, +16 B per item; the test prints that figure beside
// (cache/README.md, "Bytes per item").
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "cache/cache.hh"

namespace {
std::atomic<long long> g_live_jemalloc{0};
std::atomic<long long> g_live_glibc{0};
constexpr std::size_t kPrefix = 16;  // each block remembers its requested size here

long long jemalloc_class(std::size_t n) {
  if (n <= 8) return 8;
  if (n <= 128) return static_cast<long long>((n + 15) / 16 * 16);
  const std::size_t step = std::bit_floor(n - 1) / 4;
  return static_cast<long long>((n + step - 1) / step * step);
}
long long glibc_chunk(std::size_t n) {
  const std::size_t chunk = (n + 8 + 15) / 16 * 16;
  return static_cast<long long>(chunk < 32 ? 32 : chunk);
}

void* counted(std::size_t n) {
  auto* p = static_cast<unsigned char*>(std::malloc(n + kPrefix));
  if (p == nullptr) throw std::bad_alloc();
  *reinterpret_cast<std::size_t*>(p) = n;
  g_live_jemalloc.fetch_add(jemalloc_class(n), std::memory_order_relaxed);
  g_live_glibc.fetch_add(glibc_chunk(n), std::memory_order_relaxed);
  return p + kPrefix;
}
void released(void* q) noexcept {
  if (q == nullptr) return;
  auto* p = static_cast<unsigned char*>(q) - kPrefix;
  const std::size_t n = *reinterpret_cast<std::size_t*>(p);
  g_live_jemalloc.fetch_sub(jemalloc_class(n), std::memory_order_relaxed);
  g_live_glibc.fetch_sub(glibc_chunk(n), std::memory_order_relaxed);
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
  double overhead_per_item;        // live heap bytes above the key+value bytes held, per item held
  double glibc_overhead_per_item;  // the same in glibc's chunks
};

// Sets `sets` distinct keys into a cache of `maxmem` bytes and `shards` shards (the server's 16).
// with_ttl: every item gets an expiry (an hour), as issue 30's "every item with a TTL" row.
Fill fill(cache::Evictor evictor, std::size_t maxmem, std::size_t sets, bool with_ttl = false) {
  const std::string value(kValueBytes, 'v');
  const long long before = g_live_jemalloc.load(), before_glibc = g_live_glibc.load();
  cache::Options o;
  o.maxmem = maxmem;
  o.evictor = evictor;
  o.shards = 16;
  cache::Cache c(o);
  char key[24];  // "k%010zu" is 11 bytes for every i below 10^10
  for (std::size_t i = 0; i < sets; ++i) {
    std::snprintf(key, sizeof key, "k%010zu", i);
    cache::WriteOptions w;
    if (with_ttl) w.ttl = std::chrono::hours(1);
    c.set(std::string_view(key, kKeyBytes), value, w);
  }
  const auto per_item = [&c](long long heap) {
    return (static_cast<double>(heap) - static_cast<double>(c.space_used())) /
           static_cast<double>(c.size());
  };
  // S3-FIFO's items (and its larger indexes) live in memory it maps itself, outside the heap.
  const auto segments = static_cast<long long>(c.stats().mapped_bytes);
  const Fill f{c.size(), per_item(g_live_jemalloc.load() - before + segments),
               per_item(g_live_glibc.load() - before_glibc + segments)};
  std::printf(
      "%s, maxmem %zu: %zu items, B/item above key+value: %.1f (jemalloc classes), "
      "%.1f (glibc chunks)\n",
      cache::to_string(evictor), maxmem, f.items, f.overhead_per_item, f.glibc_overhead_per_item);
  return f;
}

constexpr std::size_t kData = kItems * (kKeyBytes + kValueBytes);

// The issue-30 regression: a cache much larger than its data (2 GB holding 111 MB at 1M items)
// let S3-FIFO's small queue hold a 16-byte record for nearly every entry (+14 B per item).
TEST(MemoryBound, S3FifoInALargeCache) {
  const Fill f = fill(cache::Evictor::s3fifo, std::size_t{2} << 30, kItems);
  EXPECT_EQ(f.items, kItems);
  EXPECT_LE(f.overhead_per_item, 20.0);  // 17.8 with segment logs; 31 before (issue 47)
}

// Eviction running: the ghost's table is in the figure too.
TEST(MemoryBound, S3FifoInACache10PercentSmallerThanItsData) {
  const Fill f = fill(cache::Evictor::s3fifo, kData * 9 / 10, kItems);
  EXPECT_LT(f.items, kItems);
  // 21.4: at 200k items the partly consumed head segments and the spare, ~3 segments of 16 KiB
  // per shard, are ~4 B per item of it (~1 at the server's 1M); 33.8 before issue 30.
  EXPECT_LE(f.overhead_per_item, 23.0);
}

// An expiry costs 4 bytes (relative to its segment's base time).
TEST(MemoryBound, S3FifoWithATtlOnEveryItem) {
  const Fill f = fill(cache::Evictor::s3fifo, std::size_t{2} << 30, kItems, true);
  EXPECT_EQ(f.items, kItems);
  EXPECT_LE(f.overhead_per_item, 22.5);  // 21.2
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
