// request_parser_test.cc — RequestParser (request_parser.hh) on its own: what it keeps of a
// request, that a header sent twice keeps the first (Cache-Control's lines are joined), that what
// it keeps survives the input it came from (values split across put() calls, the input overwritten
// in between), that bodies (Content-Length and chunked) land in the request's reused storage, and
// that a second request on the same storage starts clean.
#include "server/transport/request_parser.hh"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <string>
#include <string_view>

namespace server {
namespace {
namespace http = boost::beast::http;

// Feeds `text` to the parser in pieces of at most `step` bytes, the way the engine does: the
// bytes a put() leaves are kept and more are appended; after each put() the request is told its
// input is going (Request::own(), as consume() does before it returns), then the bytes consumed
// are overwritten with '#' and dropped, so anything still kept as a view into them shows it.
// Returns the last error (need_more when the input ran out first).
boost::beast::error_code feed(RequestParser& parser, Request& request, std::string_view text,
                              std::size_t step = std::string_view::npos) {
  std::string pending;
  boost::beast::error_code ec;
  while (!parser.is_done()) {
    if (!text.empty()) {
      const std::size_t n = std::min(step, text.size());
      pending.append(text.substr(0, n));
      text.remove_prefix(n);
    } else if (pending.empty() || ec == http::error::need_more) {
      break;
    }
    ec = {};
    const std::size_t used = parser.put(boost::asio::buffer(pending), ec);
    request.own();
    pending.replace(0, used, used, '#');
    pending.erase(0, used);
    if (ec && ec != http::error::need_more) return ec;
    if (used == 0 && !ec && text.empty()) break;
  }
  return ec;
}

// One request, whole, into `request` (a parser of its own over it, as the engine makes one per
// request), fed as feed() does; the error, if any.
boost::beast::error_code parse(Request& request, std::string_view text,
                               std::size_t step = std::string_view::npos) {
  RequestParser parser(request);
  return feed(parser, request, text, step);
}

TEST(RequestParser, KeepsTheRequestLineAndTheHeadersTheServerReads) {
  Request r;
  RequestParser p(r);
  const auto ec = feed(p, r,
                       "GET /key/k?x=1 HTTP/1.1\r\nHost: h\r\nAccept: application/json\r\n"
                       "If-Match: \"a\"\r\nIf-None-Match: \"b\"\r\nCache-Control: max-age=5\r\n"
                       "Authorization: Bearer t\r\nX-Other: y\r\n\r\n");
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(p.is_done());
  EXPECT_EQ(r.method, http::verb::get);
  EXPECT_EQ(r.version, 11u);
  EXPECT_EQ(r.target, "/key/k?x=1");
  EXPECT_EQ(r.accept.value(), "application/json");
  EXPECT_EQ(r.if_match.value(), "\"a\"");
  EXPECT_EQ(r.if_none_match.value(), "\"b\"");
  EXPECT_EQ(r.cache_control.value(), "max-age=5");
  EXPECT_EQ(r.authorization.value(), "Bearer t");
  EXPECT_TRUE(p.keep_alive());
  EXPECT_EQ(r.transfer_encodings, 0u);
  EXPECT_FALSE(r.has_expect);
  EXPECT_TRUE(r.body.empty());
}

TEST(RequestParser, AHeaderSentTwiceKeepsTheFirst) {
  Request r;
  ASSERT_FALSE(parse(r,
                     "PUT /key/k HTTP/1.1\r\nIf-None-Match: *\r\nIf-Match: \"1\"\r\n"
                     "If-None-Match: \"2\"\r\nIf-Match: \"3\"\r\nCache-Control: max-age=1\r\n"
                     "Cache-Control: max-age=2\r\nAccept: a/1\r\nAccept: a/2\r\n"
                     "Authorization: one\r\nAuthorization: two\r\n"
                     "Expect: 100-continue\r\nExpect: nothing\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(r.if_none_match.value(), "*");
  EXPECT_EQ(r.if_match.value(), "\"1\"");
  EXPECT_EQ(r.cache_control.value(), "max-age=1, max-age=2");  // a list: joined (below)
  EXPECT_EQ(r.accept.value(), "a/1");
  EXPECT_EQ(r.authorization.value(), "one");
  EXPECT_TRUE(r.expect_continue);
  // An empty value is still a header that was sent.
  Request e;
  ASSERT_FALSE(parse(e, "GET /key/k HTTP/1.1\r\nIf-None-Match:\r\nIf-None-Match: \"x\"\r\n\r\n"));
  EXPECT_TRUE(e.if_none_match.present());
  EXPECT_EQ(e.if_none_match.value(), "");
  EXPECT_FALSE(e.if_match.present());
}

// RFC 9110 5.3: field lines of one name are one line with the values joined by ", ". Kept so
// for Cache-Control, whose directives ttl.cc reads (max-age on a second line counts, and two
// max-ages disagree whichever way they were sent); empty values add no empty element.
TEST(RequestParser, CacheControlLinesAreJoinedAsOneList) {
  Request r;
  ASSERT_FALSE(parse(r,
                     "PUT /key/k HTTP/1.1\r\nCache-Control: no-store\r\nCache-Control:\r\n"
                     "Cache-Control: max-age=5 , private\r\nCache-Control: max-age=6\r\n"
                     "Content-Length: 0\r\n\r\n"));
  EXPECT_TRUE(r.cache_control.present());
  EXPECT_EQ(r.cache_control.value(), "no-store, max-age=5 , private, max-age=6");
  Request e;
  ASSERT_FALSE(parse(e,
                     "PUT /key/k HTTP/1.1\r\nCache-Control:\r\nCache-Control: max-age=5\r\n"
                     "Content-Length: 0\r\n\r\n"));
  EXPECT_EQ(e.cache_control.value(), "max-age=5");
  // Joined across requests on reused storage: the second starts from nothing.
  Request reused;
  ASSERT_FALSE(parse(reused,
                     "PUT /key/k HTTP/1.1\r\nCache-Control: a\r\nCache-Control: b\r\n"
                     "Content-Length: 0\r\n\r\n"));
  ASSERT_FALSE(
      parse(reused, "PUT /key/k HTTP/1.1\r\nCache-Control: c\r\nContent-Length: 0\r\n\r\n"));
  EXPECT_EQ(reused.cache_control.value(), "c");
}

// Byte by byte, every header value and the target are split across put() calls, and the bytes
// consumed are overwritten before the next: what the request keeps must be its own copy.
TEST(RequestParser, ValuesSplitAcrossPutsSurviveTheInput) {
  const std::string text =
      "PUT /key/a%20long%20key%20name?ttl=60 HTTP/1.1\r\nIf-Match: \"0123abcd-1f\"\r\n"
      "Cache-Control: max-age=60\r\nAccept: application/json, text/plain\r\n"
      "Content-Length: 5\r\n\r\nhello";
  for (std::size_t step : {std::size_t{1}, std::size_t{3}, std::size_t{40}, text.size()}) {
    Request r;
    RequestParser p(r);
    ASSERT_FALSE(feed(p, r, text, step)) << step;
    ASSERT_TRUE(p.is_done()) << step;
    EXPECT_EQ(r.target, "/key/a%20long%20key%20name?ttl=60") << step;
    EXPECT_EQ(r.if_match.value(), "\"0123abcd-1f\"") << step;
    EXPECT_EQ(r.cache_control.value(), "max-age=60") << step;
    EXPECT_EQ(r.accept.value(), "application/json, text/plain") << step;
    EXPECT_EQ(r.body, "hello") << step;
  }
}

// Beast hands an obs-folded value over in a buffer of its own: kept as a copy, joined by a space.
TEST(RequestParser, FoldedValueIsKept) {
  Request r;
  ASSERT_FALSE(parse(r, "GET /key/k HTTP/1.1\r\nIf-None-Match: \"a\",\r\n \"b\"\r\n\r\n"));
  EXPECT_EQ(r.if_none_match.value(), "\"a\", \"b\"");
}

TEST(RequestParser, TransferEncodingCountedAndExpectRead) {
  struct Case {
    std::string_view header;
    unsigned count;
    bool chunked;
  };
  for (const Case& c :
       {Case{"Transfer-Encoding: chunked\r\n", 1, true},
        Case{"Transfer-Encoding: ChUnKeD\r\n", 1, true},
        Case{"Transfer-Encoding: gzip, chunked\r\n", 1, false},
        Case{"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 2, false}}) {
    Request r;
    RequestParser p(r);
    const std::string text =
        "PUT /key/k HTTP/1.1\r\n" + std::string(c.header) + "Expect: 100-Continue\r\n\r\n";
    const auto ec = feed(p, r, text);
    EXPECT_TRUE(!ec || ec == http::error::need_more) << c.header << ec.message();
    ASSERT_TRUE(p.is_header_done()) << c.header;
    EXPECT_EQ(r.transfer_encodings, c.count) << c.header;
    EXPECT_EQ(r.first_coding_chunked, c.chunked) << c.header;
    EXPECT_TRUE(p.chunked()) << c.header;  // Beast: the last coding is chunked
    EXPECT_TRUE(r.expect_continue) << c.header;
  }
}

TEST(RequestParser, ChunkedBodyIsJoinedAndLimited) {
  const std::string text =
      "PUT /key/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n";
  for (std::size_t step : {std::size_t{1}, text.size()}) {
    Request r;
    RequestParser p(r);
    p.eager(true);
    ASSERT_FALSE(feed(p, r, text, step));
    EXPECT_EQ(r.body, "abcdefg");
  }
  Request r;
  RequestParser p(r);
  p.eager(true);
  p.body_limit(6);
  EXPECT_EQ(feed(p, r, text), http::error::body_limit);
}

TEST(RequestParser, KeepAliveIsBeastsAnswer) {
  struct Case {
    std::string_view text;
    bool keep_alive;
  };
  for (const Case& c : {Case{"GET / HTTP/1.1\r\n\r\n", true},
                        Case{"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
                        Case{"GET / HTTP/1.1\r\nConnection: Upgrade, Close\r\n\r\n", false},
                        Case{"GET / HTTP/1.0\r\n\r\n", false},
                        Case{"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true}}) {
    Request r;
    RequestParser p(r);
    ASSERT_FALSE(feed(p, r, c.text)) << c.text;
    EXPECT_EQ(p.keep_alive(), c.keep_alive) << c.text;
  }
}

// The storage is the connection's: the next request on it starts with nothing of the last.
TEST(RequestParser, NextRequestStartsClean) {
  Request r;
  ASSERT_FALSE(parse(r,
                     "PUT /key/first HTTP/1.1\r\nIf-Match: \"x\"\r\nAccept: a\r\n"
                     "Cache-Control: max-age=1\r\nAuthorization: t\r\nExpect: 100-continue\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n",
                     7));
  EXPECT_EQ(r.body, "z");
  ASSERT_FALSE(parse(r, "GET /key/second HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(r.target, "/key/second");
  EXPECT_FALSE(r.if_match.present());
  EXPECT_FALSE(r.accept.present());
  EXPECT_FALSE(r.cache_control.present());
  EXPECT_FALSE(r.authorization.present());
  EXPECT_FALSE(r.if_none_match.present());
  EXPECT_EQ(r.transfer_encodings, 0u);
  EXPECT_FALSE(r.has_expect);
  EXPECT_FALSE(r.expect_continue);
  EXPECT_TRUE(r.body.empty());
}

}  // namespace
}  // namespace server
