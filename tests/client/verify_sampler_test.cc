// --verify's rule (verify_sampler.hh): the first checkable answer of every connection is checked
// in full, then one in N; all and off; a re-opened connection starts again; the flag's values.
#include <gtest/gtest.h>

#include <vector>

#include "client/verify_sampler.hh"

namespace client {
namespace {

// The indices (0-based) of the first `answers` answers the sampler checks in full.
std::vector<unsigned> sampled(VerifySampler& s, unsigned answers) {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < answers; ++i) {
    if (s.next_sampled()) out.push_back(i);
    s.advance();
  }
  return out;
}

TEST(VerifySampler, DefaultChecksTheFirstAnswerThenOneInSixtyFour) {
  VerifySampler s;
  EXPECT_EQ(sampled(s, 200), (std::vector<unsigned>{0, 64, 128, 192}));
}

TEST(VerifySampler, OneInNAfterTheFirst) {
  VerifySampler s(VerifyPolicy{5});
  EXPECT_EQ(sampled(s, 12), (std::vector<unsigned>{0, 5, 10}));
}

TEST(VerifySampler, ReopenedConnectionChecksItsFirstAnswer) {
  VerifySampler s(VerifyPolicy{64});
  sampled(s, 10);  // answers 1..9 of the old connection were not checked
  EXPECT_FALSE(s.next_sampled());
  s.restart();
  EXPECT_TRUE(s.next_sampled());
  EXPECT_EQ(sampled(s, 65), (std::vector<unsigned>{0, 64}));
}

TEST(VerifySampler, AllChecksEveryAnswerAndOffNone) {
  VerifySampler all(VerifyPolicy{1});
  EXPECT_EQ(sampled(all, 4), (std::vector<unsigned>{0, 1, 2, 3}));
  VerifySampler off(VerifyPolicy{0});
  EXPECT_TRUE(sampled(off, 100).empty());
  off.restart();
  EXPECT_FALSE(off.next_sampled());  // off: not even a connection's first answer
}

TEST(VerifySampler, AskingDoesNotAdvance) {
  VerifySampler s(VerifyPolicy{3});
  EXPECT_TRUE(s.next_sampled());
  EXPECT_TRUE(s.next_sampled());  // the reader asks at the head, the checker again at the end
  s.advance();
  EXPECT_FALSE(s.next_sampled());
}

TEST(VerifyPolicy, ParsesAllOffAndCounts) {
  EXPECT_EQ(VerifyPolicy{}.every, 64u);
  EXPECT_EQ(VerifyPolicy::parse("all")->every, 1u);
  EXPECT_EQ(VerifyPolicy::parse("off")->every, 0u);
  EXPECT_EQ(VerifyPolicy::parse("1")->every, 1u);
  EXPECT_EQ(VerifyPolicy::parse("64")->every, 64u);
  EXPECT_EQ(VerifyPolicy::parse("1000000000")->every, 1'000'000'000u);
  EXPECT_EQ(VerifyPolicy{64}.text(), "64");
  EXPECT_EQ(VerifyPolicy{1}.text(), "all");
  EXPECT_EQ(VerifyPolicy{0}.text(), "off");
}

TEST(VerifyPolicy, RefusesZeroWordsSignsAndOverflow) {
  for (const char* bad : {"0", "abc", "", "-1", "+5", "5x", " 5", "ALL", "none", "1000000001",
                          "99999999999999999999"})
    EXPECT_FALSE(VerifyPolicy::parse(bad).has_value()) << bad;
}

}  // namespace
}  // namespace client
