// percent_decode_test.cc — unit tests of path-segment percent-decoding.
#include "server/api/percent_decode.hh"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace server {
namespace {

std::string decode_ok(std::string_view in) {
  std::array<char, 250> out;
  const DecodeResult r = percent_decode(in, out);
  EXPECT_EQ(r.status, DecodeStatus::ok) << in;
  return std::string(out.data(), r.size);
}

DecodeStatus decode_status(std::string_view in, std::size_t capacity = 250) {
  std::array<char, 512> out;
  return percent_decode(in, std::span<char>(out.data(), capacity)).status;
}

TEST(PercentDecode, PlainBytesPassThrough) {
  EXPECT_EQ(decode_ok("abc-_.~+"), "abc-_.~+");
}

TEST(PercentDecode, DecodesHexEitherCase) {
  EXPECT_EQ(decode_ok("a%2Fb"), "a/b");
  EXPECT_EQ(decode_ok("a%2fb"), "a/b");
  EXPECT_EQ(decode_ok("%E2%82%AC"), "\xE2\x82\xAC");
  EXPECT_EQ(decode_ok("%00%ff"), std::string("\0\xff", 2));
  EXPECT_EQ(decode_ok("%25"), "%");
}

TEST(PercentDecode, EmptyIsOkAndEmpty) {
  EXPECT_EQ(decode_ok(""), "");
}

TEST(PercentDecode, RejectsTruncatedAndNonHexEscapes) {
  EXPECT_EQ(decode_status("%"), DecodeStatus::bad_encoding);
  EXPECT_EQ(decode_status("abc%"), DecodeStatus::bad_encoding);
  EXPECT_EQ(decode_status("abc%4"), DecodeStatus::bad_encoding);
  EXPECT_EQ(decode_status("%G0"), DecodeStatus::bad_encoding);
  EXPECT_EQ(decode_status("%0G"), DecodeStatus::bad_encoding);
  EXPECT_EQ(decode_status("%%41"), DecodeStatus::bad_encoding);
}

TEST(PercentDecode, LengthLimitAppliesToDecodedBytes) {
  EXPECT_EQ(decode_status(std::string(250, 'k')), DecodeStatus::ok);
  EXPECT_EQ(decode_status(std::string(251, 'k')), DecodeStatus::too_long);
  std::string encoded;
  for (int i = 0; i < 250; ++i) encoded += "%41";  // 750 encoded bytes, 250 decoded
  EXPECT_EQ(decode_ok(encoded), std::string(250, 'A'));
  EXPECT_EQ(decode_status(encoded + "%41"), DecodeStatus::too_long);
}

TEST(PercentDecode, ZeroCapacityAcceptsOnlyEmpty) {
  EXPECT_EQ(decode_status("", 0), DecodeStatus::ok);
  EXPECT_EQ(decode_status("a", 0), DecodeStatus::too_long);
}

}  // namespace
}  // namespace server
