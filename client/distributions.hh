// Random number generation and the probability laws the workloads draw from: a per-thread
// xoshiro256** generator, GEV (ETC key sizes), Generalized Pareto and the discrete+GP mixture of
// ETC value sizes (Atikoglu et al., SIGMETRICS 2012; the same table as mutilate's fb_value), and
// a constant-time Zipf sampler (rejection-inversion, Hoermann & Derflinger 1996). Each law exposes
// its quantile function so that tests can compare samples against the model.
#pragma once

#include <array>
#include <cstdint>

namespace client {

// SplitMix64 finalizer: a good 64-bit mixing function, also used to derive seeds and hashes.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// xoshiro256**: fast, small state, good statistical quality. Not thread-safe by design: one per
// thread.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  // Uniform in the open interval (0, 1).
  double uniform01() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; negligible bias for n << 2^64).
  std::uint64_t below(std::uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<std::uint64_t>((static_cast<U128>(next()) * n) >> 64);
  }

 private:
  std::array<std::uint64_t, 4> s_{};
};

// Maps a 64-bit hash to a uniform double in (0, 1).
inline double unit_from_hash(std::uint64_t h) {
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

// Generalized extreme value law, F(x) = exp(-(1 + xi (x-mu)/sigma)^(-1/xi)).
struct Gev {
  double mu, sigma, xi;
  double quantile(double u) const;
  double cdf(double x) const;
};

// Generalized Pareto law, F(x) = 1 - (1 + xi (x-theta)/sigma)^(-1/xi), x >= theta.
struct GenPareto {
  double theta, sigma, xi;
  double quantile(double u) const;
  double cdf(double x) const;
};

// ETC key sizes in bytes: GEV(mu=30.7984, sigma=8.20449, xi=0.078688).
inline constexpr Gev kEtcKeySize{30.7984, 8.20449, 0.078688};

// ETC value sizes in bytes: P(size = i) for i = 0..14 from the table, otherwise
// floor(GP(theta=15, sigma=214.476, xi=0.348238)).
class EtcValueSize {
 public:
  static constexpr std::array<double, 15> kSmall = {0.00536, 0.00047, 0.17820, 0.09239, 0.00018,
                                                    0.02740, 0.00065, 0.00606, 0.00023, 0.00837,
                                                    0.00837, 0.08989, 0.00092, 0.00326, 0.01980};
  static constexpr GenPareto kTail{15.0, 214.476, 0.348238};
  // Size for a uniform u in (0, 1).
  static std::uint64_t quantile(double u);
  // P(size <= x) of the model, for tests.
  static double cdf(double x);
  static double small_mass();
};

// Zipf law on ranks 1..n with P(k) proportional to k^-theta, theta > 0 (theta = 0 is uniform).
class Zipf {
 public:
  Zipf(std::uint64_t n, double theta);
  std::uint64_t sample(Rng& rng) const;  // 1..n
  std::uint64_t n() const { return n_; }

 private:
  double h(double x) const;
  double h_integral(double x) const;
  double h_integral_inverse(double x) const;

  std::uint64_t n_;
  double theta_;
  double h_integral_x1_ = 0, h_integral_n_ = 0, s_ = 0;
};

}  // namespace client
