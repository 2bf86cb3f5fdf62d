// response_writer.hh — renders HTTP/1.1 responses straight into the connection's reused output
// buffer (no Beast serializer, no header container, no allocation once the buffer is warm).
//
// Per request the engine calls begin_request() with what it knows about the connection; the
// writer then adds the Date header (http_date.hh) to every response, the Connection header when
// needed and the Space-Used header on every HEAD response, and drops bodies of HEAD responses.
// error() is the one place that renders the JSON error body {"error": "<reason>"}.
#pragma once

#include <ostream>  // boost/core/detail/string_view.hpp needs it before status.hpp

#include <boost/beast/http/status.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "server/transport/etag.hh"
#include "server/transport/inflight_budget.hh"

namespace server {

inline constexpr std::string_view kOctetStream = "application/octet-stream";
inline constexpr std::string_view kJson = "application/json";
// Room for a response's status line and headers (ETag, Cache-Control, Date, Connection, an
// --served-by line of at most 255 bytes): what admit() reserves beside a large body.
inline constexpr std::size_t kResponseHeadRoom = 1024;

class ResponseWriter {
 public:
  using status = boost::beast::http::status;

  explicit ResponseWriter(std::string& out) : out_(&out) {}

  // Renders into another buffer from now on (a queued response, response_queue.hh).
  void retarget(std::string& out) { out_ = &out; }

  // keep_alive: the connection stays open after this response.
  // http10: the request was HTTP/1.0 (keep-alive must then be announced).
  // head: the request was HEAD; space_used is then sent as Space-Used.
  void begin_request(bool keep_alive, bool http10, bool head, std::size_t space_used) {
    keep_alive_ = keep_alive;
    http10_ = http10;
    head_ = head;
    space_used_ = space_used;
    plain_ = keep_alive && !http10 && !head && served_by_.empty();
  }
  bool keep_alive() const { return keep_alive_; }
  bool head() const { return head_; }
  bool http10() const { return http10_; }
  std::size_t space_used() const { return space_used_; }

  // Status line, Content-Type (if not empty) and Content-Length (except for 204 and 304).
  void start(status s, std::string_view content_type, std::size_t content_length);
  void header(std::string_view name, std::string_view value);
  void header(std::string_view name, std::uint64_t value);
  // The common GET hit's whole response: 200, Content-Type: application/octet-stream,
  // Content-Length, the item's ETag, Date, the blank line and the value, in one append of a
  // stack buffer (a large value: a second append). Only for a plain() request; the bytes are
  // those of start() + header_line() + end_headers() + body() (callgrind: ~310 instructions
  // that way, each std::string::append ~30 of them).
  void ok_octet_stream(std::string_view value, const Etags& etags, std::uint64_t version);
  // keep-alive HTTP/1.1, not HEAD, no --served-by line: end_headers() adds Date alone.
  bool plain() const { return plain_; }
  // A complete header line, "Name: value\r\n", rendered by the caller (Etags::header_line).
  void header_line(std::string_view line) { out_->append(line); }
  void end_headers();  // Date, Connection / Space-Used as needed, then the blank line
  void body(std::string_view bytes) {
    if (!head_) out_->append(bytes);
  }
  std::string& buffer() { return *out_; }

  // --max-inflight: before rendering a body of n bytes, a handler asks; false (nothing charged)
  // when the budget has no room, and the handler answers 503 instead. Bodies of at most
  // kUnchargedBytes, and a writer with no budget (set_budget), are always admitted. An admitted
  // large body gets its room in the buffer at once (with kResponseHeadRoom for the head): a
  // JSON body, escaped piece by piece, would otherwise grow the buffer by doubling, copying
  // what it holds each time and keeping up to twice its size.
  bool admit(std::size_t n) {
    if (n <= kUnchargedBytes) return true;
    if (budget_ != nullptr) {
      if (!budget_->try_add(n)) return false;
      admitted_ += n;
    }
    out_->reserve(out_->size() + kResponseHeadRoom + n);
    return true;
  }
  void set_budget(InflightBudget* budget) { budget_ = budget; }
  // --served-by: a complete header line added to every response (empty: none).
  void set_served_by(std::string_view line) { served_by_ = line; }
  // What admit() charged since the last call (the engine adds it to what it holds).
  std::size_t take_admitted() { return std::exchange(admitted_, 0); }

  void no_content(status s);  // a complete response without a body (204, 200 for HEAD /)
  void error(status s, std::string_view reason, std::string_view allow = {});

 private:
  std::string* out_;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_ = false;
  bool plain_ = false;
  std::size_t space_used_ = 0;
  std::string_view served_by_;
  InflightBudget* budget_ = nullptr;
  std::size_t admitted_ = 0;
};

}  // namespace server
