// json_escape_test.cc — unit tests of the JSON string escaping (surrogateescape for bad UTF-8).
#include "server/transport/json_escape.hh"

#include <gtest/gtest.h>

#include <string>

namespace server {
namespace {

std::string esc(std::string_view in) {
  std::string out;
  json_escape_append(in, out);
  EXPECT_EQ(out.size(), json_escaped_size(in)) << out;
  return out;
}

TEST(JsonEscape, AsciiPassesThrough) {
  EXPECT_EQ(esc("hello world/~"), "hello world/~");
}

TEST(JsonEscape, QuotesBackslashAndControls) {
  EXPECT_EQ(esc("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(esc("\n\r\t\b\f"), "\\n\\r\\t\\b\\f");
  EXPECT_EQ(esc(std::string("\0\x01\x1f", 3)), "\\u0000\\u0001\\u001f");
  EXPECT_EQ(esc("\x7f"), "\x7f");
}

TEST(JsonEscape, ValidUtf8PassesThrough) {
  const std::string s = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF";
  EXPECT_EQ(esc(s), s);
}

TEST(JsonEscape, InvalidBytesBecomeLoneSurrogates) {
  EXPECT_EQ(esc("\xff"), "\\udcff");
  EXPECT_EQ(esc("\x80"), "\\udc80");
  EXPECT_EQ(esc("a\xC3"), "a\\udcc3");                                 // truncated sequence
  EXPECT_EQ(esc("\xC0\xAF"), "\\udcc0\\udcaf");                        // overlong '/'
  EXPECT_EQ(esc("\xE0\x80\xAF"), "\\udce0\\udc80\\udcaf");             // overlong 3-byte
  EXPECT_EQ(esc("\xED\xA0\x80"), "\\udced\\udca0\\udc80");             // encoded surrogate U+D800
  EXPECT_EQ(esc("\xF4\x90\x80\x80"), "\\udcf4\\udc90\\udc80\\udc80");  // > U+10FFFF
  EXPECT_EQ(esc("\xE2\x82"
                "A"),
            "\\udce2\\udc82A");
}

TEST(JsonEscape, EveryByteValueHasAnExactSize) {
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    esc(one);  // checks size() == json_escaped_size()
  }
}

}  // namespace
}  // namespace server
