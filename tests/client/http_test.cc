// The minimal HTTP/1.1 response parser: complete and partial responses, chunked bodies,
// Connection: close, HEAD, and malformed input.
#include <gtest/gtest.h>

#include <string>

#include "http.hh"

namespace bench {
namespace {

ParseResult parse(const std::string& data, Response& r, std::size_t& consumed, std::string& scratch,
                  bool head = false) {
  return parse_response(data, head, r, consumed, scratch);
}

TEST(HttpParser, ContentLengthBody) {
  const std::string msg =
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 5\r\n\r\nhello";
  Response r;
  std::size_t consumed = 0;
  std::string scratch;
  const std::string buffered = msg + "HTTP/1.1";  // the start of a pipelined next response
  ASSERT_EQ(parse(buffered, r, consumed, scratch), ParseResult::kComplete);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  EXPECT_FALSE(r.close);
  EXPECT_EQ(consumed, msg.size());
}

TEST(HttpParser, EveryPrefixNeedsMore) {
  const std::string msg = "HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\n\r\nabc";
  Response r;
  std::size_t consumed = 0;
  std::string scratch;
  for (std::size_t n = 0; n < msg.size(); ++n)
    ASSERT_EQ(parse(msg.substr(0, n), r, consumed, scratch), ParseResult::kNeedMore) << n;
  ASSERT_EQ(parse(msg, r, consumed, scratch), ParseResult::kComplete);
  EXPECT_EQ(r.status, 404);
}

TEST(HttpParser, NoBodyStatusesAndHead) {
  Response r;
  std::size_t consumed = 0;
  std::string scratch;
  ASSERT_EQ(parse("HTTP/1.1 204 No Content\r\n\r\n", r, consumed, scratch), ParseResult::kComplete);
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(r.body.empty());
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
  ASSERT_EQ(parse(head + "HTTP/1.1 ...", r, consumed, scratch, true), ParseResult::kComplete);
  EXPECT_EQ(consumed, head.size());
}

TEST(HttpParser, ChunkedBodyIsDecoded) {
  const std::string msg =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\n4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\n";
  Response r;
  std::size_t consumed = 0;
  std::string scratch;
  for (std::size_t n = 0; n < msg.size(); ++n)
    ASSERT_NE(parse(msg.substr(0, n), r, consumed, scratch), ParseResult::kComplete) << n;
  ASSERT_EQ(parse(msg, r, consumed, scratch), ParseResult::kComplete);
  EXPECT_EQ(r.body, "Wikipedia");
  EXPECT_EQ(consumed, msg.size());
}

TEST(HttpParser, ConnectionCloseAndHttp10) {
  Response r;
  std::size_t consumed = 0;
  std::string scratch;
  ASSERT_EQ(parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", r, consumed,
                  scratch),
            ParseResult::kComplete);
  EXPECT_TRUE(r.close);
  ASSERT_EQ(parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", r, consumed, scratch),
            ParseResult::kComplete);
  EXPECT_TRUE(r.close);
  ASSERT_EQ(parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", r,
                  consumed, scratch),
            ParseResult::kComplete);
  EXPECT_FALSE(r.close);
}

TEST(HttpParser, MalformedInputIsRejected) {
  Response r;
  std::size_t consumed = 0;
  std::string scratch;
  EXPECT_EQ(parse("SSH-2.0-OpenSSH\r\n\r\n", r, consumed, scratch), ParseResult::kBad);
  EXPECT_EQ(parse("HTTP/1.1 2x0 OK\r\n\r\n", r, consumed, scratch), ParseResult::kBad);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n", r, consumed, scratch),
            ParseResult::kBad);
  EXPECT_EQ(
      parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n", r, consumed, scratch),
      ParseResult::kBad);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\n\r\nbody-until-close", r, consumed, scratch),
            ParseResult::kBad);
  EXPECT_EQ(
      parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", r, consumed, scratch),
      ParseResult::kBad);
  EXPECT_EQ(parse(std::string(70'000, 'x'), r, consumed, scratch), ParseResult::kBad);
}

}  // namespace
}  // namespace bench
