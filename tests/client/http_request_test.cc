// http_request_test.cc — the HTTP request of a key operation (client/http_request.hh): each
// operation's exact bytes, the TTL only on a PUT, appending to what is there, and no request for
// a board operation.
#include "client/http_request.hh"

#include <gtest/gtest.h>

#include <string>

namespace client {
namespace {

std::string request(OpType type, std::string_view key, std::string_view value = {},
                    std::uint32_t ttl = 0) {
  std::string out;
  append_http_key_request(out, type, key, "h:1", value, ttl);
  return out;
}

TEST(HttpKeyRequest, EachOperationsExactBytes) {
  EXPECT_EQ(request(OpType::kGet, "k1"), "GET /key/k1 HTTP/1.1\r\nHost: h:1\r\n\r\n");
  EXPECT_EQ(request(OpType::kDelete, "k1"), "DELETE /key/k1 HTTP/1.1\r\nHost: h:1\r\n\r\n");
  EXPECT_EQ(request(OpType::kSet, "k1", "hello"),
            "PUT /key/k1 HTTP/1.1\r\nHost: h:1\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(request(OpType::kSet, "k", "", 0),
            "PUT /key/k HTTP/1.1\r\nHost: h:1\r\nContent-Length: 0\r\n\r\n");
}

TEST(HttpKeyRequest, TheTtlRidesOnlyOnAPut) {
  EXPECT_EQ(request(OpType::kSet, "k", "v", 3600),
            "PUT /key/k?ttl=3600 HTTP/1.1\r\nHost: h:1\r\nContent-Length: 1\r\n\r\nv");
  EXPECT_EQ(request(OpType::kGet, "k", "ignored", 3600),
            "GET /key/k HTTP/1.1\r\nHost: h:1\r\n\r\n");
}

TEST(HttpKeyRequest, AppendsAndBuildsNothingForABoardOperation) {
  std::string out = "before|";
  append_http_key_request(out, OpType::kGet, "a", "h:1", {}, 0);
  append_http_key_request(out, OpType::kBoardTop, "a", "h:1", {}, 0);
  append_http_key_request(out, OpType::kDelete, "b", "h:1", {}, 0);
  EXPECT_EQ(out,
            "before|GET /key/a HTTP/1.1\r\nHost: h:1\r\n\r\nDELETE /key/b HTTP/1.1\r\nHost: "
            "h:1\r\n\r\n");
}

}  // namespace
}  // namespace client
