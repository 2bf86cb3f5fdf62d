// response_writer.cc — see response_writer.hh.
#include "server/transport/response_writer.hh"

#include <array>
#include <cassert>
#include <charconv>
#include <cstring>

#include "server/transport/http_date.hh"
#include "server/transport/json_escape.hh"

namespace server {
namespace http = boost::beast::http;

namespace {
constexpr std::size_t kHttpDateLineSize = 6 + kHttpDateSize + 2;  // "Date: <date>\r\n"
}  // namespace

// A GET hit's status line and fixed headers, precomputed: they are the same for every hit, and
// the profile of pipelined GETs (optimizations/README.md) put start() and header() at ~15% of
// the user-space instructions per request when they were assembled piece by piece.
constexpr std::string_view kOkOctetStreamHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: ";

void ResponseWriter::start(status s, std::string_view content_type, std::size_t content_length) {
  if (s == status::ok && content_type == kOctetStream) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, content_length);
    (void)ec;
    out_->append(kOkOctetStreamHead);
    out_->append(digits, end);
    out_->append("\r\n");
    return;
  }
  char code[8];
  auto [end, ec] = std::to_chars(code, code + sizeof code, static_cast<unsigned>(s));
  (void)ec;
  out_->append("HTTP/1.1 ");
  out_->append(code, end);
  out_->push_back(' ');
  const auto reason = http::obsolete_reason(s);
  out_->append(reason.data(), reason.size());
  out_->append("\r\n");
  if (!content_type.empty()) header("Content-Type", content_type);
  // 204 and 304 have no body and say nothing of one (RFC 9110 8.6: a 304's Content-Length
  // would have to be the 200's).
  if (s != status::no_content && s != status::not_modified) {
    header("Content-Length", static_cast<std::uint64_t>(content_length));
  }
}

void ResponseWriter::ok_octet_stream(std::string_view value, const Etags& etags,
                                     std::uint64_t version) {
  // Values up to kInline bytes go out with the head in one append.
  constexpr std::size_t kInline = 512;
  constexpr std::size_t kHeadMax =
      kOkOctetStreamHead.size() + 20 + 2 + kEtagLineMax + kHttpDateLineSize + 2;
  std::array<char, kHeadMax + kInline> buf;
  char* p = buf.data();
  std::memcpy(p, kOkOctetStreamHead.data(), kOkOctetStreamHead.size());
  p += kOkOctetStreamHead.size();
  p = std::to_chars(p, p + 20, value.size()).ptr;
  std::memcpy(p, "\r\n", 2);
  p = etags.write_header_line(p + 2, version);
  const std::string_view date = http_date_line();
  assert(date.size() == kHttpDateLineSize);
  std::memcpy(p, date.data(), kHttpDateLineSize);
  std::memcpy(p + kHttpDateLineSize, "\r\n", 2);
  p += kHttpDateLineSize + 2;
  if (value.size() <= kInline) {
    std::memcpy(p, value.data(), value.size());
    out_->append(buf.data(), static_cast<std::size_t>(p - buf.data()) + value.size());
    return;
  }
  out_->append(buf.data(), static_cast<std::size_t>(p - buf.data()));
  out_->append(value);
}

void ResponseWriter::header(std::string_view name, std::string_view value) {
  out_->append(name);
  out_->append(": ");
  out_->append(value);
  out_->append("\r\n");
}

void ResponseWriter::header(std::string_view name, std::uint64_t value) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  (void)ec;
  header(name, std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

void ResponseWriter::end_headers() {
  out_->append(http_date_line());
  if (!keep_alive_) {
    out_->append("Connection: close\r\n");
  } else if (http10_) {
    out_->append("Connection: keep-alive\r\n");
  }
  if (head_) header("Space-Used", static_cast<std::uint64_t>(space_used_));
  if (!served_by_.empty()) out_->append(served_by_);
  out_->append("\r\n");
}

void ResponseWriter::no_content(status s) {
  start(s, {}, 0);
  end_headers();
}

void ResponseWriter::error(status s, std::string_view reason, std::string_view allow) {
  constexpr std::string_view open = "{\"error\": \"";
  constexpr std::string_view close = "\"}";
  start(s, kJson, open.size() + json_escaped_size(reason) + close.size());
  if (!allow.empty()) header("Allow", allow);
  end_headers();
  if (head_) return;
  out_->append(open);
  json_escape_append(reason, *out_);
  out_->append(close);
}

}  // namespace server
