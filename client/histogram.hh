// Log-linear latency histogram, hand-written in the manner of HdrHistogram (Debian 12 ships no
// HdrHistogram C/C++ package). Values are nanoseconds. Values below 128 ns get exact buckets;
// every power-of-two range [2^e, 2^(e+1)) above is split into 128 equal sub-buckets, so a bucket
// is at most 1/128 (0.78%) of its values wide. Percentiles use the nearest-rank definition and
// report the bucket's highest equivalent value, clamped to the exact min/max; their relative
// error is therefore below 1% for every value from 1 us to 60 s (the trackable range; larger
// values are clamped to 60 s and counted in saturated()). Memory is fixed: 3,840 counters.
// One instance per thread: no locks, no atomics; merge() combines them after the run.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace bench {

class Histogram {
 public:
  static constexpr unsigned kSubBucketBits = 7;
  static constexpr std::uint64_t kSubBuckets = 1u << kSubBucketBits;   // 128
  static constexpr std::uint64_t kMaxTrackableNs = 60'000'000'000ull;  // 60 s
  static constexpr unsigned kMaxExponent = 35;                         // 2^36 ns > 60 s
  static constexpr std::size_t kBucketCount = kSubBuckets * (kMaxExponent - kSubBucketBits + 2);
  static constexpr double kMaxRelativeError = 1.0 / kSubBuckets;

  void record(std::uint64_t ns);
  void merge(const Histogram& other);
  // Adds sparse (bucket index, count) pairs produced by nonzero_buckets().
  void merge_sparse(const std::vector<std::pair<std::uint32_t, std::uint64_t>>& sparse);
  void reset();

  std::uint64_t count() const { return count_; }
  std::uint64_t saturated() const { return saturated_; }
  std::uint64_t min_ns() const { return count_ ? min_ : 0; }
  std::uint64_t max_ns() const { return max_; }
  double mean_ns() const {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0;
  }
  // Nearest-rank percentile, p in [0, 100]; 0 when empty.
  std::uint64_t percentile_ns(double p) const;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> nonzero_buckets() const;

  static std::size_t bucket_index(std::uint64_t ns);
  static std::uint64_t bucket_lowest(std::size_t index);
  static std::uint64_t bucket_highest(std::size_t index);

 private:
  std::array<std::uint64_t, kBucketCount> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  std::uint64_t saturated_ = 0;
};

}  // namespace bench
