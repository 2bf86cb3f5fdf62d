// generate.hh — synthetic traces: Zipf(alpha) popularity over K keys, optionally with a one-pass
// scan mixed in. Shared by trace_gen, the tests and the cross-check, so every consumer replays
// the very same requests for a given spec and seed.
#pragma once

#include <cstdint>
#include <vector>

namespace traces {

struct ZipfSpec {
  std::uint64_t keys = 0;      // Zipf over object ids 0..keys-1, id 0 the most popular
  double alpha = 0.99;         // the exponent: P(rank r) ~ 1 / (r+1)^alpha; >= 0
  std::uint64_t requests = 0;  // Zipf requests
  std::uint64_t seed = 1;
  // A one-pass scan: `scan_keys` ids keys, keys+1, ... each requested once, one after each Zipf
  // request from Zipf request number `scan_start` on (as a batch job or crawler would). The trace
  // then has requests + scan_keys entries.
  std::uint64_t scan_keys = 0;
  std::uint64_t scan_start = 0;
};

// The trace of `spec`; the same spec gives the same ids. Throws std::invalid_argument for zero
// keys or requests, or a negative or non-finite alpha.
std::vector<std::uint64_t> generate_zipf(const ZipfSpec& spec);

}  // namespace traces
