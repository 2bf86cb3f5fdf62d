// percent_decode.hh — RFC 3986 percent-decoding of one path segment into a caller-owned buffer.
// No allocation: the GET-hit path decodes the key into a stack array. '+' is a plain byte here
// (this is a path, not a form), and any decoded byte is allowed, including '/', NUL and non-UTF-8.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace server {

enum class DecodeStatus {
  ok,
  bad_encoding,  // '%' not followed by two hex digits
  too_long,      // the decoded bytes do not fit in the output buffer
};

struct DecodeResult {
  DecodeStatus status;
  std::size_t size;  // decoded bytes written (valid when status == ok)
};

DecodeResult percent_decode(std::string_view encoded, std::span<char> out);

}  // namespace server
