// resp.cc — see resp.hh.
#include "client/resp.hh"

#include <charconv>

#include "common/decimal.hh"

namespace client {

namespace {

constexpr std::size_t kMaxLineBytes = 64 * 1024;
constexpr std::uint64_t kMaxBulkBytes = 512ull * 1024 * 1024;

void append_bulk(std::string& out, std::string_view s) {
  out += '$';
  common::append_decimal(out, s.size());
  out += "\r\n";
  out += s;
  out += "\r\n";
}

// The signed decimal of a type line's text ("-1", "42"); false when it is not one.
bool parse_signed(std::string_view text, std::int64_t& v) {
  if (text.empty() || text.size() > 20) return false;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc{} && p == text.data() + text.size();
}

}  // namespace

void append_resp_command(std::string& out, std::initializer_list<std::string_view> args) {
  out += '*';
  common::append_decimal(out, args.size());
  out += "\r\n";
  for (std::string_view a : args) append_bulk(out, a);
}

void append_resp_key_command(std::string& out, OpType type, std::string_view key,
                             std::string_view value, std::uint32_t ttl_seconds) {
  switch (type) {
    case OpType::kGet:
      out += "*2\r\n$3\r\nGET\r\n";
      append_bulk(out, key);
      return;
    case OpType::kSet:
      out += ttl_seconds != 0 ? "*5\r\n$3\r\nSET\r\n" : "*3\r\n$3\r\nSET\r\n";
      append_bulk(out, key);
      append_bulk(out, value);
      if (ttl_seconds != 0) {
        out += "$2\r\nEX\r\n";
        std::string ttl;
        common::append_decimal(ttl, ttl_seconds);
        append_bulk(out, ttl);
      }
      return;
    case OpType::kDelete:
      out += "*2\r\n$3\r\nDEL\r\n";
      append_bulk(out, key);
      return;
    case OpType::kBoardSet:
    case OpType::kBoardTop:
    case OpType::kBoardScore:
      return;  // no RESP form (resp.hh): rejected with the workload
  }
}

ParseResult frame_resp_reply(std::string_view data, RespFrame& out) {
  out = RespFrame{};
  const std::size_t eol = data.find("\r\n");
  if (eol == std::string_view::npos) {
    return data.size() > kMaxLineBytes ? ParseResult::kBad : ParseResult::kNeedMore;
  }
  if (eol == 0 || eol > kMaxLineBytes) return ParseResult::kBad;
  const std::string_view text = data.substr(1, eol - 1);
  out.head_bytes = eol + 2;
  std::int64_t n = 0;
  switch (data[0]) {
    case '$':
      if (text == "-1") {  // nil
        out.status = 404;
        return ParseResult::kComplete;
      }
      if (text[0] == '-' || !parse_signed(text, n) || n > static_cast<std::int64_t>(kMaxBulkBytes))
        return ParseResult::kBad;
      out.status = 200;
      out.body_bytes = static_cast<std::uint64_t>(n);
      out.trailer_bytes = 2;
      // As much of the payload's CRLF as is here is checked (all of it once the bulk is whole).
      if (const std::uint64_t end = out.head_bytes + out.body_bytes; data.size() > end) {
        const std::string_view trailer = data.substr(static_cast<std::size_t>(end), 2);
        if (trailer != std::string_view("\r\n", trailer.size())) return ParseResult::kBad;
      }
      return ParseResult::kComplete;
    case '*':  // only the null array (RESP2's other nil) is an answer to a key command
      if (text != "-1") return ParseResult::kBad;
      out.status = 404;
      return ParseResult::kComplete;
    case '+':
      out.status = 200;
      out.line = text;
      return ParseResult::kComplete;
    case '-':
      out.status = 500;
      out.line = text;
      return ParseResult::kComplete;
    case ':':
      if (!parse_signed(text, n)) return ParseResult::kBad;
      out.status = n == 0 ? 404 : 200;
      return ParseResult::kComplete;
    default:
      return ParseResult::kBad;
  }
}

}  // namespace client
