// Log-linear histogram implementation: bucket arithmetic, recording, merging, percentiles.
#include "client/histogram.hh"

#include <algorithm>
#include <bit>
#include <cmath>

namespace client {

std::size_t Histogram::bucket_index(std::uint64_t ns) {
  if (ns < kSubBuckets) return static_cast<std::size_t>(ns);
  const unsigned e = static_cast<unsigned>(std::bit_width(ns)) - 1;  // ns in [2^e, 2^(e+1))
  const unsigned shift = e - kSubBucketBits;
  const std::uint64_t sub = (ns >> shift) - kSubBuckets;  // 0..127
  return static_cast<std::size_t>(kSubBuckets * (shift + 1) + sub);
}

std::uint64_t Histogram::bucket_lowest(std::size_t index) {
  if (index < kSubBuckets) return index;
  const std::uint64_t shift = index / kSubBuckets - 1;
  const std::uint64_t sub = index % kSubBuckets;
  return (kSubBuckets + sub) << shift;
}

std::uint64_t Histogram::bucket_highest(std::size_t index) {
  if (index < kSubBuckets) return index;
  const std::uint64_t shift = index / kSubBuckets - 1;
  return bucket_lowest(index) + (std::uint64_t{1} << shift) - 1;
}

void Histogram::record(std::uint64_t ns) {
  if (ns > kMaxTrackableNs)
    ++above_range_;
  else
    ++counts_[bucket_index(ns)];
  ++count_;
  sum_ += ns;
  min_ = std::min(min_, ns);
  max_ = std::max(max_, ns);
}

void Histogram::merge(const Histogram& other) {
  for (std::size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  above_range_ += other.above_range_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::merge_sparse(const std::vector<std::pair<std::uint32_t, std::uint64_t>>& sparse) {
  for (const auto& [index, n] : sparse) {
    if (n == 0) continue;
    if (index == kAboveRangeIndex) {
      // No exact values either: count them at the range's end, a lower bound.
      above_range_ += n;
      count_ += n;
      sum_ += n * (kMaxTrackableNs + 1);
      min_ = std::min(min_, kMaxTrackableNs + 1);
      max_ = std::max(max_, kMaxTrackableNs + 1);
      continue;
    }
    if (index >= kBucketCount) continue;
    counts_[index] += n;
    count_ += n;
    // Sparse data carries no exact extremes or sum: use the bucket's bounds.
    sum_ += n * ((bucket_lowest(index) + bucket_highest(index)) / 2);
    min_ = std::min(min_, bucket_lowest(index));
    max_ = std::max(max_, bucket_highest(index));
  }
}

HistogramSnapshot Histogram::snapshot() const {
  return HistogramSnapshot{nonzero_buckets(), count_, sum_, min_ns(), max_};
}

void Histogram::merge(const HistogramSnapshot& other) {
  if (other.count == 0) return;
  for (const auto& [index, n] : other.buckets) {
    if (index == kAboveRangeIndex)
      above_range_ += n;
    else if (index < kBucketCount)
      counts_[index] += n;
  }
  count_ += other.count;
  sum_ += other.sum_ns;
  min_ = std::min(min_, other.min_ns);
  max_ = std::max(max_, other.max_ns);
}

void Histogram::reset() {
  *this = Histogram{};
}

std::uint64_t Histogram::percentile_ns(double p) const {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  // Nearest rank: the smallest value with at least ceil(p/100 * N) values at or below it.
  // Computed in integers on p in millionths: in doubles, 99.9/100*1000 is 999.0000000000001
  // and the rank of p99.9 over 1000 samples would be 1000 (the maximum) instead of 999.
  // Split N so nothing overflows: N*pm/1e6 = (N/1e6)*pm + (N%1e6)*pm/1e6, rounding up.
  const auto pm = static_cast<std::uint64_t>(std::llround(p * 10'000.0));
  auto rank = (count_ / 1'000'000) * pm + ((count_ % 1'000'000) * pm + 999'999) / 1'000'000;
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(bucket_highest(i), min_, max_);
  }
  return max_;  // the rank is among the values above the range
}

std::vector<std::pair<std::uint32_t, std::uint64_t>> Histogram::nonzero_buckets() const {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> out;
  for (std::size_t i = 0; i < kBucketCount; ++i)
    if (counts_[i] != 0) out.emplace_back(static_cast<std::uint32_t>(i), counts_[i]);
  if (above_range_ != 0) out.emplace_back(kAboveRangeIndex, above_range_);
  return out;
}

}  // namespace client
