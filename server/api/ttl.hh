// ttl.hh — a PUT's time to live, from `?ttl=SECONDS` and `Cache-Control: max-age=SECONDS`
// (docs/api.md, "Expiry").
//
// SECONDS is a whole number from 1 to 315,360,000 (ten years). Anything else is refused with a
// reason (400): 0, a sign, non-digits, empty, overflow, over ten years, or two values that
// disagree (a ttl and a max-age, or either given twice). Other query parameters and other
// Cache-Control directives are ignored.
#pragma once

#include <chrono>
#include <string_view>

namespace server {

inline constexpr long long kMaxTtlSeconds = 315'360'000;

struct TtlRequest {
  std::chrono::seconds ttl{0};  // 0: none given (the item never expires)
  std::string_view error;       // set: the request is refused with this reason
};

// query: the raw query (after '?'); cache_control: the request's Cache-Control header (its
// lines joined by ", ": request_parser.hh).
TtlRequest parse_ttl(std::string_view query, std::string_view cache_control);

}  // namespace server
