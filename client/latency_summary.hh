// A LatencySummary (mean, min, percentiles, max in microseconds) from a Histogram: the one place
// these numbers are computed, by a run (perf.cc) and by `bench_client merge` (merge.cc) alike, so
// a merged point's percentiles come out of exactly the code path of a normal run.
#pragma once

#include "client/histogram.hh"
#include "client/result.hh"

namespace client {

// Histograms count nanoseconds; summaries and reports speak microseconds.
inline constexpr double kNsPerUs = 1000.0;

LatencySummary summarize(const Histogram& h);

}  // namespace client
