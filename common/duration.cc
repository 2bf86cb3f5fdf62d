// duration.cc — the duration flag syntax (see duration.hh).
#include "common/duration.hh"

#include <cstdint>
#include <limits>

namespace common {
namespace {

constexpr std::uint64_t kNanosPerMilli = 1'000'000;
constexpr std::uint64_t kNanosPerSecond = 1'000'000'000;
constexpr std::uint64_t kMaxNanos =
    static_cast<std::uint64_t>(std::numeric_limits<std::chrono::nanoseconds::rep>::max());

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text, BareUnit bare) {
  // The unit: nanoseconds per unit, and how many fraction digits that resolves (10^digits).
  std::uint64_t unit = 0;
  unsigned fraction_digits = 0;
  if (text.ends_with("ms")) {
    text.remove_suffix(2);
    unit = kNanosPerMilli;
    fraction_digits = 6;
  } else if (text.ends_with("s")) {
    text.remove_suffix(1);
    unit = kNanosPerSecond;
    fraction_digits = 9;
  } else if (bare == BareUnit::milliseconds) {
    unit = kNanosPerMilli;
    fraction_digits = 6;
  } else if (bare == BareUnit::seconds) {
    unit = kNanosPerSecond;
    fraction_digits = 9;
  } else {
    return std::nullopt;  // a unit is required
  }

  const std::size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() && fraction.empty()) return std::nullopt;  // "", ".", "ms"
  for (const char c : whole) {
    if (!is_digit(c)) return std::nullopt;
  }
  for (const char c : fraction) {
    if (!is_digit(c)) return std::nullopt;  // also a second '.'
  }

  std::uint64_t units = 0;  // the whole part, in units
  for (const char c : whole) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (units > (kMaxNanos / unit - digit) / 10) return std::nullopt;
    units = units * 10 + digit;
  }
  // The fraction, in nanoseconds: its first `fraction_digits` digits, rounded by the next one.
  std::uint64_t nanos = 0;
  for (unsigned i = 0; i < fraction_digits; ++i) {
    nanos = nanos * 10 + (i < fraction.size() ? static_cast<std::uint64_t>(fraction[i] - '0') : 0);
  }
  if (fraction.size() > fraction_digits && fraction[fraction_digits] >= '5') ++nanos;

  const std::uint64_t whole_nanos = units * unit;  // cannot overflow: checked above
  if (nanos > kMaxNanos - whole_nanos) return std::nullopt;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(whole_nanos + nanos));
}

std::string format_duration(std::chrono::nanoseconds d) {
  const auto n = static_cast<std::uint64_t>(d.count() < 0 ? 0 : d.count());
  if (n % kNanosPerSecond == 0) return std::to_string(n / kNanosPerSecond) + "s";
  if (n % kNanosPerMilli == 0) return std::to_string(n / kNanosPerMilli) + "ms";
  // Sub-millisecond part: milliseconds with up to six decimals, trailing zeros dropped.
  std::string fraction = std::to_string(n % kNanosPerMilli);
  fraction.insert(0, 6 - fraction.size(), '0');
  while (fraction.back() == '0') fraction.pop_back();
  return std::to_string(n / kNanosPerMilli) + "." + fraction + "ms";
}

}  // namespace common
