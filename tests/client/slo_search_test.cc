// The capacity-at-an-SLO search (client/slo_search.hh) against synthetic servers: a model maps a
// planned rate to what a point would measure, so each rule of the search is checked without a
// server (the end-to-end test against a server of known service time is test_slo_e2e.py).
#include "client/slo_search.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace client {
namespace {

constexpr double kBoundUs = 1000;

// A server whose percentile jumps over the bound above `capacity`.
SloMeasure step_model(double capacity) {
  return [capacity](double rate) {
    SloStepOutcome o;
    o.achieved_rps = rate;
    o.percentile_us = rate <= capacity ? 500 : 5000;
    return o;
  };
}

SloSearchParams params(double saturation, double max_rate = 0, double precision = 0.02) {
  return {.bound_us = kBoundUs,
          .saturation_rps = saturation,
          .max_rate_rps = max_rate,
          .precision = precision};
}

TEST(SloSearch, FindsStepCapacityWithinPrecision) {
  for (double capacity : {1234.0, 7000.0, 9500.0, 10500.0}) {
    const SloSearchResult r = search_slo_capacity(params(10000), step_model(capacity));
    ASSERT_TRUE(r.capacity_rps.has_value()) << capacity;
    EXPECT_LE(*r.capacity_rps, capacity);
    EXPECT_GE(*r.capacity_rps, capacity * (1 - 0.02 * 1.01)) << capacity;
    EXPECT_EQ(*r.capacity_percentile_us, 500);
    EXPECT_DOUBLE_EQ(r.top_rps, 11000);
    EXPECT_LE(r.steps.size(), SloSearchParams::kMaxSteps);
    EXPECT_NE(r.conclusion.find("converged"), std::string::npos) << r.conclusion;
  }
}

TEST(SloSearch, FirstStepIsTheTopAndItsSuccessEndsTheSearch) {
  int calls = 0;
  auto model = [&](double rate) {
    ++calls;
    return step_model(1e9)(rate);
  };
  const SloSearchResult r = search_slo_capacity(params(10000, 4000), model);
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(r.steps[0].rate_rps, 4000);  // --slo-max-rate is the top
  EXPECT_TRUE(r.steps[0].meets);
  EXPECT_EQ(r.capacity_rps, 4000);
  EXPECT_NE(r.conclusion.find("top of the range"), std::string::npos);
}

TEST(SloSearch, BoundMissedEverywhereGivesNoCapacity) {
  const SloSearchResult r = search_slo_capacity(params(10000), step_model(1.0));
  EXPECT_FALSE(r.capacity_rps.has_value());
  EXPECT_FALSE(r.capacity_percentile_us.has_value());
  EXPECT_NE(r.conclusion.find("missed even at"), std::string::npos) << r.conclusion;
  for (const auto& s : r.steps) EXPECT_FALSE(s.meets);
  // It stops near kMinRateShare of the top, not after kMaxSteps.
  EXPECT_LT(r.steps.size(), 10u);
}

TEST(SloSearch, InvalidPointsNeverCount) {
  // Below 6000 the server meets the bound, but every point above 3000 is invalid (the client
  // could not keep its schedule): the capacity is what valid points showed, at most 3000.
  auto model = [](double rate) {
    SloStepOutcome o = step_model(6000)(rate);
    if (rate > 3000) {
      o.valid = false;
      o.invalid_reason = "schedule slipped";
    }
    return o;
  };
  const SloSearchResult r = search_slo_capacity(params(10000), model);
  ASSERT_TRUE(r.capacity_rps.has_value());
  EXPECT_LE(*r.capacity_rps, 3000);
  EXPECT_GE(*r.capacity_rps, 3000 * 0.97);
  for (const auto& s : r.steps) {
    if (!s.outcome.valid) {
      EXPECT_FALSE(s.meets);
    }
  }
}

TEST(SloSearch, PercentileExactlyAtTheBoundMeets) {
  auto model = [](double rate) {
    SloStepOutcome o;
    o.achieved_rps = rate;
    o.percentile_us = rate <= 5000 ? kBoundUs : kBoundUs + 1;
    return o;
  };
  const SloSearchResult r = search_slo_capacity(params(10000), model);
  ASSERT_TRUE(r.capacity_rps.has_value());
  EXPECT_GE(*r.capacity_rps, 5000 * 0.97);
}

TEST(SloSearch, NoisyModelAnswersOnlyARateThatMet) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(0.9, 1.1);
  std::vector<std::pair<double, bool>> seen;
  auto model = [&](double rate) {
    SloStepOutcome o;
    o.achieved_rps = rate;
    o.percentile_us = rate / 8000 * kBoundUs * noise(rng);  // crosses the bound near 8000
    seen.emplace_back(rate, o.percentile_us <= kBoundUs);
    return o;
  };
  const SloSearchResult r = search_slo_capacity(params(10000), model);
  ASSERT_TRUE(r.capacity_rps.has_value());
  bool met = false;
  for (const auto& [rate, ok] : seen)
    if (rate == *r.capacity_rps) met = met || ok;
  EXPECT_TRUE(met);
  EXPECT_GT(*r.capacity_rps, 6000);
  EXPECT_LT(*r.capacity_rps, 10000);
}

TEST(SloSearch, StepLimitBoundsTheSearch) {
  // A tiny precision cannot be reached: the search stops at kMaxSteps.
  const SloSearchResult r = search_slo_capacity(params(10000, 0, 1e-12), step_model(5000));
  EXPECT_EQ(r.steps.size(), SloSearchParams::kMaxSteps);
  EXPECT_NE(r.conclusion.find("step limit"), std::string::npos);
  ASSERT_TRUE(r.capacity_rps.has_value());
  EXPECT_NEAR(*r.capacity_rps, 5000, 1);
}

TEST(SloSearch, AStoppedPointEndsTheSearchWithWhatWasFound) {
  int calls = 0;
  auto model = [&](double rate) {
    SloStepOutcome o = step_model(5000)(rate);
    if (++calls == 3) o.stop = true;
    return o;
  };
  std::vector<unsigned> reported;
  const SloSearchResult r = search_slo_capacity(
      params(10000), model, [&](const SloStep& s) { reported.push_back(s.step); });
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(reported, (std::vector<unsigned>{1, 2, 3}));
  EXPECT_FALSE(r.steps.back().meets);
}

TEST(SloSearch, ZeroSaturationMeansNoSearch) {
  int calls = 0;
  auto model = [&](double rate) {
    ++calls;
    return step_model(1)(rate);
  };
  const SloSearchResult r = search_slo_capacity(params(0), model);
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(r.capacity_rps.has_value());
}

}  // namespace
}  // namespace client
