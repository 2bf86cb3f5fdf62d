// resp_parser_test.cc — RespParser (server/resp/resp_parser.hh) on its own: the two request
// forms and every protocol error with Redis 7's words (each checked against a real redis-server
// 7.0.15, same bytes in, same reply out), the edge cases Redis has (empty arrays skipped, the
// bytes after a bulk unread, a NUL hiding a line's end, sdssplitargs's quoting), pipelined
// commands one per feed, binary-safe bulks, and the storage a large command leaves behind. Every
// input is also fed one byte at a time, which must give the same commands and the same error.
#include "server/resp/resp_parser.hh"

#include <malloc.h>

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace server::resp {
namespace {

using Args = std::vector<std::string>;
using namespace std::string_literals;

struct Outcome {
  std::vector<Args> commands;
  std::string error;  // empty when the input ran out without one
  bool got_some = false;
  bool operator==(const Outcome&) const = default;
};

// Feeds `input` in pieces of at most `step` bytes, the way the engine does: the bytes a feed()
// leaves are kept and the next piece is appended to them. The bytes a feed() consumed are
// overwritten with '#' before the command is read, so a view into the caller's buffer shows.
Outcome run(std::string_view input, std::size_t step, ParserLimits limits) {
  RespParser parser(limits);
  Outcome out;
  std::string pending;
  std::size_t offset = 0;
  for (;;) {
    const std::size_t n = std::min(step, input.size() - offset);
    pending.append(input.substr(offset, n));
    offset += n;
    while (!pending.empty() && parser.state() == RespParser::State::need_more) {
      const std::size_t used = parser.feed(pending);
      EXPECT_LE(used, pending.size());
      // Short of a command or an error, everything given is consumed (the parser keeps it).
      if (parser.state() == RespParser::State::need_more) {
        EXPECT_EQ(used, pending.size());
      }
      pending.replace(0, used, used, '#');
      pending.erase(0, used);
      if (used == 0) break;  // (an expectation above failed)
      if (parser.state() == RespParser::State::command) {
        EXPECT_FALSE(parser.args().empty());
        out.commands.emplace_back(parser.args().begin(), parser.args().end());
        parser.next();
      }
    }
    if (parser.state() == RespParser::State::error) {
      out.error = parser.error();
      break;
    }
    if (offset == input.size()) break;
  }
  out.got_some = parser.got_some();
  return out;
}

// `input` fed whole, and fed one byte at a time: both must give the same outcome.
Outcome parse(std::string_view input, ParserLimits limits = {}) {
  const Outcome whole = run(input, input.size() + 1, limits);
  const Outcome bytewise = run(input, 1, limits);
  EXPECT_EQ(whole, bytewise) << "input: " << ::testing::PrintToString(std::string(input));
  return whole;
}

std::string error_of(std::string_view input, ParserLimits limits = {}) {
  return parse(input, limits).error;
}

TEST(RespParser, ReadsAnArrayOfBulkStrings) {
  const Outcome out = parse("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n");
  EXPECT_EQ(out.commands, (std::vector<Args>{{"SET", "k", "hello"}}));
  EXPECT_EQ(out.error, "");
  EXPECT_FALSE(out.got_some);
}

TEST(RespParser, EmptyAndNullArraysAreNoCommand) {
  const Outcome out =
      parse("*0\r\n*-1\r\n*-5\r\n*-9223372036854775808\r\n*1\r\n$4\r\nPING\r\n*0\r\n");
  EXPECT_EQ(out.commands, (std::vector<Args>{{"PING"}}));
  EXPECT_EQ(out.error, "");
  EXPECT_FALSE(out.got_some);  // what follows the command was skipped whole
}

TEST(RespParser, AnEmptyBulkIsAnEmptyArgument) {
  EXPECT_EQ(parse("*2\r\n$0\r\n\r\n$0\r\n\r\n").commands, (std::vector<Args>{{"", ""}}));
}

TEST(RespParser, InvalidMultibulkLength) {
  for (const char* input : {"*-0\r\n", "*+1\r\n", "*01\r\n", "* 1\r\n", "*1 \r\n", "*\r\n",
                            "*abc\r\n", "*1a\r\n", "*-\r\n", "*-99999999999999999999\r\n",
                            "*99999999999999999999\r\n", "*9223372036854775808\r\n"}) {
    EXPECT_EQ(error_of(input), "Protocol error: invalid multibulk length") << input;
  }
}

TEST(RespParser, ACountAboveMaxArgsIsAnInvalidMultibulkLength) {
  ParserLimits limits;
  limits.max_args = 3;
  EXPECT_EQ(error_of("*4\r\n", limits), "Protocol error: invalid multibulk length");
  EXPECT_EQ(parse("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", limits).commands,
            (std::vector<Args>{{"a", "b", "c"}}));
  // The default bound, Redis's 1024*1024 of earlier versions.
  EXPECT_EQ(error_of("*1048577\r\n"), "Protocol error: invalid multibulk length");
  EXPECT_EQ(error_of("*1048576\r\n"), "");
}

TEST(RespParser, InvalidBulkLength) {
  for (const char* input :
       {"*1\r\n$-1\r\n", "*1\r\n$-0\r\n", "*1\r\n$\r\n", "*1\r\n$+1\r\n", "*1\r\n$01\r\n",
        "*1\r\n$ 1\r\n", "*1\r\n$1x\r\n", "*1\r\n$536870913\r\n", "*2\r\n$1\r\na\r\n$-1\r\n"}) {
    EXPECT_EQ(error_of(input), "Protocol error: invalid bulk length") << input;
  }
  EXPECT_EQ(error_of("*1\r\n$536870912\r\n"), "");  // Redis's proto-max-bulk-len: waits for it
}

TEST(RespParser, ABulkAboveMaxBulkIsAnInvalidBulkLength) {
  ParserLimits limits;
  limits.max_bulk = 5;
  EXPECT_EQ(error_of("*2\r\n$3\r\nSET\r\n$6\r\n", limits), "Protocol error: invalid bulk length");
  EXPECT_EQ(parse("*1\r\n$5\r\nhello\r\n", limits).commands, (std::vector<Args>{{"hello"}}));
}

TEST(RespParser, ExpectedDollar) {
  EXPECT_EQ(error_of("*1\r\nX\r\n"), "Protocol error: expected '$', got 'X'");
  EXPECT_EQ(error_of("*2\r\n$1\r\na\r\n:1\r\n"), "Protocol error: expected '$', got ':'");
  EXPECT_EQ(error_of("*1\r\n\xe9x\r\n"), "Protocol error: expected '$', got '\xe9'");
  // An empty line's first byte is its "\r", and a "\n" too is shown as a space, as Redis does.
  EXPECT_EQ(error_of("*1\r\n\r\n"), "Protocol error: expected '$', got ' '");
  EXPECT_EQ(error_of("*1\r\n\nfoo\r\n"), "Protocol error: expected '$', got ' '");
  // Redis judges the line once its "\r" and the byte after it are in: until then it waits.
  const Outcome waiting = parse("*1\r\nXabc\r");
  EXPECT_EQ(waiting.error, "");
  EXPECT_TRUE(waiting.got_some);
}

TEST(RespParser, TheBytesAfterABulkAndAfterAHeadersCrAreNotChecked) {
  // Redis steps over two bytes after a bulk's data, and over the byte after a header's "\r".
  EXPECT_EQ(parse("*1\r\n$4\r\nPINGab*1\r\n$4\r\nPING\r\n").commands,
            (std::vector<Args>{{"PING"}, {"PING"}}));
  EXPECT_EQ(parse("*1\rX$4\rYPING\r\n").commands, (std::vector<Args>{{"PING"}}));
  // A header's end is its first "\r", even where a "\n" comes first.
  EXPECT_EQ(error_of("*3\n$3\r\n"), "Protocol error: invalid multibulk length");
}

TEST(RespParser, TooBigInlineRequest) {
  ParserLimits limits;
  limits.max_inline = 16;
  const std::string at_limit(16, 'A');
  EXPECT_EQ(parse(at_limit, limits).error, "");
  EXPECT_EQ(parse(at_limit + "\n", limits).commands, (std::vector<Args>{{at_limit}}));
  EXPECT_EQ(parse(at_limit + "A", limits).error, "Protocol error: too big inline request");
  EXPECT_EQ(parse(at_limit + "A\n", limits).error, "Protocol error: too big inline request");
  // The default, Redis's PROTO_INLINE_MAX_SIZE: 65536 bytes wait, 65537 are an error.
  EXPECT_EQ(parse(std::string(65536, 'A')).error, "");
  EXPECT_EQ(parse(std::string(65537, 'A')).error, "Protocol error: too big inline request");
}

TEST(RespParser, TooBigCountStrings) {
  ParserLimits limits;
  limits.max_inline = 16;
  const std::string digits(15, '1');  // "*" and 15 digits: 16 bytes
  EXPECT_EQ(parse("*" + digits, limits).error, "");
  EXPECT_EQ(parse("*" + digits + "1", limits).error, "Protocol error: too big mbulk count string");
  EXPECT_EQ(parse("*1\r\n$" + digits, limits).error, "");
  EXPECT_EQ(parse("*1\r\n$" + digits + "1", limits).error,
            "Protocol error: too big bulk count string");
  // A line within the limit whose number is not one is an invalid length, not too big.
  EXPECT_EQ(parse("*" + digits + "\r\n", limits).error, "Protocol error: invalid multibulk length");
  // The default: 64 KiB without a "\r".
  EXPECT_EQ(parse("*" + std::string(65535, '1')).error, "");
  EXPECT_EQ(parse("*" + std::string(65536, '1')).error,
            "Protocol error: too big mbulk count string");
  EXPECT_EQ(parse("*1\r\n$" + std::string(65536, '1')).error,
            "Protocol error: too big bulk count string");
}

TEST(RespParser, ANulHidesTheEndOfALine) {
  // Redis finds a line's end with strchr, which stops at a NUL: the line only grows.
  const Outcome inline_nul = parse("PI\0NG\r\nPING\r\n"s);
  EXPECT_TRUE(inline_nul.commands.empty());
  EXPECT_EQ(inline_nul.error, "");
  EXPECT_TRUE(inline_nul.got_some);
  ParserLimits limits;
  limits.max_inline = 16;
  EXPECT_EQ(parse("PI\0NG\r\nPING\r\nPING\r\n"s, limits).error,
            "Protocol error: too big inline request");
  EXPECT_EQ(parse("*1\0\r\n$4\r\nPING\r\n\r\n"s, limits).error,
            "Protocol error: too big mbulk count string");
  EXPECT_EQ(parse("*1\r\n$4\0\r\nPING\r\nPING\r\nPING\r\n"s, limits).error,
            "Protocol error: too big bulk count string");
}

TEST(RespParser, InlineLinesEndAtLfWithOrWithoutCr) {
  EXPECT_EQ(parse("PING\r\nPING\nECHO a\r\n").commands,
            (std::vector<Args>{{"PING"}, {"PING"}, {"ECHO", "a"}}));
  const Outcome waiting = parse("PING\r");
  EXPECT_TRUE(waiting.commands.empty());
  EXPECT_TRUE(waiting.got_some);
}

TEST(RespParser, EmptyInlineLinesAreNoCommand) {
  const Outcome out = parse("\r\n\n   \r\n\t\n\v\f \nPING\n\r\n");
  EXPECT_EQ(out.commands, (std::vector<Args>{{"PING"}}));
  EXPECT_FALSE(out.got_some);
}

TEST(RespParser, InlineWordsAreSplitAsSdssplitargsSplitsThem) {
  const auto one = [](std::string_view line) {
    const Outcome out = parse(line);
    EXPECT_EQ(out.error, "") << line;
    return out.commands.size() == 1 ? out.commands[0] : Args{};
  };
  // Spaces, tabs and a "\r" inside the line separate; "\v" and "\f" only skip between words.
  EXPECT_EQ(one("SET  k\tv \r\n"), (Args{"SET", "k", "v"}));
  EXPECT_EQ(one("ECHO a\rb\r\n"), (Args{"ECHO", "a", "b"}));
  EXPECT_EQ(one("ECHO a\vb\r\n"), (Args{"ECHO", "a\vb"}));
  EXPECT_EQ(one("\vECHO \fab\r\n"), (Args{"ECHO", "ab"}));
  EXPECT_EQ(one("ECHO \xe9\xff\r\n"), (Args{"ECHO", "\xe9\xff"}));
  // Double quotes: \n \r \t \b \a, \xHH (either case), and any other escaped byte as itself.
  EXPECT_EQ(one("ECHO \"a\\x41\\x4a\\x4\\n\\t\\r\\b\\a\\\\\\\"\\qb\"\r\n"),
            (Args{"ECHO", "aAJx4\n\t\r\b\a\\\"qb"}));
  EXPECT_EQ(one("ECHO \"\\xZZ\"\r\n"), (Args{"ECHO", "xZZ"}));
  EXPECT_EQ(one("ECHO \"a\\x00b\"\r\n"), (Args{"ECHO", "a\0b"s}));
  EXPECT_EQ(one("ECHO \"a b\rc\"\r\n"), (Args{"ECHO", "a b\rc"}));
  // Single quotes: only \' is an escape.
  EXPECT_EQ(one("ECHO 'c\\'d\\n\"'\r\n"), (Args{"ECHO", "c'd\\n\""}));
  // A quote may open inside a word; empty quotes are an empty word.
  EXPECT_EQ(one("ECHO ab\"cd\" ''\r\n"), (Args{"ECHO", "abcd", ""}));
  // A closing quote is followed by a space (isspace: "\r" and "\v" too) or the line's end.
  EXPECT_EQ(one("ECHO \"a\"\r\r\n"), (Args{"ECHO", "a"}));
  EXPECT_EQ(one("ECHO \"a\"\vb\r\n"), (Args{"ECHO", "a", "b"}));
  EXPECT_EQ(one("ECHO 'a'\tb\n"), (Args{"ECHO", "a", "b"}));
}

TEST(RespParser, UnbalancedQuotes) {
  for (const char* input :
       {"ECHO \"abc\r\n", "ECHO 'abc\r\n", "ECHO \"abc\"d\r\n", "ECHO 'abc'd\r\n",
        "ECHO \"abc\\\r\n", "ECHO 'c\\'d\\n\\\\'\r\n", "ECHO a'b c'd\r\n", "\"\n"}) {
    EXPECT_EQ(error_of(input), "Protocol error: unbalanced quotes in request") << input;
  }
}

TEST(RespParser, PipelinedCommandsComeOneFeedAtATime) {
  const std::string_view first = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n";
  const std::string_view second = "PING\r\n";
  const std::string_view third = "*1\r\n$4\r\nQUIT\r\n";
  const std::string input = std::string(first) + std::string(second) + std::string(third);
  RespParser parser;
  std::string_view rest = input;

  std::size_t used = parser.feed(rest);
  EXPECT_EQ(used, first.size());
  ASSERT_EQ(parser.state(), RespParser::State::command);
  EXPECT_EQ(Args(parser.args().begin(), parser.args().end()), (Args{"GET", "a"}));
  parser.next();
  rest.remove_prefix(used);

  used = parser.feed(rest);
  EXPECT_EQ(used, second.size());
  ASSERT_EQ(parser.state(), RespParser::State::command);
  EXPECT_EQ(Args(parser.args().begin(), parser.args().end()), (Args{"PING"}));
  parser.next();
  rest.remove_prefix(used);

  used = parser.feed(rest);
  EXPECT_EQ(used, third.size());
  ASSERT_EQ(parser.state(), RespParser::State::command);
  EXPECT_EQ(Args(parser.args().begin(), parser.args().end()), (Args{"QUIT"}));
  parser.next();
  EXPECT_EQ(parser.state(), RespParser::State::need_more);

  // In one feed() per command the whole way through: same result as any split.
  EXPECT_EQ(parse(input).commands, (std::vector<Args>{{"GET", "a"}, {"PING"}, {"QUIT"}}));
}

TEST(RespParser, BulksAreBinarySafe) {
  const std::string value("a\0b\r\n*1\r\n$3\r\n\n\r\0", 16);
  const std::string input = "*3\r\n$3\r\nSET\r\n$2\r\n\r\n\r\n$16\r\n" + value + "\r\n";
  EXPECT_EQ(parse(input).commands, (std::vector<Args>{{"SET", "\r\n", value}}));
}

// Bytes the C allocator holds for the program (glibc: the arena's in-use bytes and mmap'd
// blocks). 0 where the allocator does not say (a sanitizer's, jemalloc).
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

TEST(RespParser, ALargeBulkIsHeldThenReleased) {
  const std::size_t size = 1 << 20;
  std::string value(size, 'v');
  value[12345] = '\0';
  const std::string input = "*2\r\n$3\r\nSET\r\n$" + std::to_string(size) + "\r\n" + value + "\r\n";
  const std::size_t header = input.size() - size - 2;

  const std::size_t heap_before = heap_in_use();
  std::size_t heap_peak = 0;
  {
    RespParser parser;
    // In 4 KiB pieces, as reads deliver it: held_bytes() counts what has arrived.
    std::size_t offset = 0;
    while (parser.state() == RespParser::State::need_more) {
      const std::string_view piece = std::string_view(input).substr(offset, 4096);
      ASSERT_FALSE(piece.empty());
      offset += parser.feed(piece);
      if (offset > header && offset < header + size) {
        EXPECT_EQ(parser.held_bytes(), 3 + (offset - header) + RespParser::kPerArgumentBytes);
        EXPECT_TRUE(parser.got_some());
      }
    }
    ASSERT_EQ(parser.state(), RespParser::State::command);
    EXPECT_EQ(offset, input.size());
    ASSERT_EQ(parser.args().size(), 2u);
    EXPECT_EQ(parser.args()[1], value);
    EXPECT_EQ(parser.held_bytes(), 3 + size + 2 * RespParser::kPerArgumentBytes);
    heap_peak = heap_in_use();

    parser.next();
    EXPECT_EQ(parser.held_bytes(), 0u);
    const std::size_t heap_after = heap_in_use();
    if (heap_before == 0 || heap_peak < heap_before + size) {
      GTEST_SKIP() << "the allocator does not report its bytes in use";
    }
    // The megabyte went back: what stays is within kRetainedBytes (and slack for the vectors).
    EXPECT_LT(heap_after, heap_before + RespParser::kRetainedBytes + 16 * 1024);

    // The parser still works, from small storage.
    EXPECT_EQ(parser.feed("*1\r\n$4\r\nPING\r\n"), 14u);
    ASSERT_EQ(parser.state(), RespParser::State::command);
    EXPECT_EQ(parser.args()[0], "PING");
  }
}

TEST(RespParser, GotSomeAndHeldBytes) {
  RespParser parser;
  EXPECT_FALSE(parser.got_some());
  EXPECT_EQ(parser.held_bytes(), 0u);

  EXPECT_EQ(parser.feed("*2\r"), 3u);
  EXPECT_TRUE(parser.got_some());
  EXPECT_EQ(parser.held_bytes(), 0u);
  EXPECT_EQ(parser.feed("\n$3\r\nab"), 7u);
  EXPECT_EQ(parser.held_bytes(), 2u);
  EXPECT_EQ(parser.feed("c\r\n$4\r\nxy"), 9u);
  EXPECT_EQ(parser.held_bytes(), 5u + RespParser::kPerArgumentBytes);  // "abc" is kept whole
  EXPECT_TRUE(parser.got_some());
  EXPECT_EQ(parser.feed("zw\r\nPING\r\n"), 4u);  // stops after the command
  ASSERT_EQ(parser.state(), RespParser::State::command);
  EXPECT_EQ(Args(parser.args().begin(), parser.args().end()), (Args{"abc", "xyzw"}));
  parser.next();
  EXPECT_FALSE(parser.got_some());
  EXPECT_EQ(parser.held_bytes(), 0u);

  // An inline command's words count the same way.
  EXPECT_EQ(parser.feed("SET a bc\r\n"), 10u);
  ASSERT_EQ(parser.state(), RespParser::State::command);
  EXPECT_EQ(parser.held_bytes(), 6u + 3 * RespParser::kPerArgumentBytes);
  parser.next();

  // A million empty arguments hold no bytes of their own, and still count (--max-inflight).
  std::string many = "*1048576\r\n";
  for (int i = 0; i < 1000; ++i) many += "$0\r\n\r\n";
  EXPECT_EQ(parser.feed(many), many.size());
  EXPECT_EQ(parser.held_bytes(), 1000 * RespParser::kPerArgumentBytes);
  parser = RespParser();

  // An empty line or array consumed: nothing of a command is held.
  EXPECT_EQ(parser.feed("\r\n*0\r\n"), 6u);
  EXPECT_EQ(parser.state(), RespParser::State::need_more);
  EXPECT_FALSE(parser.got_some());
  EXPECT_EQ(parser.feed("PI"), 2u);
  EXPECT_TRUE(parser.got_some());
}

TEST(RespParser, ErrorsAreFinal) {
  RespParser parser;
  EXPECT_EQ(parser.feed("*1\r\n$x\r\n*1\r\n$4\r\nPING\r\n"), 8u);  // up to the error
  ASSERT_EQ(parser.state(), RespParser::State::error);
  EXPECT_EQ(parser.error(), "Protocol error: invalid bulk length");
  parser.next();
  EXPECT_EQ(parser.state(), RespParser::State::error);
  EXPECT_EQ(parser.feed("PING\r\n"), 0u);
  EXPECT_EQ(parser.error(), "Protocol error: invalid bulk length");
}

TEST(RespParser, ArgumentsViewTheParsersOwnStorage) {
  // A command fed in pieces, each piece's buffer overwritten once fed: the args still read back.
  RespParser parser;
  std::string piece = "*2\r\n$3\r\nGET";
  parser.feed(piece);
  piece.assign(piece.size(), '#');
  piece = "\r\n$3\r\nkey\r\n";
  EXPECT_EQ(parser.feed(piece), piece.size());
  piece.assign(piece.size(), '#');
  ASSERT_EQ(parser.state(), RespParser::State::command);
  EXPECT_EQ(Args(parser.args().begin(), parser.args().end()), (Args{"GET", "key"}));
}

}  // namespace
}  // namespace server::resp
