// resp_parser.cc — RespParser (resp_parser.hh): Redis 7's request decoding, byte for byte, made
// incremental. What Redis 7.0 does (networking.c, processInlineBuffer and
// processMultibulkBuffer; sds.c, sdssplitargs; util.c, string2ll), and so what this does:
// - A command's first byte picks its form: '*' an array, anything else an inline line.
// - A header line ("*<n>", "$<len>") ends at its first "\r" and the one byte after it, whatever
//   that byte is (Redis finds the "\r" with strchr and steps over two bytes). An inline line ends
//   at its first "\n"; one "\r" before it is dropped.
// - A NUL byte hides the rest of the line: Redis's strchr stops at it, so the line's end is never
//   seen and the line only grows, until it is too big (a RESP array carries NULs in its bulks,
//   never in its headers).
// - A line (header or inline) of more than max_inline bytes before its end is an error: "too big
//   mbulk count string", "too big bulk count string", "too big inline request". Redis checks
//   its whole unread buffer after each read (PROTO_INLINE_MAX_SIZE, 64 KiB); here the bytes of
//   the line are counted, so the outcome does not depend on how the input was split.
// - Numbers are string2ll's: an optional '-', no '+', no leading zero, no spaces, < 21 chars.
//   "*<n>" with n <= 0 is no command (skipped); n above max_args is an invalid multibulk length
//   (Redis 7.0.15's own bound is INT_MAX). "$<len>" with len < 0 or above max_bulk is an invalid
//   bulk length. A header line that does not start with '$' where a bulk is due: "expected '$',
//   got 'c'" (a "\r" or "\n" shown as a space, as addReplyErrorFormat maps them).
// - The two bytes after a bulk's data are skipped unread (Redis does not check for "\r\n").
// - An inline line is split as sdssplitargs splits it; an unclosed quote, or a closing one
//   followed by anything but a space or the line's end, is "unbalanced quotes". A line with no
//   word in it is no command (skipped).
// Bulk bytes are copied into storage_ as they arrive (never reserved from a header's length, so
// a client's "$536870912" alone allocates nothing and held_bytes() counts what really arrived).
#include "server/resp/resp_parser.hh"

#include <algorithm>

namespace server::resp {
namespace {

constexpr std::string_view kInvalidMultibulkLength = "Protocol error: invalid multibulk length";
constexpr std::string_view kInvalidBulkLength = "Protocol error: invalid bulk length";
constexpr std::string_view kTooBigInline = "Protocol error: too big inline request";
constexpr std::string_view kTooBigMbulkCount = "Protocol error: too big mbulk count string";
constexpr std::string_view kTooBigBulkCount = "Protocol error: too big bulk count string";
constexpr std::string_view kUnbalancedQuotes = "Protocol error: unbalanced quotes in request";

// util.c's LONG_STR_SIZE: string2ll refuses a string of this many characters or more.
constexpr std::size_t kLongStrSize = 21;

// util.c string2ll: a decimal long long, strictly ("0", or an optional '-' then 1-9 then digits,
// nothing else). False when it is not one or overflows.
bool string_to_int64(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() >= kLongStrSize) return false;
  if (s == "0") {
    out = 0;
    return true;
  }
  std::size_t i = 0;
  const bool negative = s[0] == '-';
  if (negative && ++i == s.size()) return false;
  if (s[i] < '1' || s[i] > '9') return false;
  // At most 19 digits follow the sign (21 > size), so an unsigned 64-bit sum cannot wrap before
  // the 20th digit, which the checks below catch.
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const auto digit = static_cast<std::uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (negative) {
    if (v > static_cast<std::uint64_t>(INT64_MAX) + 1) return false;
    out = static_cast<std::int64_t>(0 - v);  // two's complement: -2^63 included
  } else {
    if (v > static_cast<std::uint64_t>(INT64_MAX)) return false;
    out = static_cast<std::int64_t>(v);
  }
  return true;
}

// isspace() in the C locale, which sdssplitargs uses between words and after a closing quote.
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// The byte a backslash escape in double quotes stands for: \n \r \t \b \a, else the byte itself.
char unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;
  }
}

// sds.c sdssplitargs over one inline line, appending each word's bytes to `storage` and its end
// to `ends`. False on unbalanced quotes. sdssplitargs reads a NUL-terminated string: at() gives
// the '\0' past the line's end that its *(p+1) look-aheads see, and the line's end is tested by
// position (a line never holds a NUL, see the file's comment; if one did, the split still ends).
bool split_inline_args(std::string_view line, std::string& storage,
                       std::vector<std::size_t>& ends) {
  const std::size_t size = line.size();
  const auto at = [line, size](std::size_t i) { return i < size ? line[i] : '\0'; };
  // A closing quote must be followed by a space or by nothing at all.
  const auto closes = [&](std::size_t quote) {
    return quote + 1 == size || is_space(at(quote + 1));
  };
  std::size_t p = 0;
  for (;;) {
    while (p < size && is_space(line[p])) ++p;
    if (p == size) return true;
    enum { bare, in_double, in_single } quoting = bare;
    for (bool done = false; !done; p += p < size ? 1 : 0) {
      if (p == size) {
        if (quoting != bare) return false;  // unterminated quotes
        break;
      }
      const char c = line[p];
      if (quoting == in_double) {
        if (c == '\\' && at(p + 1) == 'x' && is_hex_digit(at(p + 2)) && is_hex_digit(at(p + 3))) {
          storage.push_back(
              static_cast<char>(hex_digit_value(at(p + 2)) * 16 + hex_digit_value(at(p + 3))));
          p += 3;
        } else if (c == '\\' && p + 1 < size) {
          storage.push_back(unescape(line[++p]));
        } else if (c == '"') {
          if (!closes(p)) return false;
          done = true;
        } else {
          storage.push_back(c);
        }
      } else if (quoting == in_single) {
        if (c == '\\' && at(p + 1) == '\'') {
          storage.push_back(line[++p]);
        } else if (c == '\'') {
          if (!closes(p)) return false;
          done = true;
        } else {
          storage.push_back(c);
        }
      } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0') {
        done = true;  // ("\v" and "\f" end no word, though they are skipped between words)
      } else if (c == '"') {
        quoting = in_double;
      } else if (c == '\'') {
        quoting = in_single;
      } else {
        storage.push_back(c);
      }
    }
    ends.push_back(storage.size());
  }
}

// Releases a container's storage when a large command grew it past `bytes`.
template <typename Container>
void release_if_above(Container& c, std::size_t bytes) {
  if (c.capacity() * sizeof(typename Container::value_type) > bytes) Container().swap(c);
}

}  // namespace

std::size_t RespParser::feed(std::string_view input) {
  std::size_t used = 0;
  while (state_ == State::need_more && used < input.size()) {
    const std::string_view rest = input.substr(used);
    switch (phase_) {
      case Phase::start:
        phase_ = rest[0] == '*' ? Phase::array_header : Phase::inline_line;
        break;
      case Phase::inline_line:
        used += feed_inline(rest);
        break;
      case Phase::array_header:
      case Phase::bulk_header:
        used += feed_header(rest);
        break;
      case Phase::bulk_bytes: {
        const std::size_t n = std::min(bulk_left_, rest.size());
        storage_.append(rest.data(), n);
        used += n;
        bulk_left_ -= n;
        if (bulk_left_ == 0) phase_ = Phase::bulk_trailer;
        break;
      }
      case Phase::bulk_trailer: {
        const std::size_t n = std::min<std::size_t>(trailer_left_, rest.size());
        used += n;
        trailer_left_ = static_cast<std::uint8_t>(trailer_left_ - n);
        if (trailer_left_ == 0) end_argument();
        break;
      }
    }
  }
  got_some_ = state_ == State::need_more && phase_ != Phase::start;
  return used;
}

// An inline line's bytes up to its "\n" (included), or all of `input`.
std::size_t RespParser::feed_inline(std::string_view input) {
  std::size_t i = 0;
  for (; i < input.size(); ++i) {
    if (input[i] == '\0') line_blind_ = true;
    if (input[i] == '\n' && !line_blind_) break;
  }
  if (line_.size() + i > limits_.max_inline) {
    fail(kTooBigInline);
    return i;
  }
  if (i == input.size()) {
    line_.append(input);
    return i;
  }
  if (line_.empty()) {
    end_inline(input.substr(0, i));  // the whole line is in the input: no copy of it
  } else {
    line_.append(input.substr(0, i));
    end_inline(line_);
  }
  return i + 1;
}

// A header line's bytes up to its "\r" and the byte after it (included), or all of `input`.
std::size_t RespParser::feed_header(std::string_view input) {
  const bool array = phase_ == Phase::array_header;
  const auto end_line = [this, array](std::string_view line) {
    if (array) {
      end_array_header(line);
    } else {
      end_bulk_header(line);
    }
  };
  if (header_cr_) {  // the "\r" ended the last feed: this byte ends the line
    header_cr_ = false;
    end_line(line_);
    return 1;
  }
  std::size_t i = 0;
  for (; i < input.size(); ++i) {
    if (input[i] == '\0') line_blind_ = true;
    if (input[i] == '\r' && !line_blind_) break;
  }
  if (line_.size() + i > limits_.max_inline) {
    fail(array ? kTooBigMbulkCount : kTooBigBulkCount);
    return i;
  }
  if (i == input.size()) {
    line_.append(input);
    return i;
  }
  if (i + 1 == input.size()) {  // the "\r" is the input's last byte: wait for the one after it
    line_.append(input.substr(0, i));
    header_cr_ = true;
    return i + 1;
  }
  if (line_.empty()) {
    end_line(input.substr(0, i));
  } else {
    line_.append(input.substr(0, i));
    end_line(line_);
  }
  return i + 2;
}

void RespParser::end_array_header(std::string_view line) {
  std::int64_t n = 0;
  if (!string_to_int64(line.substr(1), n) ||
      (n > 0 && static_cast<std::uint64_t>(n) > limits_.max_args)) {
    fail(kInvalidMultibulkLength);
    return;
  }
  line_.clear();
  if (n <= 0) {  // "*0", "*-1": no command
    skip_empty();
    return;
  }
  args_left_ = n;
  phase_ = Phase::bulk_header;
}

void RespParser::end_bulk_header(std::string_view line) {
  // An empty line's first byte was its "\r"; Redis's error reply shows "\r" and "\n" as spaces.
  const char first = line.empty() ? '\r' : line[0];
  if (first != '$') {
    std::string text = "Protocol error: expected '$', got ' '";
    if (first != '\r' && first != '\n') text[text.size() - 2] = first;
    fail(text);
    return;
  }
  std::int64_t len = 0;
  if (!string_to_int64(line.substr(1), len) || len < 0 ||
      static_cast<std::uint64_t>(len) > limits_.max_bulk) {
    fail(kInvalidBulkLength);
    return;
  }
  line_.clear();
  bulk_left_ = static_cast<std::size_t>(len);
  trailer_left_ = 2;
  phase_ = bulk_left_ == 0 ? Phase::bulk_trailer : Phase::bulk_bytes;
}

void RespParser::end_inline(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!split_inline_args(line, storage_, ends_)) {
    fail(kUnbalancedQuotes);
    return;
  }
  line_.clear();
  if (ends_.empty()) {
    skip_empty();  // an empty line, or only spaces
    return;
  }
  complete();
}

void RespParser::end_argument() {
  ends_.push_back(storage_.size());
  if (--args_left_ > 0) {
    phase_ = Phase::bulk_header;
    return;
  }
  complete();
}

void RespParser::complete() {
  args_.clear();
  std::size_t begin = 0;
  for (const std::size_t end : ends_) {
    args_.emplace_back(storage_.data() + begin, end - begin);
    begin = end;
  }
  state_ = State::command;
}

void RespParser::skip_empty() {
  storage_.clear();
  ends_.clear();
  line_blind_ = false;
  phase_ = Phase::start;
}

void RespParser::fail(std::string_view text) {
  error_.assign(text);
  state_ = State::error;
}

void RespParser::next() {
  if (state_ == State::error) return;  // errors are final
  state_ = State::need_more;
  phase_ = Phase::start;
  got_some_ = false;
  line_blind_ = false;
  header_cr_ = false;
  storage_.clear();
  ends_.clear();
  args_.clear();
  line_.clear();
  release_if_above(storage_, kRetainedBytes);
  release_if_above(ends_, kRetainedBytes);
  release_if_above(args_, kRetainedBytes);
  release_if_above(line_, kRetainedBytes);
}

}  // namespace server::resp
