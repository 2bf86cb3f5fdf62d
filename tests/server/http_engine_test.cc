// http_engine_test.cc — the parse → route → handle → respond path without sockets: status
// codes, headers, pipelining, byte-at-a-time input, chunked bodies, malformed input.
#include "server/transport/http_engine.hh"

#include <gtest/gtest.h>

#include <algorithm>
#include <ctime>

#include "engine_harness.hh"
#include "server/transport/http_date.hh"

namespace server {
namespace {
using testing::EngineHarness;

std::size_t count(const std::string& hay, std::string_view needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(HttpEngine, PutGetDeleteRoundTrip) {
  EngineHarness h;
  // Every write answers with the key's new ETag, and a hit carries it (memory only).
  const std::string created = h.feed("PUT /key/k HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  const std::string first_etag = h.etag_line("k");
  EXPECT_EQ(created, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n" + first_etag + "\r\n");
  EXPECT_EQ(h.feed("GET /key/k HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\n" +
                first_etag + "\r\nabc");
  const std::string replaced = h.feed("PUT /key/k HTTP/1.1\r\nContent-Length: 1\r\n\r\nz");
  EXPECT_NE(h.etag_line("k"), first_etag);
  EXPECT_EQ(replaced, "HTTP/1.1 204 No Content\r\n" + h.etag_line("k") + "\r\n");
  EXPECT_EQ(h.feed("DELETE /key/k HTTP/1.1\r\n\r\n"), "HTTP/1.1 204 No Content\r\n\r\n");
  const std::string miss = h.feed("DELETE /key/k HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(miss.starts_with("HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"));
  EXPECT_TRUE(miss.ends_with("\r\n\r\n{\"error\": \"key not found\"}"));
  EXPECT_FALSE(h.engine.must_close());
}

TEST(HttpDate, FormatsImfFixdate) {
  char out[kHttpDateSize];
  format_http_date(784111777, out);  // RFC 9110's example
  EXPECT_EQ(std::string_view(out, kHttpDateSize), "Sun, 06 Nov 1994 08:49:37 GMT");
  format_http_date(0, out);
  EXPECT_EQ(std::string_view(out, kHttpDateSize), "Thu, 01 Jan 1970 00:00:00 GMT");
  format_http_date(951782400, out);  // a leap day
  EXPECT_EQ(std::string_view(out, kHttpDateSize), "Tue, 29 Feb 2000 00:00:00 GMT");
  format_http_date(4102444799, out);
  EXPECT_EQ(std::string_view(out, kHttpDateSize), "Thu, 31 Dec 2099 23:59:59 GMT");
}

TEST(HttpDate, NowIsTheCurrentSecond) {
  const std::time_t before = std::time(nullptr);
  const std::string now(http_date_now());
  const std::time_t after = std::time(nullptr);
  // The coarse clock may trail the precise one by a tick (a few ms), hence before - 1.
  bool matched = false;
  for (std::time_t t = before - 1; t <= after && !matched; ++t) {
    char text[kHttpDateSize];
    format_http_date(t, text);
    matched = now == std::string_view(text, kHttpDateSize);
  }
  EXPECT_TRUE(matched) << now;
  EXPECT_TRUE(testing::is_imf_fixdate(now)) << now;
}

// RFC 9110 §6.6.1: every response of an origin server with a clock carries Date, errors and
// bodiless responses included; exactly one per response.
TEST(HttpEngine, EveryResponseCarriesOneDate) {
  EngineHarness h;
  std::string raw;
  h.pending =
      "PUT /key/k HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
      "GET /key/k HTTP/1.1\r\n\r\n"
      "HEAD /key/k HTTP/1.1\r\n\r\n"
      "GET /key/nope HTTP/1.1\r\n\r\n"
      "DELETE /key/k HTTP/1.1\r\n\r\n"
      "GET /stats HTTP/1.1\r\n\r\n"
      "BREW /key/k HTTP/1.1\r\n\r\n"
      "GET /nowhere HTTP/1.1\r\n\r\n"
      "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n";  // 400, then close
  h.drain(raw);
  EXPECT_EQ(count(raw, "HTTP/1.1 "), 9u) << raw;
  EXPECT_EQ(count(raw, "\r\nDate: "), 9u) << raw;
  for (auto p = raw.find("\r\nDate: "); p != std::string::npos; p = raw.find("\r\nDate: ", p + 1)) {
    EXPECT_TRUE(testing::is_imf_fixdate(std::string_view(raw).substr(p + 8, 29))) << raw;
    EXPECT_EQ(raw.substr(p + 8 + 29, 2), "\r\n");
  }
}

// --max-inflight: a body announced over the budget is refused before it is read; one that
// fits is charged while it is received and given back once answered.
TEST(HttpEngine, InflightBudgetRefusesAnnouncedBodiesThatDoNotFit) {
  Config c;
  c.max_inflight = 1 << 20;
  EngineHarness h(c);
  const std::string big(600 * 1024, 'v');
  // Half of a 600 KiB body: charged in full as soon as the header is in.
  const std::string head =
      "PUT /key/a HTTP/1.1\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n";
  h.engine.consume(head + big.substr(0, 1000));
  EXPECT_EQ(h.ctx.inflight.used(), big.size());
  // A second connection announcing as much does not fit: 503 before its body, then close.
  BasicHttpEngine<OptimizedVariant> second(h.ctx, h.stats.worker(0));  // the same budget
  second.consume(head);
  EXPECT_TRUE(second.output().starts_with("HTTP/1.1 503 ")) << second.output();
  EXPECT_NE(second.output().find("--max-inflight"), std::string::npos);
  EXPECT_TRUE(second.must_close());
  EXPECT_EQ(h.ctx.inflight.used(), big.size());
  // The first body completes: stored, and its charge given back.
  const std::size_t used = h.engine.consume(big.substr(1000));
  EXPECT_EQ(used, big.size() - 1000);
  EXPECT_TRUE(h.engine.output().starts_with("HTTP/1.1 201 ")) << h.engine.output();
  h.engine.output_written();
  EXPECT_EQ(h.ctx.inflight.used(), 0u);
  EXPECT_EQ(h.ctx.inflight.high_water(), big.size());
  // Small bodies are part of a connection's fixed footprint: never charged.
  const std::string small = h.feed("PUT /key/s HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_EQ(small, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n" + h.etag_line("s") + "\r\n");
  EXPECT_EQ(h.ctx.inflight.used(), 0u);
}

TEST(HttpEngine, InflightBudgetRefusesAChunkedBodyAsItCrossesTheBudget) {
  Config c;
  c.max_inflight = 256 * 1024;
  c.max_value = 256 * 1024;
  EngineHarness h(c);
  std::string req = "PUT /key/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk(32 * 1024, 'x');
  for (int i = 0; i < 7; ++i) req += "8000\r\n" + chunk + "\r\n";  // 224 KiB: fits
  req += "0\r\n\r\n";
  EXPECT_TRUE(h.feed(req).starts_with("HTTP/1.1 201 "));
  EXPECT_EQ(h.ctx.inflight.used(), 0u);
  // The same body while another connection holds 200 KiB: refused as it crosses the budget.
  ASSERT_TRUE(h.ctx.inflight.try_add(200 * 1024));
  const std::string out = h.feed("PUT /key/d HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                 req.substr(req.find("8000")));
  EXPECT_TRUE(out.starts_with("HTTP/1.1 503 ")) << out.substr(0, 200);
  EXPECT_TRUE(h.engine.must_close());
  h.ctx.inflight.sub(200 * 1024);
  EXPECT_EQ(h.ctx.inflight.used(), 0u);
  EXPECT_FALSE(h.cache.get("d", [](std::string_view) {}));
}

// A large rendering of a read (here a value's JSON form) counts until it is written, and is
// replaced by a 503 when the budget has no room for it; a write's answer is always kept.
TEST(HttpEngine, InflightBudgetCountsUnwrittenResponses) {
  Config c;
  c.max_inflight = 1 << 20;
  EngineHarness h(c);
  ASSERT_EQ(h.cache.set("big", std::string(300 * 1024, '\xff')), cache::SetResult::created);
  const std::string get_json = "GET /key/big HTTP/1.1\r\nAccept: application/json\r\n\r\n";
  h.engine.consume(get_json);  // not written yet: ~1.2 MiB of escapes would not fit
  EXPECT_TRUE(h.engine.output().starts_with("HTTP/1.1 503 ")) << h.engine.output().substr(0, 80);
  EXPECT_FALSE(h.engine.must_close());
  h.engine.output_written();
  EXPECT_EQ(h.ctx.inflight.used(), 0u);
  // The raw value (300 KiB) fits: charged while unwritten, given back once written.
  h.engine.consume("GET /key/big HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(h.engine.output().starts_with("HTTP/1.1 200 "));
  EXPECT_EQ(h.ctx.inflight.used(), h.engine.output().size());
  h.engine.output_written();
  EXPECT_EQ(h.ctx.inflight.used(), 0u);
}

TEST(HttpEngine, PipelinedRequestsAnsweredInOrderEvenByteByByte) {
  const std::string requests =
      "PUT /key/a/1 HTTP/1.1\r\n\r\n"
      "PUT /key/b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n22\r\n0\r\n\r\n"
      "GET /key/a HTTP/1.1\r\n\r\n"
      "GET /key/b HTTP/1.1\r\n\r\n"
      "GET /key/c HTTP/1.1\r\n\r\n";
  for (std::size_t step : {std::string::npos, std::size_t{1}, std::size_t{7}}) {
    EngineHarness h;
    const std::string out = h.feed(requests, step);
    // Status lines, not bare codes: an ETag's random hex may hold "201" or "404".
    const auto p201a = out.find("HTTP/1.1 201");
    const auto p201b = out.find("HTTP/1.1 201", p201a + 1);
    const auto p1 = out.find("\r\n\r\n1");
    const auto p22 = out.find("\r\n\r\n22");
    const auto p404 = out.find("HTTP/1.1 404");
    ASSERT_NE(p404, std::string::npos) << out;
    EXPECT_LT(p201a, p201b);
    EXPECT_LT(p201b, p1);
    EXPECT_LT(p1, p22);
    EXPECT_LT(p22, p404);
    EXPECT_EQ(count(out, "HTTP/1.1 "), 5u) << "step " << step;
  }
}

TEST(HttpEngine, HeadCarriesSpaceUsedAndNoBody) {
  EngineHarness h;
  h.feed("PUT /key/kk/vvv HTTP/1.1\r\n\r\n");
  EXPECT_EQ(h.feed("HEAD /key/kk HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 3\r\n" +
                h.etag_line("kk") + "Space-Used: 5\r\n\r\n");
  EXPECT_EQ(h.feed("HEAD / HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nSpace-Used: 5\r\n\r\n");
  const std::string miss = h.feed("HEAD /key/none HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(miss.starts_with("HTTP/1.1 404 Not Found\r\n")) << miss;
  EXPECT_TRUE(miss.ends_with("Space-Used: 5\r\n\r\n")) << miss;
}

TEST(HttpEngine, JsonAcceptEscapesKeyAndValue) {
  EngineHarness h;
  h.feed("PUT /key/q%22%FF HTTP/1.1\r\nContent-Length: 2\r\n\r\n\n\x80");
  const std::string out =
      h.feed("GET /key/q%22%FF HTTP/1.1\r\nAccept: text/plain, Application/JSON\r\n\r\n");
  const std::string body = "{\"key\": \"q\\\"\\udcff\", \"value\": \"\\n\\udc80\"}";
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n" + h.etag_line("q\"\xff") + "\r\n" + body);
}

TEST(HttpEngine, KeyErrors) {
  EngineHarness h;
  EXPECT_TRUE(h.feed("GET /key/ HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400 "));
  EXPECT_TRUE(h.feed("GET /key/%zz HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400 "));
  EXPECT_TRUE(h.feed("GET /key/" + std::string(251, 'k') + " HTTP/1.1\r\n\r\n")
                  .starts_with("HTTP/1.1 414 "));
  EXPECT_TRUE(h.feed("PUT /key/" + std::string(250, 'k') + "/v HTTP/1.1\r\n\r\n")
                  .starts_with("HTTP/1.1 201 "));
  EXPECT_FALSE(h.engine.must_close());  // routing errors keep the connection
}

TEST(HttpEngine, Http10ClosesUnlessKeepAlive) {
  EngineHarness h;
  const std::string ka = h.feed("HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  EXPECT_NE(ka.find("Connection: keep-alive\r\n"), std::string::npos);
  EXPECT_FALSE(h.engine.must_close());
  const std::string plain = h.feed("HEAD / HTTP/1.0\r\n\r\n");
  EXPECT_NE(plain.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(h.engine.must_close());
}

TEST(HttpEngine, ConnectionCloseHonoured) {
  EngineHarness h;
  const std::string out =
      h.feed("HEAD / HTTP/1.1\r\nConnection: close\r\n\r\nHEAD / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(count(out, "HTTP/1.1 200"), 1u);
  EXPECT_TRUE(h.engine.must_close());
}

TEST(HttpEngine, MalformedInputIs400AndCloses) {
  for (std::string_view bad : {
           "GET /key/a HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
           "GET /key/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n",
           "PUT /key/a HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
           "PUT /key/a HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
           "PUT /key/a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
           "GET /key/a HTTP/9\r\n\r\n",
           "GET /key/a HTTP/2.0\r\n\r\n",
           "\x01\x02garbage\r\n\r\n",
           "GET /key/a HTTP/1.1\r\nBad Header\r\n\r\n",
           "PUT /key/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
       }) {
    EngineHarness h;
    const std::string out = h.feed(bad);
    EXPECT_TRUE(out.starts_with("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"))
        << bad << "\n→ " << out;
    EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos) << bad;
    EXPECT_TRUE(h.engine.must_close()) << bad;
  }
}

// Beast parses any Transfer-Encoding list; the engine must refuse what it cannot frame.
TEST(HttpEngine, TransferEncodingOtherThanChunkedIsRefused) {
  struct Case {
    std::string_view request;
    std::string_view status;
  };
  for (const Case& c : {
           Case{"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nabc", "400"},
           Case{"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", "400"},
           Case{"PUT /key/a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "501"},
           Case{"PUT /key/a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"},
       }) {
    for (std::size_t step : {std::string::npos, std::size_t{1}}) {
      EngineHarness h;
      const std::string out = h.feed(c.request, step);
      EXPECT_TRUE(out.starts_with("HTTP/1.1 " + std::string(c.status) + " ")) << c.request << out;
      EXPECT_EQ(std::count(out.begin(), out.end(), '{'), 1) << "exactly one response: " << out;
      EXPECT_TRUE(h.engine.must_close());
      EXPECT_EQ(h.cache.size(), 0u);
    }
  }
  EngineHarness h;
  EXPECT_TRUE(h.feed("PUT /key/a HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n")
                  .starts_with("HTTP/1.1 201 "));
}

TEST(HttpEngine, HeaderLimitIs431) {
  EngineHarness h;
  const std::string out =
      h.feed("GET /key/a HTTP/1.1\r\nX-Big: " + std::string(9000, 'x') + "\r\n\r\n", 1000);
  EXPECT_TRUE(out.starts_with("HTTP/1.1 431 ")) << out;
  EXPECT_TRUE(h.engine.must_close());
}

// Beast consumes complete fields as they arrive; the limit must still hold over many small
// fields delivered in pieces.
TEST(HttpEngine, HeaderLimitIsCumulativeOverManyFields) {
  std::string many;
  for (int i = 0; i < 600; ++i) many += "X-H" + std::to_string(i) + ": vvvvvvvvvv\r\n";
  for (std::size_t step : {std::size_t{100}, std::size_t{4096}, std::string::npos}) {
    EngineHarness h;
    const std::string out = h.feed("GET /key/a HTTP/1.1\r\n" + many + "\r\n", step);
    EXPECT_TRUE(out.starts_with("HTTP/1.1 431 ")) << "step " << step << ": " << out;
  }
  EngineHarness h;
  EXPECT_TRUE(h.feed("GET /key/a HTTP/1.1\r\nX: " + std::string(8000, 'x') + "\r\n\r\n", 100)
                  .starts_with("HTTP/1.1 404 "));
}

TEST(HttpEngine, BodyOverMaxValueIs413) {
  Config c;
  c.max_value = 10;
  {
    EngineHarness h(c);
    EXPECT_TRUE(
        h.feed("PUT /key/a HTTP/1.1\r\nContent-Length: 11\r\n\r\n").starts_with("HTTP/1.1 413 "));
  }
  {
    EngineHarness h(c);
    EXPECT_TRUE(h.feed("PUT /key/a HTTP/1.1\r\nTransfer-Encoding: "
                       "chunked\r\n\r\n6\r\n123456\r\n6\r\n123456\r\n0\r\n\r\n")
                    .starts_with("HTTP/1.1 413 "));
  }
  {
    EngineHarness h(c);
    EXPECT_TRUE(h.feed("PUT /key/a/12345678901 HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 413 "));
    EXPECT_TRUE(h.feed("PUT /key/a/1234567890 HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 201 "));
  }
}

TEST(HttpEngine, ValueLargerThanMaxmemIs413) {
  Config c;
  c.maxmem = 100;
  EngineHarness h(c);
  EXPECT_TRUE(h.feed("PUT /key/a/" + std::string(100, 'v') + " HTTP/1.1\r\n\r\n")
                  .starts_with("HTTP/1.1 413 "));
  EXPECT_TRUE(h.feed("PUT /key/a/" + std::string(99, 'v') + " HTTP/1.1\r\n\r\n")
                  .starts_with("HTTP/1.1 201 "));
}

TEST(HttpEngine, ExpectContinueGetsInterimResponse) {
  EngineHarness h;
  const std::string first =
      h.feed("PUT /key/a HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(first, "HTTP/1.1 100 Continue\r\n\r\n");
  const std::string created = h.feed("xy");
  EXPECT_EQ(created, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n" + h.etag_line("a") + "\r\n");
}

TEST(HttpEngine, ResetAndStats) {
  EngineHarness h;
  h.feed("PUT /key/a/1 HTTP/1.1\r\n\r\nGET /key/a HTTP/1.1\r\n\r\nGET /key/b HTTP/1.1\r\n\r\n");
  const std::string stats = h.feed("GET /stats HTTP/1.1\r\n\r\n");
  for (const char* field :
       {"\"items\": 1", "\"space_used\": 2", "\"maxmem\": 67108864", "\"hits\": 1", "\"misses\": 1",
        "\"sets\": 1", "\"deletes\": 0", "\"evictions\": 0", "\"requests\": 4",
        "\"connections\": ", "\"threads\": 1", "\"evictor\": \"", "\"uptime_s\": "}) {
    EXPECT_NE(stats.find(field), std::string::npos) << field << "\n" << stats;
  }
  EXPECT_EQ(h.feed("POST /reset HTTP/1.1\r\n\r\n"), "HTTP/1.1 204 No Content\r\n\r\n");
  EXPECT_EQ(h.cache.size(), 0u);
}

// The admin route (docs/server.md, "Security model"): with a token, a full reset needs it.
TEST(HttpEngine, FullResetNeedsTheAdminToken) {
  Config c;
  c.admin_token = "0123456789abcdef";
  EngineHarness h(c);
  h.feed("PUT /key/a/1 HTTP/1.1\r\n\r\n");
  const std::string body =
      R"({"error": "POST /reset needs the admin token: Authorization: Bearer <token>"})";
  EXPECT_EQ(h.feed("POST /reset HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\nWWW-Authenticate: Bearer\r\n\r\n" + body);
  const std::string wrong = h.feed("POST /reset HTTP/1.1\r\nAuthorization: Bearer 0123\r\n\r\n");
  EXPECT_TRUE(wrong.starts_with("HTTP/1.1 403 ")) << wrong;
  EXPECT_NE(wrong.find("wrong admin token"), std::string::npos) << wrong;
  EXPECT_EQ(h.cache.size(), 1u);  // refused: nothing changed
  // Pipelined behind a GET, with the right token: 204 and the cache is empty.
  const std::string out = h.feed(
      "GET /key/a HTTP/1.1\r\n\r\n"
      "POST /reset HTTP/1.1\r\nAuthorization: Bearer 0123456789abcdef\r\n\r\n");
  EXPECT_TRUE(out.ends_with("\r\n\r\n1HTTP/1.1 204 No Content\r\n\r\n")) << out;
  EXPECT_EQ(h.cache.size(), 0u);
  EXPECT_EQ(h.feed("POST /reset?scope=cache HTTP/1.1\r\n\r\n"), "HTTP/1.1 204 No Content\r\n\r\n");
}

// A header sent twice: the first (request_parser_test.cc covers each header the server reads).
// Byte by byte too: the values, the target and the body then arrive over many consume() calls,
// and the input of each is gone before the request is answered.
TEST(HttpEngine, ConditionalHeadersSentTwiceTheFirstCounts) {
  for (std::size_t step : {std::string::npos, std::size_t{1}, std::size_t{5}}) {
    EngineHarness h;
    h.feed("PUT /key/k/v HTTP/1.1\r\n\r\n");
    const std::string line = h.etag_line("k");  // ETag: "...."\r\n
    const std::string tag = line.substr(6, line.size() - 8);
    const std::string get = "GET /key/k HTTP/1.1\r\nIf-None-Match: ";
    const std::string put = "PUT /key/k HTTP/1.1\r\nContent-Length: 2\r\nIf-Match: ";
    const std::pair<std::string, std::string_view> cases[] = {
        {get + tag + "\r\nIf-None-Match: \"x\"\r\n\r\n", "304"},
        {get + "\"x\"\r\nIf-None-Match: " + tag + "\r\n\r\n", "200"},
        {put + "\"x\"\r\nIf-Match: " + tag + "\r\n\r\nzz", "412"},
        {put + tag + "\r\nIf-Match: \"x\"\r\n\r\nzz", "204"},  // the last: it writes
    };
    for (const auto& [request, status] : cases) {
      const std::string out = h.feed(request, step);
      EXPECT_TRUE(out.starts_with("HTTP/1.1 " + std::string(status) + " "))
          << step << "\n"
          << request << "\n→ " << out;
    }
    EXPECT_EQ(h.feed("GET /key/k HTTP/1.1\r\n\r\n", step),
              "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 2\r\n" +
                  h.etag_line("k") + "\r\nzz")
        << step;
  }
}

// A GET hit the fused rendering does not take (ResponseWriter::plain) still says what it must.
TEST(HttpEngine, GetHitOutsideTheFusedPathCarriesItsHeaders) {
  EngineHarness h;
  h.feed("PUT /key/k/v HTTP/1.1\r\n\r\n");
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 1\r\n" +
      h.etag_line("k");
  EXPECT_EQ(h.feed("GET /key/k HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
            head + "Connection: keep-alive\r\n\r\nv");
  EXPECT_FALSE(h.engine.must_close());
  h.feed("PUT /key/t/w?ttl=100 HTTP/1.1\r\n\r\n");
  const std::string ttl = h.feed("GET /key/t HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(ttl.starts_with("HTTP/1.1 200 OK\r\n")) << ttl;
  EXPECT_NE(ttl.find(h.etag_line("t") + "Cache-Control: max-age="), std::string::npos) << ttl;
  EXPECT_TRUE(ttl.ends_with("\r\n\r\nw")) << ttl;
  EXPECT_EQ(h.feed("GET /key/k HTTP/1.1\r\nConnection: close\r\n\r\n"),
            head + "Connection: close\r\n\r\nv");
  EXPECT_TRUE(h.engine.must_close());
}

TEST(HttpEngine, UnknownMethodAndPath) {
  EngineHarness h;
  EXPECT_TRUE(h.feed("BREW /key/a HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 501 "));
  EXPECT_TRUE(h.feed("GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
  const std::string out = h.feed("POST /key/a HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(out.starts_with("HTTP/1.1 405 ")) << out;
  EXPECT_NE(out.find("Allow: GET, PUT, DELETE, HEAD\r\n"), std::string::npos);
}

}  // namespace
}  // namespace server
