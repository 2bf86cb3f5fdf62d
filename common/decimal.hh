// decimal.hh — appending an unsigned integer's decimal digits to a string, the one way both
// binaries render counters into text they build by hand (cache_server's /metrics and board JSON,
// bench_client's request lines). std::to_chars: no locale, no allocation beyond the append.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace common {

inline void append_decimal(std::string& out, std::uint64_t n) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  (void)ec;  // 24 bytes hold any uint64
  out.append(digits, end);
}

}  // namespace common
