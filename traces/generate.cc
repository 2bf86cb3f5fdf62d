// generate.cc — the Zipf trace generator (see generate.hh). Inverse CDF over a table of the
// cumulative popularity: exact, and cheap for the key counts used here (up to a few million).
#include "traces/generate.hh"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace traces {

std::vector<std::uint64_t> generate_zipf(const ZipfSpec& spec) {
  if (spec.keys == 0) throw std::invalid_argument("zipf: keys must be positive");
  if (spec.requests == 0) throw std::invalid_argument("zipf: requests must be positive");
  if (!std::isfinite(spec.alpha) || spec.alpha < 0)
    throw std::invalid_argument("zipf: alpha must be a finite number >= 0");
  std::vector<double> cdf(spec.keys);
  double sum = 0;
  for (std::uint64_t i = 0; i < spec.keys; ++i) {
    sum += 1.0 / std::pow(static_cast<double>(i + 1), spec.alpha);
    cdf[i] = sum;
  }
  for (double& c : cdf) c /= sum;

  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<std::uint64_t> ids;
  ids.reserve(spec.requests + spec.scan_keys);
  std::uint64_t next_scan = 0;
  for (std::uint64_t i = 0; i < spec.requests; ++i) {
    const auto it = std::lower_bound(cdf.begin(), cdf.end(), uniform(rng));
    ids.push_back(
        std::min<std::uint64_t>(static_cast<std::uint64_t>(it - cdf.begin()), spec.keys - 1));
    if (i >= spec.scan_start && next_scan < spec.scan_keys) ids.push_back(spec.keys + next_scan++);
  }
  return ids;
}

}  // namespace traces
