// duration_test.cc — the duration syntax every duration flag of both binaries shares
// (common/duration.hh): units, bare numbers per flag, exact decimals, rejections, round trips.
#include "common/duration.hh"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <random>
#include <string_view>
#include <utility>

namespace common {
namespace {
using namespace std::chrono_literals;
using std::chrono::nanoseconds;

std::optional<nanoseconds> parse(std::string_view text, BareUnit bare = BareUnit::required) {
  return parse_duration(text, bare);
}

// A row of a table: `text` parsed for a flag whose bare numbers mean `bare` gives `want`
// (nullopt: refused).
struct Case {
  std::string_view text;
  std::optional<nanoseconds> want;
  BareUnit bare = BareUnit::required;
};

void expect_parses(std::initializer_list<Case> cases) {
  for (const Case& c : cases) EXPECT_EQ(parse(c.text, c.bare), c.want) << '"' << c.text << '"';
}

TEST(ParseDuration, Units) {
  expect_parses(
      {{"100ms", 100ms}, {"2s", 2s}, {"0s", 0s}, {"0ms", 0ms}, {"007ms", 7ms}, {"86400s", 24h}});
}

TEST(ParseDuration, DecimalsAreExact) {
  expect_parses({{"0.5s", 500ms},
                 {".5s", 500ms},
                 {"5.s", 5s},
                 {"0.1s", 100ms},  // no floating-point 99.999... ms
                 {"0.3s", 300ms},
                 {"1.25ms", 1250us},
                 {"2.000001s", 2000001us},
                 {"0.000000001s", 1ns},
                 {"0.000001ms", 1ns},
                 // Past nanosecond precision: rounded half up.
                 {"0.0000000014s", 1ns},
                 {"0.0000000015s", 2ns},
                 {"0.0000004ms", 0ns},
                 {"0.0000005ms", 1ns},
                 {"1.99999999999999999999s", 2s}});
}

TEST(ParseDuration, BareNumbersTakeTheFlagsUnit) {
  expect_parses({{"10", 10s, BareUnit::seconds},
                 {"0.25", 250ms, BareUnit::seconds},
                 {"5000", 5000ms, BareUnit::milliseconds},
                 {"1.5", 1500us, BareUnit::milliseconds},
                 // A unit always wins over the bare meaning.
                 {"10ms", 10ms, BareUnit::seconds},
                 {"2s", 2s, BareUnit::milliseconds},
                 // A flag without a bare meaning requires the unit.
                 {"10", std::nullopt, BareUnit::required},
                 {"0", std::nullopt, BareUnit::required}});
}

TEST(ParseDuration, RejectsGarbage) {
  for (const BareUnit bare : {BareUnit::required, BareUnit::milliseconds, BareUnit::seconds}) {
    for (const char* text :
         {"",     "s",     "ms",     ".",    ".s",  ".ms",  "-1s",   "-1",    "-0s",  "+1s",
          "+1",   " 1s",   "1s ",    "1 s",  "1e3", "1e3s", "1E3ms", "inf",   "infs", "nan",
          "nans", "0x10s", "1.2.3s", "1,5s", "1m",  "2m",   "1h",    "1us",   "1ns",  "1S",
          "1MS",  "1sms",  "1mss",   "s1",   "ms1", "abc",  "1..s",  "0x1p3s"}) {
      EXPECT_EQ(parse(text, bare), std::nullopt) << '"' << text << '"';
    }
  }
}

TEST(ParseDuration, RejectsOverflow) {
  constexpr auto kMax = std::numeric_limits<nanoseconds::rep>::max();  // 9223372036.854775807 s
  expect_parses({{"9223372036.854775807s", nanoseconds(kMax)},
                 {"9223372036854.775807ms", nanoseconds(kMax)},
                 {"9223372036.854775808s", std::nullopt},
                 {"9223372037s", std::nullopt},
                 {"9223372036.8547758075s", std::nullopt},  // rounds up past the maximum
                 {"99999999999999999999s", std::nullopt},
                 {"18446744073709551616ms", std::nullopt},  // 2^64: would wrap a uint64
                 {"100000000000000000000000000000", std::nullopt, BareUnit::seconds}});
}

TEST(FormatDuration, ShortestForm) {
  for (const auto& [d, text] :
       std::initializer_list<std::pair<nanoseconds, std::string_view>>{{0s, "0s"},
                                                                       {2s, "2s"},
                                                                       {500ms, "500ms"},
                                                                       {1500ms, "1500ms"},
                                                                       {1250us, "1.25ms"},
                                                                       {1ns, "0.000001ms"}}) {
    EXPECT_EQ(format_duration(d), text) << d.count() << " ns";
  }
}

TEST(FormatDuration, RoundTripsThroughParse) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> any(0, std::numeric_limits<std::int64_t>::max());
  std::uniform_int_distribution<std::int64_t> small(0, 10'000'000'000);
  for (int i = 0; i < 20'000; ++i) {
    const nanoseconds d(i % 2 == 0 ? any(rng) : small(rng));
    const std::string text = format_duration(d);
    EXPECT_EQ(parse(text), d) << text;
  }
  for (const nanoseconds d :
       {nanoseconds(0s), nanoseconds(1ns), nanoseconds(999'999ns), nanoseconds(1ms),
        nanoseconds(1s), nanoseconds(std::numeric_limits<std::int64_t>::max())}) {
    EXPECT_EQ(parse(format_duration(d)), d) << format_duration(d);
  }
}

}  // namespace
}  // namespace common
