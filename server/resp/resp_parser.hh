// resp_parser.hh — the Redis protocol's request decoder: bytes in, one command (an argument
// vector) at a time out. Transport-free, as the HTTP engine's parser is: the RESP engine, the
// unit tests and the fuzzer (tests/fuzz/resp_parser_fuzz.cc) drive this same object.
//
// Two request forms, as Redis reads them (networking.c, processMultibulkBuffer and
// processInlineBuffer):
// - a RESP2 array of bulk strings: "*<n>\r\n" then n times "$<len>\r\n<len bytes>\r\n";
// - an inline command (a line that does not start with '*'): words split on spaces and tabs,
//   with "double quotes" (escapes \n \r \t \b \a \\ \" and \xHH) and 'single quotes' (\' only),
//   as sdssplitargs splits them; the line ends at "\n" (a "\r" before it is dropped). An empty
//   line is skipped, not a command.
// The parser is incremental: feed() takes whatever bytes arrived, keeps what it needs of a
// command begun (it copies the arguments into its own storage, so the caller's buffer may be
// consumed at once) and stops after one complete command, whose arguments args() views until
// next(). Its storage keeps its capacity across commands (no allocation per command once warm).
//
// Errors are final: after one, the connection answers the error's text as an error reply and
// closes (Redis's "Protocol error: ..." replies, same words).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace server::resp {

struct ParserLimits {
  std::size_t max_bulk = 512u << 20;  // a bulk string's most bytes (--max-value; Redis: 512 MiB)
  std::size_t max_args =
      1024 * 1024;  // an array's most elements (Redis 7.0: INT_MAX; ours is lower)
  std::size_t max_inline = 64 * 1024;  // an inline line's most bytes (Redis: PROTO_INLINE_MAX_SIZE)
};

class RespParser {
 public:
  enum class State : std::uint8_t {
    need_more,  // no complete command yet: feed more bytes
    command,    // args() holds one complete command: call next() before feeding more
    error,      // a protocol error (error()): answer it and close
  };

  explicit RespParser(ParserLimits limits = {}) : limits_(limits) {}

  // Consumes bytes of `input` up to the end of one complete command (or all of it, or up to the
  // error); returns how many it consumed. Call only in state need_more.
  std::size_t feed(std::string_view input);

  State state() const { return state_; }
  // state command: the arguments (at least one; args()[0] is the command's name as sent).
  // Views into the parser's storage, valid until next() or the parser's destruction.
  const std::vector<std::string_view>& args() const { return args_; }
  // state error: Redis's reply text without the "-ERR " prefix, e.g.
  // "Protocol error: invalid multibulk length".
  std::string_view error() const { return error_; }

  // After a command was answered: ready for the next one (keeps the storage's capacity, and
  // releases it when a large command grew it beyond kRetainedBytes).
  void next();
  // Some bytes of a command not yet complete were consumed (the idle timeout is then the
  // header timeout's, as for a request begun).
  bool got_some() const { return got_some_; }
  // How many bytes the current command holds so far, for --max-inflight, which charges them as
  // a body: its arguments' bytes, and what the parser keeps per argument (its end, then its
  // view), so a command of a million empty arguments is charged its ~24 MB too.
  std::size_t held_bytes() const { return storage_.size() + ends_.size() * kPerArgumentBytes; }
  static constexpr std::size_t kPerArgumentBytes = sizeof(std::size_t) + sizeof(std::string_view);

  static constexpr std::size_t kRetainedBytes = 64 * 1024;

 private:
  // Implementation state (see resp_parser.cc).
  enum class Phase : std::uint8_t {
    start,         // nothing of a command yet: its first byte says which form it has
    inline_line,   // an inline command's line, up to its "\n"
    array_header,  // "*<n>", up to its "\r" and the byte after it
    bulk_header,   // "$<len>", likewise
    bulk_bytes,    // the current bulk string's bytes (bulk_left_ of them still to come)
    bulk_trailer,  // the two bytes after a bulk string (Redis steps over them unread)
  };
  std::size_t feed_inline(std::string_view input);
  std::size_t feed_header(std::string_view input);
  void end_array_header(std::string_view line);
  void end_bulk_header(std::string_view line);
  void end_inline(std::string_view line);
  void end_argument();
  void complete();
  void skip_empty();
  void fail(std::string_view text);

  ParserLimits limits_;
  State state_ = State::need_more;
  Phase phase_ = Phase::start;
  bool got_some_ = false;
  bool line_blind_ = false;  // a NUL in the current line hid its end (Redis's strchr stops there)
  bool header_cr_ = false;   // the header's "\r" was read: the next byte, whatever it is, ends it
  std::uint8_t trailer_left_ = 0;       // bytes of the bulk's trailer still to step over
  std::string error_;                   // state error: the reply text
  std::string storage_;                 // the arguments' bytes, one after the other
  std::vector<std::size_t> ends_;       // where each argument ends in storage_
  std::vector<std::string_view> args_;  // views, built when the command completes
  std::string line_;            // a partial line ("*3", "$5", an inline line) split across feeds
  std::int64_t args_left_ = 0;  // the array's elements still to read
  std::size_t bulk_left_ = 0;   // bytes of the current bulk still to read
};

}  // namespace server::resp
