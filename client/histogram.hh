// Log-linear latency histogram, hand-written in the manner of HdrHistogram (Debian 12 ships no
// HdrHistogram C/C++ package). Values are nanoseconds. Values below 128 ns get exact buckets;
// every power-of-two range [2^e, 2^(e+1)) above is split into 128 equal sub-buckets, so a bucket
// is at most 1/128 (0.78%) of its values wide. Percentiles use the nearest-rank definition and
// report the bucket's highest equivalent value, clamped to the exact min/max; their relative
// error is therefore below 1% for every value from 1 us to 1000 s, the trackable range, which
// covers bench_client's longest --timeout (600 s) with room for the time a timed-out request is
// noticed late. A value above the range is never clamped: it is counted in above_range() (and in
// count(), mean, min and max, which stay exact), and a percentile whose rank falls among such
// values reports the exact maximum. Memory is fixed: 4,352 counters (34 KiB).
// One instance per thread: no locks, no atomics; merge() combines them after the run.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace client {

// A histogram in a form that can be written out, read back and merged exactly: the sparse
// buckets (nonzero_buckets(), with the above-range pseudo-bucket) plus the exact count, sum,
// minimum and maximum. bench_client's JSON carries one per point (and per node), so that runs
// from several load machines merge into the result one run over all their samples would give
// (`bench_client merge`).
struct HistogramSnapshot {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> buckets;
  std::uint64_t count = 0, sum_ns = 0, min_ns = 0, max_ns = 0;
};

class Histogram {
 public:
  static constexpr unsigned kSubBucketBits = 7;
  static constexpr std::uint64_t kSubBuckets = 1u << kSubBucketBits;      // 128
  static constexpr std::uint64_t kMaxTrackableNs = 1'000'000'000'000ull;  // 1000 s
  static constexpr unsigned kMaxExponent = 39;  // 2^40 ns (1099.5 s) > 1000 s
  static constexpr std::size_t kBucketCount = kSubBuckets * (kMaxExponent - kSubBucketBits + 2);
  // In nonzero_buckets()/merge_sparse(): the pseudo-bucket holding the above-range count.
  static constexpr std::uint32_t kAboveRangeIndex = static_cast<std::uint32_t>(kBucketCount);
  static constexpr double kMaxRelativeError = 1.0 / kSubBuckets;

  void record(std::uint64_t ns);
  void merge(const Histogram& other);
  // Adds sparse (bucket index, count) pairs produced by nonzero_buckets().
  void merge_sparse(const std::vector<std::pair<std::uint32_t, std::uint64_t>>& sparse);
  void reset();
  HistogramSnapshot snapshot() const;
  // Adds a snapshot's samples: afterwards every statistic equals that of one histogram that had
  // recorded both sets of values (the snapshot's min/max/sum are exact, unlike merge_sparse()).
  void merge(const HistogramSnapshot& other);

  std::uint64_t count() const { return count_; }
  // Values recorded above kMaxTrackableNs (kept out of the buckets, never clamped).
  std::uint64_t above_range() const { return above_range_; }
  std::uint64_t min_ns() const { return count_ ? min_ : 0; }
  std::uint64_t max_ns() const { return max_; }
  double mean_ns() const {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0;
  }
  // Nearest-rank percentile, p in [0, 100]; 0 when empty; max_ns() when the rank falls among the
  // values above the range.
  std::uint64_t percentile_ns(double p) const;
  // (bucket index, count) of every non-empty bucket, then (kAboveRangeIndex, above_range()) if
  // any value was above the range.
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
  std::uint64_t above_range_ = 0;
};

}  // namespace client
