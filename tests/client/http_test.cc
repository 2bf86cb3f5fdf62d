// The minimal HTTP/1.1 response parser: complete and partial responses, chunked bodies,
// Connection: close, HEAD, malformed input, and the hostile cases (chunk sizes near 2^64,
// repeated Content-Length, "close" only as a substring of a Connection token, 1xx interims).
#include <gtest/gtest.h>

#include <string>

#include "client/http.hh"

namespace client {
namespace {

// The parser's state across the calls on one stream: the response, the bytes consumed, and the
// scratch buffer of de-chunked bodies.
struct Parser {
  Response r;
  std::size_t consumed = 0;
  std::string scratch;
  ParseResult operator()(const std::string& data, bool head = false) {
    return parse_response(data, head, r, consumed, scratch);
  }
};

TEST(HttpParser, ContentLengthBody) {
  const std::string msg =
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 5\r\n\r\nhello";
  Parser p;
  const std::string buffered = msg + "HTTP/1.1";  // the start of a pipelined next response
  ASSERT_EQ(p(buffered), ParseResult::kComplete);
  EXPECT_EQ(p.r.status, 200);
  EXPECT_EQ(p.r.body, "hello");
  EXPECT_FALSE(p.r.close);
  EXPECT_EQ(p.consumed, msg.size());
}

TEST(HttpParser, EveryPrefixNeedsMore) {
  const std::string msg = "HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\n\r\nabc";
  Parser p;
  for (std::size_t n = 0; n < msg.size(); ++n)
    ASSERT_EQ(p(msg.substr(0, n)), ParseResult::kNeedMore) << n;
  ASSERT_EQ(p(msg), ParseResult::kComplete);
  EXPECT_EQ(p.r.status, 404);
}

TEST(HttpParser, NoBodyStatusesAndHead) {
  Parser p;
  ASSERT_EQ(p("HTTP/1.1 204 No Content\r\n\r\n"), ParseResult::kComplete);
  EXPECT_EQ(p.r.status, 204);
  EXPECT_TRUE(p.r.body.empty());
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
  ASSERT_EQ(p(head + "HTTP/1.1 ...", true), ParseResult::kComplete);
  EXPECT_EQ(p.consumed, head.size());
}

TEST(HttpParser, ChunkedBodyIsDecoded) {
  const std::string msg =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\n4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\n\r\n";
  Parser p;
  for (std::size_t n = 0; n < msg.size(); ++n)
    ASSERT_NE(p(msg.substr(0, n)), ParseResult::kComplete) << n;
  ASSERT_EQ(p(msg), ParseResult::kComplete);
  EXPECT_EQ(p.r.body, "Wikipedia");
  EXPECT_EQ(p.consumed, msg.size());
}

TEST(HttpParser, ConnectionCloseAndHttp10) {
  Parser p;
  ASSERT_EQ(p("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"),
            ParseResult::kComplete);
  EXPECT_TRUE(p.r.close);
  ASSERT_EQ(p("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"), ParseResult::kComplete);
  EXPECT_TRUE(p.r.close);
  ASSERT_EQ(p("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"),
            ParseResult::kComplete);
  EXPECT_FALSE(p.r.close);
}

TEST(HttpParser, MalformedInputIsRejected) {
  Parser p;
  for (const std::string& bad :
       {std::string("SSH-2.0-OpenSSH\r\n\r\n"), std::string("HTTP/1.1 2x0 OK\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\n\r\nbody-until-close"),
        std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
        std::string(70'000, 'x')})
    EXPECT_EQ(p(bad), ParseResult::kBad) << bad.substr(0, 80);
}

// r.body may view data or a scratch local to this call: check only status and close unless data
// outlives the call and the body is not chunked.
ParseResult parse_str(const std::string& data, Response& r) {
  std::size_t consumed = 0;
  std::string scratch;
  return parse_response(data, false, r, consumed, scratch);
}

TEST(HttpParser, ChunkSizesNearTwoToThe64AreRejected) {
  Response r;
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  // 2^64 - 1 and 2^64 - 2: with an unchecked size, size + 2 wraps to 1 or 0 and the parser would
  // read a "complete" chunk out of the next bytes.
  for (const char* size : {"ffffffffffffffff", "fffffffffffffffe", "FFFFFFFFFFFFFFFF",
                           "10000000000000000", "8000000000000000"})
    EXPECT_EQ(parse_str(head + size + "\r\nab\r\n0\r\n\r\n", r), ParseResult::kBad) << size;
  // Just above the body limit, and a sum of chunks above it.
  EXPECT_EQ(parse_str(head + "10000001\r\n", r), ParseResult::kBad);
  EXPECT_EQ(parse_str(head + "8000000\r\n" + std::string(0x8000000, 'a') + "\r\n8000001\r\n", r),
            ParseResult::kBad);
  // Leading zeros are only zeros.
  std::size_t consumed = 0;
  std::string scratch;
  const std::string zeros = head + "00000000000000000002\r\nab\r\n0\r\n\r\n";  // outlives r
  ASSERT_EQ(parse_response(zeros, false, r, consumed, scratch), ParseResult::kComplete);
  EXPECT_EQ(r.body, "ab");
  // Signs, prefixes and spaces inside are not hex digits.
  for (const char* size : {"-1", "+5", "0x5", "5 5", ""})
    EXPECT_EQ(parse_str(head + size + "\r\nhello\r\n0\r\n\r\n", r), ParseResult::kBad) << size;
}

TEST(HttpParser, DuplicateOrConflictingContentLengthIsRejected) {
  Response r;
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", r),
            ParseResult::kBad);
  // Even equal repeats, and the list form of them.
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc", r),
            ParseResult::kBad);
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc", r), ParseResult::kBad);
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc", r), ParseResult::kBad);
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", r), ParseResult::kBad);
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\nabc", r), ParseResult::kBad);
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551617\r\n\r\n", r),
            ParseResult::kBad);
  // Content-Length with Transfer-Encoding (a smuggling sign), and codings that cannot be framed.
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "3\r\nabc\r\n0\r\n\r\n",
                      r),
            ParseResult::kBad);
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", r),
            ParseResult::kBad);
  EXPECT_EQ(parse_str("HTTP/1.1 200 OK\r\nTransfer-Encoding: notchunked\r\n\r\n0\r\n\r\n", r),
            ParseResult::kBad);
  // Whitespace around a valid value is fine.
  const std::string spaced = "HTTP/1.1 200 OK\r\nContent-Length:  3 \r\n\r\nabc";
  ASSERT_EQ(parse_str(spaced, r), ParseResult::kComplete);
  EXPECT_EQ(r.body, "abc");  // a view into `spaced`
}

TEST(HttpParser, ConnectionCloseIsAWholeToken) {
  Response r;
  auto close_of = [&](const std::string& value) {
    const ParseResult p =
        parse_str("HTTP/1.1 200 OK\r\nConnection: " + value + "\r\nContent-Length: 0\r\n\r\n", r);
    EXPECT_EQ(p, ParseResult::kComplete) << value;
    return r.close;
  };
  EXPECT_FALSE(close_of("closed"));
  EXPECT_FALSE(close_of("xclose"));
  EXPECT_FALSE(close_of("keep-alive, enclosed"));
  EXPECT_FALSE(close_of("close-ish"));
  EXPECT_TRUE(close_of("close"));
  EXPECT_TRUE(close_of("CLOSE"));
  EXPECT_TRUE(close_of("keep-alive, close"));
  EXPECT_TRUE(close_of("upgrade ,  close ,"));
  // Two Connection fields combine.
  ASSERT_EQ(parse_str("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\n"
                      "Content-Length: 0\r\n\r\n",
                      r),
            ParseResult::kComplete);
  EXPECT_TRUE(r.close);
}

TEST(HttpParser, GarbageStatusLinesAndHeaderLinesAreRejected) {
  Response r;
  for (const char* bad : {"HTTP/1.1 200OK\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.1 -20 OK\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.1 099 OK\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
                          "http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.1 200 OK\r\n folded: x\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nX: a\nContent-Length: 5\r\nContent-Length: 0\r\n\r\n",
                          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"})
    EXPECT_EQ(parse_str(bad, r), ParseResult::kBad) << bad;
}

TEST(HttpParser, InterimResponsesAreSkipped) {
  Parser p;
  const std::string msg =
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  for (std::size_t n = 0; n < msg.size(); ++n)
    ASSERT_EQ(p(msg.substr(0, n)), ParseResult::kNeedMore) << n;
  const std::string with_next = msg + "HTTP/1.1";  // p.r.body views into it: it must outlive p
  ASSERT_EQ(p(with_next), ParseResult::kComplete);
  EXPECT_EQ(p.r.status, 200);
  EXPECT_EQ(p.r.body, "ok");
  EXPECT_EQ(p.consumed, msg.size());
  // An endless stream of interims is refused, not buffered forever.
  std::string many;
  for (int i = 0; i < 20; ++i) many += "HTTP/1.1 100 Continue\r\n\r\n";
  EXPECT_EQ(p(many), ParseResult::kBad);
}

TEST(HttpParser, BoundsHoldWhileWaitingForMore) {
  Response r;
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  // A chunk-size line that never ends, and a trailer that never ends.
  EXPECT_EQ(parse_str(head + std::string(2000, '0'), r), ParseResult::kBad);
  EXPECT_EQ(parse_str(head + "0\r\nX: " + std::string(70'000, 'y'), r), ParseResult::kBad);
  EXPECT_EQ(parse_str(head + "0\r\nX: y", r), ParseResult::kNeedMore);
}

TEST(HttpParser, ParseErrorsAreReportedAsParse) {
  EXPECT_STREQ(io_result_name(IoResult::kBadResponse), "parse");
}

}  // namespace
}  // namespace client
