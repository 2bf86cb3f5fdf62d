// LatencySummary from a Histogram (see latency_summary.hh).
#include "client/latency_summary.hh"

namespace client {

LatencySummary summarize(const Histogram& h) {
  LatencySummary s;
  s.mean_us = h.mean_ns() / kNsPerUs;
  s.min_us = static_cast<double>(h.min_ns()) / kNsPerUs;
  s.p50_us = static_cast<double>(h.percentile_ns(50)) / kNsPerUs;
  s.p90_us = static_cast<double>(h.percentile_ns(90)) / kNsPerUs;
  s.p95_us = static_cast<double>(h.percentile_ns(95)) / kNsPerUs;
  s.p99_us = static_cast<double>(h.percentile_ns(99)) / kNsPerUs;
  s.p999_us = static_cast<double>(h.percentile_ns(99.9)) / kNsPerUs;
  s.max_us = static_cast<double>(h.max_ns()) / kNsPerUs;
  return s;
}

}  // namespace client
