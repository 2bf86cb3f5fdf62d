// output_test_support.hh — what the writers' tests (output_test.cc, targets_output_test.cc) share.
#pragma once

#include <cstdint>

#include "client/result.hh"

namespace client::output_test {

// A point of `threads` threads that completed `requests` in `duration_s` (its throughput is their
// quotient, as the sweep computes it) with a p99 latency of `p99_us`.
inline PointResult point(unsigned threads, std::uint64_t requests, double duration_s,
                         double p99_us) {
  PointResult p;
  p.threads = threads;
  p.requests = requests;
  p.duration_s = duration_s;
  p.throughput_rps = static_cast<double>(requests) / duration_s;
  p.latency.p99_us = p99_us;
  return p;
}

}  // namespace client::output_test
