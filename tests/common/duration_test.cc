// duration_test.cc — the duration syntax every duration flag of both binaries shares
// (common/duration.hh): units, bare numbers per flag, exact decimals, rejections, round trips.
#include "common/duration.hh"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <random>

namespace common {
namespace {
using namespace std::chrono_literals;
using std::chrono::nanoseconds;

std::optional<nanoseconds> parse(std::string_view text, BareUnit bare = BareUnit::required) {
  return parse_duration(text, bare);
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(parse("100ms"), 100ms);
  EXPECT_EQ(parse("2s"), 2s);
  EXPECT_EQ(parse("0s"), 0s);
  EXPECT_EQ(parse("0ms"), 0ms);
  EXPECT_EQ(parse("007ms"), 7ms);
  EXPECT_EQ(parse("86400s"), 24h);
}

TEST(ParseDuration, DecimalsAreExact) {
  EXPECT_EQ(parse("0.5s"), 500ms);
  EXPECT_EQ(parse(".5s"), 500ms);
  EXPECT_EQ(parse("5.s"), 5s);
  EXPECT_EQ(parse("0.1s"), 100ms);  // no floating-point 99.999... ms
  EXPECT_EQ(parse("0.3s"), 300ms);
  EXPECT_EQ(parse("1.25ms"), 1250us);
  EXPECT_EQ(parse("2.000001s"), 2000001us);
  EXPECT_EQ(parse("0.000000001s"), 1ns);
  EXPECT_EQ(parse("0.000001ms"), 1ns);
  // Past nanosecond precision: rounded half up.
  EXPECT_EQ(parse("0.0000000014s"), 1ns);
  EXPECT_EQ(parse("0.0000000015s"), 2ns);
  EXPECT_EQ(parse("0.0000004ms"), 0ns);
  EXPECT_EQ(parse("0.0000005ms"), 1ns);
  EXPECT_EQ(parse("1.99999999999999999999s"), 2s);
}

TEST(ParseDuration, BareNumbersTakeTheFlagsUnit) {
  EXPECT_EQ(parse("10", BareUnit::seconds), 10s);
  EXPECT_EQ(parse("0.25", BareUnit::seconds), 250ms);
  EXPECT_EQ(parse("5000", BareUnit::milliseconds), 5000ms);
  EXPECT_EQ(parse("1.5", BareUnit::milliseconds), 1500us);
  // A unit always wins over the bare meaning.
  EXPECT_EQ(parse("10ms", BareUnit::seconds), 10ms);
  EXPECT_EQ(parse("2s", BareUnit::milliseconds), 2s);
  // A flag without a bare meaning requires the unit.
  EXPECT_EQ(parse("10", BareUnit::required), std::nullopt);
  EXPECT_EQ(parse("0", BareUnit::required), std::nullopt);
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
  EXPECT_EQ(parse("9223372036.854775807s"), nanoseconds(kMax));
  EXPECT_EQ(parse("9223372036854.775807ms"), nanoseconds(kMax));
  EXPECT_EQ(parse("9223372036.854775808s"), std::nullopt);
  EXPECT_EQ(parse("9223372037s"), std::nullopt);
  EXPECT_EQ(parse("9223372036.8547758075s"), std::nullopt);  // rounds up past the maximum
  EXPECT_EQ(parse("99999999999999999999s"), std::nullopt);
  EXPECT_EQ(parse("18446744073709551616ms"), std::nullopt);  // 2^64: would wrap a uint64
  EXPECT_EQ(parse("100000000000000000000000000000", BareUnit::seconds), std::nullopt);
}

TEST(FormatDuration, ShortestForm) {
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(2s), "2s");
  EXPECT_EQ(format_duration(500ms), "500ms");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(1250us), "1.25ms");
  EXPECT_EQ(format_duration(1ns), "0.000001ms");
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
