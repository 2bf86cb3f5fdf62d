// percent_decode.cc — see percent_decode.hh.
#include "server/api/percent_decode.hh"

namespace server {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

DecodeResult percent_decode(std::string_view encoded, std::span<char> out) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    char c = encoded[i];
    if (c == '%') {
      if (encoded.size() - i < 3) return {DecodeStatus::bad_encoding, 0};
      int hi = hex_value(encoded[i + 1]);
      int lo = hex_value(encoded[i + 2]);
      if (hi < 0 || lo < 0) return {DecodeStatus::bad_encoding, 0};
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (n == out.size()) return {DecodeStatus::too_long, 0};
    out[n++] = c;
  }
  return {DecodeStatus::ok, n};
}

}  // namespace server
