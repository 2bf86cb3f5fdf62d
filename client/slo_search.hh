// Capacity at an SLO (--slo pP=BOUND): the search for the highest open-loop rate whose corrected
// percentile P stays within BOUND, in the manner of mutilate's --search. The search is a pure
// algorithm over a `measure(rate)` callback, so its logic is tested without a server
// (tests/client/slo_search_test.cc); the sweep (sweep.cc) supplies a callback that runs one
// open-loop point per step.
//
// Method (docs/client.md, "Capacity at an SLO"):
//  - the top of the range is --slo-max-rate, or 1.1 x the closed-loop saturation throughput;
//  - step 1 measures the top: when it meets the bound, the capacity is the top (the bound held
//    over the whole range searched);
//  - otherwise bisection between the highest rate that met (initially 0) and the lowest that did
//    not, at the arithmetic midpoint, until hi / lo - 1 < precision, or kMaxSteps steps, or the
//    rate falls below kMinRateShare of the top with nothing met (the bound is missed even there);
//  - a step meets only when its point is valid (slo_validity in perf.cc: the achieved rate within
//    1% of the planned one, the schedule kept) and its percentile is within the bound. An invalid
//    or missing step counts as a miss: the answer is never a rate that was not shown to meet.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace client {

// What one step's point measured.
struct SloStepOutcome {
  double achieved_rps = 0;
  double percentile_us = 0;  // the point's corrected latency at the SLO's percentile
  bool valid = true;
  std::string invalid_reason;  // empty when valid
  bool stop = false;           // the point aborted or was interrupted: the search ends here
};

struct SloStep {
  unsigned step = 0;  // 1-based
  double rate_rps = 0;
  SloStepOutcome outcome;
  bool meets = false;
};

struct SloSearchParams {
  static constexpr unsigned kMaxSteps = 20;
  // Nothing met and the probe rate is below this share of the top: the bound is missed there.
  static constexpr double kMinRateShare = 1.0 / 128;
  static constexpr double kTopOverSaturation = 1.1;
  double bound_us = 0;
  double saturation_rps = 0;  // the closed-loop point's throughput
  double max_rate_rps = 0;    // --slo-max-rate; 0: kTopOverSaturation x saturation_rps
  double precision = 0.02;    // stop when hi / lo - 1 < precision
};

struct SloSearchResult {
  std::vector<SloStep> steps;
  double top_rps = 0;                            // the top of the range searched
  std::optional<double> capacity_rps;            // the highest rate that met (none: never met)
  std::optional<double> capacity_percentile_us;  // that step's percentile
  std::string conclusion;                        // one line: why the search ended
  bool stopped = false;                          // a step's point aborted or was interrupted
};

using SloMeasure = std::function<SloStepOutcome(double rate_rps)>;
using SloStepDone = std::function<void(const SloStep&)>;

SloSearchResult search_slo_capacity(const SloSearchParams& params, const SloMeasure& measure,
                                    const SloStepDone& step_done = {});

}  // namespace client
