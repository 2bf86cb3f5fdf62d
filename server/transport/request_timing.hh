// request_timing.hh — the server-side request-duration histograms behind /metrics: the route
// classes (one per kind of request, named in kRouteTable's rows), the fixed bucket bounds, and
// RequestTimings, one worker's histograms as plain atomic counters.
//
// Why fixed buckets and per-worker atomics: recording a request is a bucket search over 15
// constants and two relaxed fetch_adds into the worker's own block (stats.hh), so the request
// path takes no lock and allocates nothing; /metrics sums the workers when it is read. What a
// duration covers and where the clock is read is in docs/server.md, "Metrics".
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace server {

// What a request is, for its duration histogram. Each row of kRouteTable names its class;
// requests no row takes (404, 405, 501, malformed) are `other`. The board routes have two:
// board_update (PUT and DELETE of members and boards) and board_read (their GETs).
enum class RouteClass : std::uint8_t {
  get,
  put,
  delete_,
  head,
  reset,
  stats,
  metrics,
  board_update,
  board_read,
  other,
};
inline constexpr std::size_t kRouteClassCount = 10;

constexpr std::string_view route_class_name(RouteClass c) {
  switch (c) {
    case RouteClass::get:
      return "get";
    case RouteClass::put:
      return "put";
    case RouteClass::delete_:
      return "delete";
    case RouteClass::head:
      return "head";
    case RouteClass::reset:
      return "reset";
    case RouteClass::stats:
      return "stats";
    case RouteClass::metrics:
      return "metrics";
    case RouteClass::board_update:
      return "board_update";
    case RouteClass::board_read:
      return "board_read";
    case RouteClass::other:
      return "other";
  }
  return "?";
}
static_assert(static_cast<std::size_t>(RouteClass::other) + 1 == kRouteClassCount,
              "kRouteClassCount counts every RouteClass (other is the last)");

// The histogram's upper bounds (inclusive, as Prometheus's `le`), 25 µs to 1 s; a duration above
// the last falls in the +Inf bucket. `le` is the label text /metrics prints (seconds).
struct BucketBound {
  std::uint64_t ns;
  std::string_view le;
};
inline constexpr std::array<BucketBound, 15> kDurationBuckets{{
    {25'000, "2.5e-05"},
    {50'000, "5e-05"},
    {100'000, "0.0001"},
    {250'000, "0.00025"},
    {500'000, "0.0005"},
    {1'000'000, "0.001"},
    {2'500'000, "0.0025"},
    {5'000'000, "0.005"},
    {10'000'000, "0.01"},
    {25'000'000, "0.025"},
    {50'000'000, "0.05"},
    {100'000'000, "0.1"},
    {250'000'000, "0.25"},
    {500'000'000, "0.5"},
    {1'000'000'000, "1"},
}};
inline constexpr std::size_t kBucketCount = kDurationBuckets.size() + 1;  // + the +Inf bucket

// The bucket a duration falls in (kBucketCount - 1: above every bound).
constexpr std::size_t bucket_of(std::uint64_t ns) {
  std::size_t i = 0;
  while (i < kDurationBuckets.size() && ns > kDurationBuckets[i].ns) ++i;
  return i;
}

// One worker's histograms. Buckets are not cumulative here (each duration bumps one); /metrics
// accumulates them and derives _count from their sum, so a reader never sees a _count that
// disagrees with the buckets it read.
struct RequestTimings {
  struct Histogram {
    std::array<std::atomic<std::uint64_t>, kBucketCount> buckets{};
    std::atomic<std::uint64_t> sum_ns{0};
  };
  std::array<Histogram, kRouteClassCount> by_class{};

  // `count` requests of class `c` that each took `ns` nanoseconds (a batch answered together).
  void observe(RouteClass c, std::uint64_t ns, std::uint64_t count = 1) {
    Histogram& h = by_class[static_cast<std::size_t>(c)];
    h.buckets[bucket_of(ns)].fetch_add(count, std::memory_order_relaxed);
    h.sum_ns.fetch_add(ns * count, std::memory_order_relaxed);
  }
};

// A snapshot summed over the workers (what /metrics renders).
struct TimingTotals {
  struct Histogram {
    std::array<std::uint64_t, kBucketCount> buckets{};
    std::uint64_t sum_ns = 0;
  };
  std::array<Histogram, kRouteClassCount> by_class{};
};

}  // namespace server
