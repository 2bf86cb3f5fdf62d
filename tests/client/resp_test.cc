// resp_test.cc — bench_client's RESP2 side (client/resp.hh): the key commands' exact bytes, and
// every reply type framed into the status the worker checks, partial replies asking for more and
// malformed ones refused.
#include "client/resp.hh"

#include <gtest/gtest.h>

#include <string>

namespace client {
namespace {

std::string command(OpType type, std::string_view key, std::string_view value = {},
                    std::uint32_t ttl = 0) {
  std::string out;
  append_resp_key_command(out, type, key, value, ttl);
  return out;
}

TEST(RespCommand, KeyCommandsAreArraysOfBulkStrings) {
  EXPECT_EQ(command(OpType::kGet, "k1"), "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n");
  EXPECT_EQ(command(OpType::kSet, "k1", "hello"), "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$5\r\nhello\r\n");
  EXPECT_EQ(command(OpType::kSet, "k", "v", 3600),
            "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$4\r\n3600\r\n");
  EXPECT_EQ(command(OpType::kDelete, "key"), "*2\r\n$3\r\nDEL\r\n$3\r\nkey\r\n");
  // Binary-safe: a value holding CRLF and NUL is framed by its length.
  const std::string v("a\r\n\0b", 5);
  EXPECT_EQ(command(OpType::kSet, "k", v), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\n" + v + "\r\n");
  std::string out;
  append_resp_command(out, {"FLUSHALL"});
  EXPECT_EQ(out, "*1\r\n$8\r\nFLUSHALL\r\n");
}

TEST(RespReply, EachTypeMapsToTheStatusTheWorkerChecks) {
  RespFrame f;
  ASSERT_EQ(frame_resp_reply("$5\r\nhello\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.head_bytes, 4u);
  EXPECT_EQ(f.body_bytes, 5u);
  EXPECT_EQ(f.trailer_bytes, 2u);
  ASSERT_EQ(frame_resp_reply("$0\r\n\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.body_bytes, 0u);
  ASSERT_EQ(frame_resp_reply("$-1\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 404);
  EXPECT_EQ(f.trailer_bytes, 0u);
  ASSERT_EQ(frame_resp_reply("*-1\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 404);
  ASSERT_EQ(frame_resp_reply("+OK\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.line, "OK");
  ASSERT_EQ(frame_resp_reply(":1\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 200);
  ASSERT_EQ(frame_resp_reply(":0\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 404);
  ASSERT_EQ(frame_resp_reply("-ERR value too big\r\n", f), ParseResult::kComplete);
  EXPECT_EQ(f.status, 500);
  EXPECT_EQ(f.line, "ERR value too big");
  EXPECT_EQ(f.head_bytes, 20u);
}

TEST(RespReply, AnIncompleteTypeLineAsksForMore) {
  RespFrame f;
  EXPECT_EQ(frame_resp_reply("", f), ParseResult::kNeedMore);
  EXPECT_EQ(frame_resp_reply("$12", f), ParseResult::kNeedMore);
  EXPECT_EQ(frame_resp_reply("+OK\r", f), ParseResult::kNeedMore);
  // The type line is whole: the frame is known, the payload may still be arriving.
  ASSERT_EQ(frame_resp_reply("$12\r\nhel", f), ParseResult::kComplete);
  EXPECT_EQ(f.body_bytes, 12u);
}

TEST(RespReply, MalformedRepliesAreRefused) {
  RespFrame f;
  for (const char* bad :
       {"HTTP/1.1 200 OK\r\n", "$abc\r\n", "$-2\r\n", "$\r\n", ":x\r\n",
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "%1\r\n", "_\r\n", "\r\n", "$99999999999999999999\r\n",
        "$536870913\r\n", "$3\r\nabcXY", "$3\r\nabcX", "$-0\r\n", "*-01\r\n", "$+5\r\n"}) {
    EXPECT_EQ(frame_resp_reply(bad, f), ParseResult::kBad) << bad;
  }
  // A type line with no end past 64 KiB cannot be a reply to a key command.
  EXPECT_EQ(frame_resp_reply("+" + std::string(70 * 1024, 'a'), f), ParseResult::kBad);
}

}  // namespace
}  // namespace client
