// score_test.cc — the score text rules of docs/api.md ("Boards"): what a body may hold, and the
// JSON form (shortest round trip, integers without ".0").
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "boards/score.hh"

namespace {

using boards::format_score;
using boards::parse_score;

TEST(ParseScore, AcceptsDecimalText) {
  EXPECT_EQ(parse_score("1234"), 1234.0);
  EXPECT_EQ(parse_score("-5"), -5.0);
  EXPECT_EQ(parse_score("+2"), 2.0);
  EXPECT_EQ(parse_score("12.5"), 12.5);
  EXPECT_EQ(parse_score("1e3"), 1000.0);
  EXPECT_EQ(parse_score("1E-2"), 0.01);
  EXPECT_EQ(parse_score(".5"), 0.5);
  EXPECT_EQ(parse_score("5."), 5.0);
  EXPECT_EQ(parse_score("1.7976931348623157e308"), std::numeric_limits<double>::max());
}

TEST(ParseScore, TrimsAsciiWhitespace) {
  EXPECT_EQ(parse_score("  42\n"), 42.0);
  EXPECT_EQ(parse_score("\t-1.5\r\n"), -1.5);
}

TEST(ParseScore, NegativeZeroIsZero) {
  const auto z = parse_score("-0");
  ASSERT_TRUE(z);
  EXPECT_EQ(*z, 0.0);
  EXPECT_FALSE(std::signbit(*z));
}

TEST(ParseScore, RefusesEverythingElse) {
  for (const char* bad : {"",    "   ",  "nan", "NaN", "inf",   "-inf",   "infinity", "12abc",
                          "abc", "0x10", "1e",  "e5",  "--1",   "+-1",    "++1",      "+",
                          "-",   ".",    "1 2", "1,5", "1e999", "-1e999", "1e-999",   "١"}) {
    std::string why;
    EXPECT_FALSE(parse_score(bad, &why)) << "'" << bad << "'";
    EXPECT_FALSE(why.empty()) << "'" << bad << "'";
  }
  EXPECT_FALSE(parse_score(std::string_view("1\0", 2)));  // an embedded NUL is a trailing byte
}

TEST(FormatScore, ShortestRoundTrip) {
  EXPECT_EQ(format_score(1234), "1234");
  EXPECT_EQ(format_score(-5), "-5");
  EXPECT_EQ(format_score(12.5), "12.5");
  EXPECT_EQ(format_score(0.1), "0.1");
  EXPECT_EQ(format_score(-0.0), "0");
  EXPECT_EQ(format_score(1e21), "1e+21");
  EXPECT_EQ(format_score(1e300), "1e+300");
}

TEST(FormatScore, ReadsBackExactly) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> bits;
  for (int i = 0; i < 100000; ++i) {
    double d;
    const std::uint64_t b = bits(rng);
    std::memcpy(&d, &b, sizeof d);
    if (!std::isfinite(d)) continue;
    const auto back = parse_score(format_score(d));
    // Denormals below what from_chars reads without a range error are the one exception.
    if (std::fpclassify(d) == FP_SUBNORMAL) continue;
    ASSERT_TRUE(back) << format_score(d);
    EXPECT_EQ(*back, d == 0 ? 0.0 : d) << format_score(d);
  }
}

}  // namespace
