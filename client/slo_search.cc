// The capacity-at-an-SLO search (see slo_search.hh).
#include "client/slo_search.hh"

#include <cmath>
#include <cstdio>

namespace client {
namespace {

std::string rate_text(double rps) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f req/s", rps);
  return buf;
}

}  // namespace

SloSearchResult search_slo_capacity(const SloSearchParams& params, const SloMeasure& measure,
                                    const SloStepDone& step_done) {
  SloSearchResult result;
  const double top = params.max_rate_rps > 0
                         ? params.max_rate_rps
                         : SloSearchParams::kTopOverSaturation * params.saturation_rps;
  result.top_rps = top;
  if (!(top > 0) || !std::isfinite(top)) {
    result.conclusion = "no search: the closed-loop saturation point completed no requests";
    return result;
  }
  double lo = 0;    // the highest rate that met (0: none yet)
  double hi = top;  // the lowest rate that missed, or the top before any step
  double rate = top;
  for (unsigned n = 1; n <= SloSearchParams::kMaxSteps; ++n) {
    SloStep step;
    step.step = n;
    step.rate_rps = rate;
    step.outcome = measure(rate);
    step.meets =
        !step.outcome.stop && step.outcome.valid && step.outcome.percentile_us <= params.bound_us;
    result.steps.push_back(step);
    if (step_done) step_done(result.steps.back());
    if (step.outcome.stop) {
      result.stopped = true;
      result.conclusion = "stopped at step " + std::to_string(n) + " (the point did not finish)";
      break;
    }
    if (step.meets) {
      if (rate > lo) {
        lo = rate;
        result.capacity_rps = rate;
        result.capacity_percentile_us = step.outcome.percentile_us;
      }
      if (rate >= top) {
        result.conclusion = "the bound held at the top of the range searched (" + rate_text(top) +
                            "): the capacity is at least that";
        break;
      }
    } else {
      hi = std::min(hi, rate);
    }
    if (lo > 0 && hi / lo - 1 < params.precision) {
      result.conclusion = "converged: " + rate_text(lo) + " meets, " + rate_text(hi) + " does not";
      break;
    }
    const double next = (lo + hi) / 2;
    if (lo == 0 && next < SloSearchParams::kMinRateShare * top) {
      result.conclusion = "the bound is missed even at " + rate_text(hi);
      break;
    }
    if (n == SloSearchParams::kMaxSteps) {
      result.conclusion = "step limit reached (" + std::to_string(n) + " steps)";
      break;
    }
    rate = next;
  }
  return result;
}

}  // namespace client
