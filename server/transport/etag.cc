// etag.cc — see etag.hh.
#include "server/transport/etag.hh"

#include <bit>
#include <charconv>
#include <cstring>
#include <random>

#include "cache/entry.hh"
#include "server/transport/http_ows.hh"

namespace server {

static_assert(kMaxEtagVersion == cache::detail::kMaxVersion, "an ETag names any cache version");

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// etagc: %x21 / %x23-7E / obs-text (RFC 9110 8.8.3)
bool is_etagc(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == 0x21 || (u >= 0x23 && u != 0x7f);
}
bool parse_hex(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Etags::Etags(std::uint32_t boot) : boot_(boot) {
  constexpr std::string_view name = "ETag: \"";
  name.copy(line_prefix_.data(), name.size());
  char* p = line_prefix_.data() + name.size();
  for (int shift = 28; shift >= 0; shift -= 4) *p++ = kHexDigits[(boot_ >> shift) & 0xf];
  *p = '-';
}

Etags Etags::random() {
  std::random_device rd;
  return Etags(static_cast<std::uint32_t>(rd()));
}

namespace {
// The version's hex digits, most significant first, and the closing quote; returns the end.
char* write_version(char* p, std::uint64_t version) {
  const int digits = version == 0 ? 1 : (64 - std::countl_zero(version) + 3) / 4;
  for (int i = digits - 1; i >= 0; --i) {
    p[i] = kHexDigits[version & 0xf];
    version >>= 4;
  }
  p += digits;
  *p++ = '"';
  return p;
}
}  // namespace

char* Etags::write_tag(char* p, std::uint64_t version) const {
  // `"<boot>-` is the prefix's tail.
  constexpr std::size_t name = 6;  // `ETag: `
  std::memcpy(p, line_prefix_.data() + name, line_prefix_.size() - name);
  return write_version(p + line_prefix_.size() - name, version);
}

std::string_view Etags::format(std::uint64_t version, EtagBuffer& buf) const {
  const char* end = write_tag(buf.data(), version);
  return {buf.data(), static_cast<std::size_t>(end - buf.data())};
}

char* Etags::write_header_line(char* p, std::uint64_t version) const {
  std::memcpy(p, line_prefix_.data(), line_prefix_.size());
  p = write_version(p + line_prefix_.size(), version);
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

std::string_view Etags::header_line(std::uint64_t version, EtagBuffer& buf) const {
  const char* end = write_header_line(buf.data(), version);
  return {buf.data(), static_cast<std::size_t>(end - buf.data())};
}

bool Etags::parse(std::string_view header, EtagList& out) const {
  out = EtagList{};
  header = trim_ows(header);
  if (header == "*") {
    out.any = true;
    return true;
  }
  bool any_tag = false;
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view item = trim_ows(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    if (item.empty()) continue;  // RFC 9110 5.6.1: empty list elements are ignored
    bool weak = false;
    if (item.starts_with("W/")) {
      weak = true;
      item.remove_prefix(2);
    }
    if (item.size() < 2 || item.front() != '"' || item.back() != '"') return false;
    const std::string_view opaque = item.substr(1, item.size() - 2);
    for (char c : opaque) {
      if (!is_etagc(c)) return false;
    }
    any_tag = true;
    // Ours: exactly 8 hex digits of our boot number, '-', the version in hex, at most
    // kMaxEtagVersion (a larger one, all ones above all, is not a version: it would otherwise
    // compare equal to Preconditions::kUnknowable).
    const std::size_t dash = opaque.find('-');
    std::uint64_t boot = 0, version = 0;
    if (dash == 8 && parse_hex(opaque.substr(0, 8), boot) && boot == boot_ &&
        parse_hex(opaque.substr(9), version) && version <= kMaxEtagVersion) {
      out.tags.push_back({version, weak});
    }
  }
  return any_tag;
}

}  // namespace server
