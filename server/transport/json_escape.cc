// json_escape.cc — see json_escape.hh. One scanner drives both the size pass and the write
// pass, so the Content-Length written before a JSON body always matches the body.
#include "server/transport/json_escape.hh"

#include <cstdint>

namespace server {
namespace {

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if the byte there does not
// start one. Follows the Unicode table of well-formed byte sequences (no overlongs, no
// surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(s[k]); };
  const std::uint8_t b0 = byte(i);
  const std::size_t left = s.size() - i;
  auto cont = [&](std::size_t k, std::uint8_t lo = 0x80, std::uint8_t hi = 0xBF) {
    return k < left && byte(i + k) >= lo && byte(i + k) <= hi;
  };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (b0 == 0xF0) return cont(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

constexpr char kHex[] = "0123456789abcdef";

// Calls emit(std::string_view piece) for each output piece.
template <class Emit>
void escape(std::string_view s, Emit&& emit) {
  std::size_t run_start = 0;  // start of a run of bytes copied verbatim
  std::size_t i = 0;
  auto flush = [&](std::size_t end) {
    if (end > run_start) emit(s.substr(run_start, end - run_start));
  };
  while (i < s.size()) {
    const auto b = static_cast<std::uint8_t>(s[i]);
    char buf[6];
    std::string_view piece;
    if (b >= 0x20 && b < 0x80 && b != '"' && b != '\\') {
      ++i;
      continue;
    }
    if (b >= 0x80) {
      std::size_t len = utf8_sequence_length(s, i);
      if (len > 0) {
        i += len;
        continue;
      }
      buf[0] = '\\';
      buf[1] = 'u';
      buf[2] = 'd';
      buf[3] = 'c';
      buf[4] = kHex[b >> 4];
      buf[5] = kHex[b & 0xF];
      piece = std::string_view(buf, 6);
    } else if (b == '"') {
      piece = "\\\"";
    } else if (b == '\\') {
      piece = "\\\\";
    } else if (b == '\n') {
      piece = "\\n";
    } else if (b == '\r') {
      piece = "\\r";
    } else if (b == '\t') {
      piece = "\\t";
    } else if (b == '\b') {
      piece = "\\b";
    } else if (b == '\f') {
      piece = "\\f";
    } else {
      buf[0] = '\\';
      buf[1] = 'u';
      buf[2] = '0';
      buf[3] = '0';
      buf[4] = kHex[b >> 4];
      buf[5] = kHex[b & 0xF];
      piece = std::string_view(buf, 6);
    }
    flush(i);
    emit(piece);
    ++i;
    run_start = i;
  }
  flush(i);
}

}  // namespace

std::size_t json_escaped_size(std::string_view bytes) {
  std::size_t n = 0;
  escape(bytes, [&](std::string_view piece) { n += piece.size(); });
  return n;
}

void json_escape_append(std::string_view bytes, std::string& out) {
  escape(bytes, [&](std::string_view piece) { out.append(piece); });
}

}  // namespace server
