// Implementations of the generator and the laws declared in distributions.hh.
#include "client/distributions.hh"

#include <algorithm>
#include <bit>
#include <cmath>

namespace client {

Rng::Rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& word : s_) {
    x += 0x9e3779b97f4a7c15ull;
    word = mix64(x);
  }
}

std::uint64_t Rng::next() {
  const std::uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = std::rotl(s_[3], 45);
  return result;
}

double Gev::quantile(double u) const {
  const double t = -std::log(u);
  if (xi == 0.0) return mu - sigma * std::log(t);
  return mu + sigma * (std::pow(t, -xi) - 1.0) / xi;
}

double Gev::cdf(double x) const {
  const double z = (x - mu) / sigma;
  if (xi == 0.0) return std::exp(-std::exp(-z));
  const double base = 1.0 + xi * z;
  if (base <= 0.0) return xi > 0 ? 0.0 : 1.0;
  return std::exp(-std::pow(base, -1.0 / xi));
}

double GenPareto::quantile(double u) const {
  const double tail = 1.0 - u;  // survival probability
  if (xi == 0.0) return theta - sigma * std::log(tail);
  return theta + sigma * (std::pow(tail, -xi) - 1.0) / xi;
}

double GenPareto::cdf(double x) const {
  if (x < theta) return 0.0;
  const double z = (x - theta) / sigma;
  if (xi == 0.0) return 1.0 - std::exp(-z);
  return 1.0 - std::pow(1.0 + xi * z, -1.0 / xi);
}

double EtcValueSize::small_mass() {
  double sum = 0;
  for (double p : kSmall) sum += p;
  return sum;
}

std::uint64_t EtcValueSize::quantile(double u) {
  double cumulative = 0;
  for (std::size_t i = 0; i < kSmall.size(); ++i) {
    cumulative += kSmall[i];
    if (u < cumulative) return i;
  }
  // Rescale the remaining probability mass to (0, 1) for the tail law.
  const double v = std::clamp((u - cumulative) / (1.0 - cumulative), 1e-300, 1.0 - 1e-16);
  return static_cast<std::uint64_t>(std::floor(kTail.quantile(v)));
}

double EtcValueSize::cdf(double x) {
  if (x < 0) return 0.0;
  double cumulative = 0;
  for (std::size_t i = 0; i < kSmall.size() && static_cast<double>(i) <= x; ++i)
    cumulative += kSmall[i];
  if (x < 15.0) return cumulative;
  const double mass = small_mass();
  // Sizes are floor(GP): size <= x  <=>  GP < floor(x) + 1.
  return mass + (1.0 - mass) * kTail.cdf(std::floor(x) + 1.0);
}

// ---- Zipf by rejection-inversion (Hoermann & Derflinger, 1996) ----

namespace {
// log1p(x)/x, continuous at 0.
double helper1(double x) {
  return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
// expm1(x)/x, continuous at 0.
double helper2(double x) {
  return std::abs(x) > 1e-8 ? std::expm1(x) / x
                            : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}
}  // namespace

Zipf::Zipf(std::uint64_t n, double theta) : n_(std::max<std::uint64_t>(n, 1)), theta_(theta) {
  if (theta_ <= 0.0) return;
  h_integral_x1_ = h_integral(1.5) - 1.0;
  h_integral_n_ = h_integral(static_cast<double>(n_) + 0.5);
  s_ = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
}

double Zipf::h(double x) const {
  return std::exp(-theta_ * std::log(x));
}

double Zipf::h_integral(double x) const {
  const double log_x = std::log(x);
  return helper2((1.0 - theta_) * log_x) * log_x;
}

double Zipf::h_integral_inverse(double x) const {
  double t = x * (1.0 - theta_);
  if (t < -1.0) t = -1.0;  // numerical guard, as in the reference algorithm
  return std::exp(helper1(t) * x);
}

std::uint64_t Zipf::sample(Rng& rng) const {
  if (theta_ <= 0.0) return rng.below(n_) + 1;
  // Bounded: the acceptance probability is high (> 0.5 for every theta, n), so this loop ends
  // after very few iterations; the cap only protects against a degenerate generator.
  for (int attempt = 0; attempt < 1'000; ++attempt) {
    const double u = h_integral_n_ + rng.uniform01() * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    double kd = std::floor(x + 0.5);
    kd = std::clamp(kd, 1.0, static_cast<double>(n_));
    if (kd - x <= s_ || u >= h_integral(kd + 0.5) - h(kd)) return static_cast<std::uint64_t>(kd);
  }
  return 1;
}

}  // namespace client
