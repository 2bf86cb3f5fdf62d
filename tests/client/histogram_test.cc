// Histogram percentiles against exact sorted values, within the documented relative error.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "client/config.hh"
#include "client/histogram.hh"

namespace client {
namespace {

std::uint64_t exact_percentile(const std::vector<std::uint64_t>& sorted, double p) {
  // Integer nearest rank (see Histogram::percentile_ns for why not ceil in doubles).
  const auto millionths = static_cast<std::uint64_t>(std::llround(p * 10'000.0));
  auto rank = (millionths * sorted.size() + 999'999) / 1'000'000;
  rank = std::clamp<std::uint64_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

void expect_within_error(const Histogram& h, std::vector<std::uint64_t> values) {
  std::sort(values.begin(), values.end());
  for (double p : {0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0}) {
    const double exact = static_cast<double>(exact_percentile(values, p));
    const double got = static_cast<double>(h.percentile_ns(p));
    EXPECT_LE(std::abs(got - exact), exact * Histogram::kMaxRelativeError + 1e-9)
        << "p" << p << " exact " << exact << " got " << got;
    EXPECT_LE(std::abs(got - exact) / exact, 0.01) << "p" << p;  // the documented 1% bound
  }
  EXPECT_EQ(h.min_ns(), values.front());
  EXPECT_EQ(h.max_ns(), values.back());
  EXPECT_EQ(h.count(), values.size());
}

TEST(Histogram, LogNormalLatenciesMatchSortedValues) {
  std::mt19937_64 gen(42);
  std::lognormal_distribution<double> dist(std::log(50'000.0), 1.2);  // ~50 us median, long tail
  Histogram h;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    const auto v = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(dist(gen)), 1'000,
                                             Histogram::kMaxTrackableNs);
    values.push_back(v);
    h.record(v);
  }
  expect_within_error(h, values);
}

TEST(Histogram, UniformOverTheWholeRangeMatchesSortedValues) {
  std::mt19937_64 gen(7);
  // Log-uniform from 1 us to 1000 s: every power of two of the range gets samples.
  std::uniform_real_distribution<double> exponent(std::log(1'000.0), std::log(1.0e12));
  Histogram h;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 100'000; ++i) {
    const auto v = static_cast<std::uint64_t>(std::exp(exponent(gen)));
    values.push_back(v);
    h.record(v);
  }
  expect_within_error(h, values);
}

TEST(Histogram, SmallSetsUseNearestRank) {
  Histogram h;
  std::vector<std::uint64_t> values = {5'000, 1'000, 3'000, 2'000, 4'000};
  for (auto v : values) h.record(v);
  // Nearest rank on 5 values: p50 -> 3rd value, p90/p99 -> 5th, p20 -> 1st (not off by one).
  EXPECT_NEAR(h.percentile_ns(50), 3'000, 3'000 * Histogram::kMaxRelativeError);
  EXPECT_NEAR(h.percentile_ns(20), 1'000, 1'000 * Histogram::kMaxRelativeError);
  EXPECT_NEAR(h.percentile_ns(21), 2'000, 2'000 * Histogram::kMaxRelativeError);
  EXPECT_EQ(h.percentile_ns(99), 5'000u);
  EXPECT_EQ(h.percentile_ns(100), 5'000u);
  EXPECT_DOUBLE_EQ(h.mean_ns(), 3'000.0);
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 gen(3);
  std::exponential_distribution<double> dist(1.0 / 80'000.0);
  Histogram a, b, all;
  for (int i = 0; i < 50'000; ++i) {
    const auto v = static_cast<std::uint64_t>(dist(gen)) + 1;
    (i % 3 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.max_ns(), all.max_ns());
  EXPECT_EQ(a.min_ns(), all.min_ns());
  EXPECT_DOUBLE_EQ(a.mean_ns(), all.mean_ns());
  for (double p : {50.0, 99.0, 99.9}) EXPECT_EQ(a.percentile_ns(p), all.percentile_ns(p));
}

TEST(Histogram, SparseRoundTripKeepsPercentiles) {
  Histogram h;
  for (std::uint64_t v = 1'000; v < 2'000'000; v += 997) h.record(v);
  Histogram copy;
  copy.merge_sparse(h.nonzero_buckets());
  EXPECT_EQ(copy.count(), h.count());
  for (double p : {50.0, 90.0, 99.0}) EXPECT_EQ(copy.percentile_ns(p), h.percentile_ns(p));
}

TEST(Histogram, BucketsAreContiguousAndNarrow) {
  for (std::size_t i = 1; i < Histogram::kBucketCount; ++i) {
    ASSERT_EQ(Histogram::bucket_lowest(i), Histogram::bucket_highest(i - 1) + 1) << i;
    const double width =
        static_cast<double>(Histogram::bucket_highest(i) - Histogram::bucket_lowest(i) + 1);
    if (i < Histogram::kSubBuckets) {
      ASSERT_EQ(width, 1.0) << i;  // exact below 128 ns
    } else {
      ASSERT_LE(width / static_cast<double>(Histogram::bucket_lowest(i)),
                Histogram::kMaxRelativeError + 1e-12)
          << i;
    }
  }
  EXPECT_GE(Histogram::bucket_highest(Histogram::kBucketCount - 1), Histogram::kMaxTrackableNs);
  for (std::uint64_t v : {0ull, 1ull, 127ull, 128ull, 129ull, 1'000'000ull, 59'999'999'999ull,
                          60'000'000'000ull, 999'999'999'999ull, 1'000'000'000'000ull}) {
    const auto i = Histogram::bucket_index(v);
    EXPECT_LE(Histogram::bucket_lowest(i), v);
    EXPECT_GE(Histogram::bucket_highest(i), v);
  }
}

TEST(Histogram, RangeCoversTheLongestTimeout) {
  // --timeout accepts up to 600 s and a timed-out request is recorded at the time it waited.
  EXPECT_GE(Histogram::kMaxTrackableNs,
            static_cast<std::uint64_t>(std::chrono::nanoseconds(Config::kMaxTimeout).count()));
  Histogram h;
  const std::uint64_t timed_out = 600'100'000'000ull;  // 600 s + the 100 ms poll slice
  h.record(timed_out);
  EXPECT_EQ(h.above_range(), 0u);
  EXPECT_NEAR(static_cast<double>(h.percentile_ns(50)), static_cast<double>(timed_out),
              static_cast<double>(timed_out) * Histogram::kMaxRelativeError);
}

TEST(Histogram, ValuesAboveTheRangeAreCountedNotClamped) {
  Histogram h;
  const std::uint64_t huge = 2'000'000'000'000ull;  // 2000 s
  h.record(huge);
  for (int i = 0; i < 99; ++i) h.record(1'000);
  EXPECT_EQ(h.above_range(), 1u);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.max_ns(), huge);  // exact, not the range's end
  EXPECT_DOUBLE_EQ(h.mean_ns(), (huge + 99 * 1'000.0) / 100.0);
  EXPECT_LT(h.percentile_ns(99), 1'010u);  // rank 99 is in range (one bucket wide)
  EXPECT_EQ(h.percentile_ns(100), huge);   // rank 100 is above it: the exact maximum
  Histogram other;
  other.merge(h);
  EXPECT_EQ(other.above_range(), 1u);
  // The sparse form (the per-second series) carries the above-range count too.
  Histogram sparse;
  sparse.merge_sparse(h.nonzero_buckets());
  EXPECT_EQ(sparse.count(), 100u);
  EXPECT_EQ(sparse.above_range(), 1u);
  EXPECT_GT(sparse.percentile_ns(100), Histogram::kMaxTrackableNs);
}

TEST(Histogram, EmptyIsZero) {
  Histogram h;
  EXPECT_EQ(h.percentile_ns(99), 0u);
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.mean_ns(), 0.0);
}

}  // namespace
}  // namespace client

// Exact nearest ranks where floating point gets them wrong: 99.9% of 1000 is 999, not 1000
// (in doubles, 99.9/100*1000 = 999.0000000000001, whose ceiling is the maximum).
TEST(Histogram, NearestRankIsExactAtDecimalPercentiles) {
  client::Histogram h;
  for (std::uint64_t i = 1; i <= 1000; ++i) h.record(i);  // 999 and 1000 fall in different buckets
  EXPECT_EQ(h.percentile_ns(99.9), 999u);
  EXPECT_EQ(h.percentile_ns(100.0), 1000u);

  client::Histogram small;
  for (std::uint64_t i = 1; i <= 1000; ++i) small.record(i % 100 == 0 ? 100 : 1);  // ten 100s
  EXPECT_EQ(small.percentile_ns(99.0), 1u);    // rank 990: still a 1
  EXPECT_EQ(small.percentile_ns(99.1), 100u);  // rank 991: the first 100
}
