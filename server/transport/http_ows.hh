// http_ows.hh — optional whitespace (OWS, RFC 9110 5.6.3: spaces and horizontal tabs) trimmed
// from both ends of a header list element or parameter: the one way the header parsers that
// read lists by hand (etag.cc's If-Match / If-None-Match, ttl.cc's Cache-Control) do it.
#pragma once

#include <string_view>

namespace server {

inline std::string_view trim_ows(std::string_view s) {
  const auto ows = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && ows(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace server
