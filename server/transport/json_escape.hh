// json_escape.hh — JSON string escaping for arbitrary bytes, reversible for non-UTF-8 input.
//
// Valid UTF-8 passes through unchanged (except '"', '\\' and control characters, which get the
// usual JSON escapes). Each byte that is not part of a valid UTF-8 sequence (stray continuation
// bytes, truncated or overlong sequences, encoded surrogates, > U+10FFFF) is written as the lone
// low surrogate \uDCxx, xx = the byte: Python's "surrogateescape" convention. Lone surrogates are
// never valid text, so the mapping cannot collide with real characters and is exactly
// reversible: json.loads(s).encode("utf-8", "surrogateescape") gives the original bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace server {

// Exact number of bytes json_escape_append would add (no quotes).
std::size_t json_escaped_size(std::string_view bytes);

// Appends the escaped form of `bytes` (without surrounding quotes) to `out`.
void json_escape_append(std::string_view bytes, std::string& out);

}  // namespace server
