// etag_test.cc — Etags::parse (etag.hh) on its own: which tags it keeps as this process's
// versions, that a tag naming a version no ETag can carry (over 47 bits) is kept as none (so it
// can never stand for Preconditions::kUnknowable, the tier's "exists, version unknowable"), and
// what If-Match / If-None-Match then decide with it (common/preconditions.hh).
#include "server/transport/etag.hh"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/preconditions.hh"

namespace server {
namespace {

constexpr std::uint32_t kBoot = 0x1234abcd;
// The largest version an ETag carries (47 bits, as the cache's versions: cache/entry.hh).
constexpr std::uint64_t kLargestVersion = 0x7fffffffffff;

std::string tag(std::string_view version_hex) {
  return "\"1234abcd-" + std::string(version_hex) + "\"";
}

TEST(EtagParse, KeepsThisProcesssTagsUpToTheLargestVersion) {
  const Etags etags(kBoot);
  EtagList list;
  ASSERT_TRUE(etags.parse(tag("1") + ", W/" + tag("7fffffffffff"), list));
  ASSERT_EQ(list.tags.size(), 2u);
  EXPECT_EQ(list.tags[0].version, 1u);
  EXPECT_FALSE(list.tags[0].weak);
  EXPECT_EQ(list.tags[1].version, kLargestVersion);
  EXPECT_TRUE(list.tags[1].weak);
  // What format() renders parses back to the same version.
  EtagBuffer buf;
  ASSERT_TRUE(etags.parse(etags.format(kLargestVersion, buf), list));
  ASSERT_EQ(list.tags.size(), 1u);
  EXPECT_EQ(list.tags[0].version, kLargestVersion);
}

TEST(EtagParse, AVersionOverFortySevenBitsIsWellFormedButNamesNothing) {
  const Etags etags(kBoot);
  for (const char* hex : {"800000000000", "ffffffffffff", "7fffffffffffffff", "ffffffffffffffff",
                          "0000ffffffffffffffff"}) {
    EtagList list;
    EXPECT_TRUE(etags.parse(tag(hex), list)) << hex;  // not a syntax error: no 400
    EXPECT_TRUE(list.tags.empty()) << hex;
    EXPECT_FALSE(list.any) << hex;
  }
  // Kept beside it: the tags that do name a version.
  EtagList list;
  ASSERT_TRUE(etags.parse(tag("ffffffffffffffff") + ", " + tag("2a"), list));
  ASSERT_EQ(list.tags.size(), 1u);
  EXPECT_EQ(list.tags[0].version, 0x2au);
}

TEST(EtagParse, AForgedTagNeverMatchesTheUnknowableVersion) {
  const Etags etags(kBoot);
  const std::string forged = tag("ffffffffffffffff");  // kUnknowable's hex
  Preconditions if_match;
  ASSERT_EQ(if_match.parse(etags, true, forged, false, {}), "");
  // A key the store holds but the cache does not: If-Match with the forged tag fails (412).
  EXPECT_FALSE(if_match.allow(&Preconditions::kUnknowable));
  EXPECT_FALSE(if_match.needs_existence());  // no store read is needed to say so
  const std::uint64_t cached = 5;
  EXPECT_FALSE(if_match.allow(&cached));
  EXPECT_FALSE(if_match.allow(nullptr));

  // If-None-Match with it: as any tag that matches nothing, the write proceeds.
  Preconditions if_none_match;
  ASSERT_EQ(if_none_match.parse(etags, false, {}, true, forged), "");
  EXPECT_TRUE(if_none_match.allow(&Preconditions::kUnknowable));
  EXPECT_TRUE(if_none_match.allow(&cached));
  EXPECT_TRUE(if_none_match.allow(nullptr));
}

TEST(EtagParse, OtherProcessesTagsAndMalformedOnes) {
  const Etags etags(kBoot);
  EtagList list;
  EXPECT_TRUE(etags.parse("\"00000000-1\"", list));  // another boot: matches nothing
  EXPECT_TRUE(list.tags.empty());
  EXPECT_TRUE(etags.parse("*", list));
  EXPECT_TRUE(list.any);
  EXPECT_FALSE(etags.parse("nope", list));
  EXPECT_FALSE(etags.parse("\"a\"b\"", list));
  EXPECT_FALSE(etags.parse(",", list));  // no tag at all
}

}  // namespace
}  // namespace server
