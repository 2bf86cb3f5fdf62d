// The validity of an open-loop point (perf.hh mark_point_validity) and the --requests-total split
// (perf.hh requests_of_thread): the rules docs/client.md states, one case each.
#include <gtest/gtest.h>

#include <numeric>

#include "client/perf.hh"

namespace client {
namespace {

PointResult open_point(double planned_rps, double achieved_rps) {
  PointResult p;
  p.open_loop = true;
  p.target_rps = planned_rps;
  p.throughput_rps = achieved_rps;
  p.duration_s = 2.0;
  p.requests = static_cast<std::uint64_t>(achieved_rps * p.duration_s);
  p.send_lag_p99_us = 50;
  return p;
}

TEST(PointValidity, ClosedLoopPointsAreAlwaysValid) {
  PointResult p;
  p.throughput_rps = 1;
  mark_point_validity(p);
  EXPECT_TRUE(p.valid);
  EXPECT_TRUE(p.invalid_reason.empty());
}

TEST(PointValidity, AchievedWithinOnePercentIsValid) {
  PointResult p = open_point(10000, 9901);
  mark_point_validity(p);
  EXPECT_TRUE(p.valid) << p.invalid_reason;
}

TEST(PointValidity, AchievedMoreThanOnePercentShortIsInvalid) {
  PointResult p = open_point(10000, 9899);
  mark_point_validity(p);
  EXPECT_FALSE(p.valid);
  EXPECT_EQ(p.invalid_reason, "achieved 9899 of planned 10000 req/s");
}

TEST(PointValidity, UnsentPlannedSendsAreASlippedSchedule) {
  PointResult p = open_point(10000, 9950);
  p.unsent = p.requests / 50;  // 2% of the planned sends never left the client
  mark_point_validity(p);
  EXPECT_FALSE(p.valid);
  EXPECT_NE(p.invalid_reason.find("schedule slipped"), std::string::npos) << p.invalid_reason;
  EXPECT_NE(p.invalid_reason.find("never issued"), std::string::npos) << p.invalid_reason;
}

TEST(PointValidity, SendLagAboveTheLimitIsASlippedSchedule) {
  PointResult p = open_point(10000, 10000);
  // The limit is max(1 ms, 10% of the window): 200 ms for a 2 s window.
  p.send_lag_p99_us = 199'000;
  mark_point_validity(p);
  EXPECT_TRUE(p.valid) << p.invalid_reason;
  p.send_lag_p99_us = 201'000;
  mark_point_validity(p);
  EXPECT_FALSE(p.valid);
  EXPECT_NE(p.invalid_reason.find("send lag p99 201000 us > 200000 us"), std::string::npos)
      << p.invalid_reason;
}

TEST(RequestsTotal, SplitsEvenlyFirstThreadsTakeTheRemainder) {
  std::vector<std::uint64_t> shares;
  for (unsigned t = 0; t < 4; ++t) shares.push_back(requests_of_thread(10, 999, 4, t));
  EXPECT_EQ(shares, (std::vector<std::uint64_t>{3, 3, 2, 2}));
  EXPECT_EQ(requests_of_thread(0, 999, 4, 3), 999u);  // not given: -n per thread
  // Fewer requests than threads: the extra threads issue none.
  std::uint64_t sum = 0;
  for (unsigned t = 0; t < 8; ++t) sum += requests_of_thread(3, 999, 8, t);
  EXPECT_EQ(sum, 3u);
  EXPECT_EQ(requests_of_thread(3, 999, 8, 7), 0u);
}

}  // namespace
}  // namespace client
