// duration.hh — the one duration syntax of every duration flag of both binaries (cache_server's
// --header-timeout, --idle-timeout, --flush-interval; bench_client's --timeout, -d/--duration,
// --warmup). It lives in common/ so the client does not depend on server/ to share it.
//
// Syntax: a non-negative decimal number, then a unit: "100ms", "2s", "0.5s", "1.25ms".
//   number = DIGITS ["." [DIGITS]] | "." DIGITS      (no sign, no exponent, no spaces)
//   unit   = "ms" | "s" | nothing (only where the flag gives bare numbers a meaning)
// A flag that accepted bare numbers before the units existed keeps their meaning (BareUnit);
// a new flag requires the unit (BareUnit::required).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace common {

// What a number without a unit means for one flag.
enum class BareUnit : std::uint8_t {
  required,      // no meaning: the unit is required ("100" is an error)
  milliseconds,  // "100" = 100 ms
  seconds,       // "100" = 100 s
};

// Parses `text` (see the syntax above) exactly, in integer arithmetic: "0.5s" is 500 ms and
// "0.1s" is exactly 100 ms. Digits past nanosecond precision are rounded half up. Returns nullopt
// for an empty string, a sign, spaces, exponents, "inf"/"nan", an unknown unit, a bare number
// when the unit is required, or a value that does not fit in std::chrono::nanoseconds (about 292
// years). Zero is accepted; ranges are the caller's to check.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text, BareUnit bare);

// The shortest text parse_duration reads back as `d` (d >= 0): "2s", "100ms", "1.5ms", "0s".
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace common
