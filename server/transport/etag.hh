// etag.hh — a key's strong ETag and the If-Match / If-None-Match lists compared against it
// (docs/api.md, "Versions and conditional requests").
//
// The ETag names the cache item's version (cache/entry.hh: a new one on every write of the key)
// and the process: "<boot>-<version>", both lowercase hex, where boot is a random 32-bit number
// drawn at start. So an ETag from before a restart never matches after it (versions start again
// at 1), and ETags change across a restart (documented). Parsing keeps only the tags this
// process could have made: its boot and a version of at most kMaxEtagVersion. Any other
// well-formed tag is a tag that matches nothing (a version over 47 bits among them: no item has
// one, and the durable tier's "exists, version unknowable" is such a version, which a forged
// tag must never stand for: common/preconditions.hh, kUnknowable).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/preconditions.hh"

namespace server {

// The parsed If-Match / If-None-Match lists and the largest version a tag names live with the
// version tests (common/preconditions.hh): the tier keeps them without depending on the server.
using common::EtagList;
using common::kMaxEtagVersion;
using common::Preconditions;

// The longest ETag header line: `ETag: `, quotes, 8 hex digits, '-', up to 16 hex digits, CRLF.
inline constexpr std::size_t kEtagLineMax = 6 + 1 + 8 + 1 + 16 + 1 + 2;
// Room for one rendered ETag header line (the tag alone fits too).
using EtagBuffer = std::array<char, 40>;
static_assert(kEtagLineMax <= sizeof(EtagBuffer));

class Etags {
 public:
  explicit Etags(std::uint32_t boot);
  // A random boot number (std::random_device).
  static Etags random();

  // The ETag header's value for `version` ("\"<boot>-<version>\""), rendered into buf.
  std::string_view format(std::uint64_t version, EtagBuffer& buf) const;
  // The whole header line, "ETag: \"<boot>-<version>\"\r\n": what a GET hit appends. The
  // fixed part is rendered once, at construction (callgrind: format() plus a header() of four
  // appends were ~240 instructions per hit; this is one copy and the hex digits).
  std::string_view header_line(std::uint64_t version, EtagBuffer& buf) const;
  // The same line written at p (room for kEtagLineMax bytes); returns its end. The GET hit's
  // fused head (ResponseWriter::ok_octet_stream) writes it in place.
  char* write_header_line(char* p, std::uint64_t version) const;
  // Parses a header's value: "*" or a comma-separated list of entity-tags (RFC 9110 8.8.3).
  // false on a syntax error (the request is then answered 400).
  bool parse(std::string_view header, EtagList& out) const;

 private:
  // Writes "\"<boot>-<version hex>\"" at p; returns the end.
  char* write_tag(char* p, std::uint64_t version) const;

  std::uint32_t boot_;
  std::array<char, 16> line_prefix_{};  // `ETag: "<boot>-`
};

}  // namespace server
