// request_parser.hh — the server's request parser: Beast's basic_parser<true>, which does the
// parsing, the framing (Content-Length, chunked) and the limits, with callbacks that keep only
// what the engine and the handlers read (Beast's documented "custom parser" route).
//
// Beast's request_parser builds a whole basic_fields container (an allocation per field, then
// a search for every header asked for): in callgrind that was ~370 of a pipelined GET hit's
// ~2,600 instructions, for the few headers the server ever looks at. Here each field is one
// table lookup on the name Beast has already recognised; the values kept are copied (Beast's
// views are valid only during the callback) into a Request owned by the connection and reused
// request after request, so a warm connection parses without allocating. The target alone stays
// a view into the input until the engine's consume() returns (Request::own()). The parser object
// itself is rebuilt in place per request (basic_parser cannot be reset); it holds no storage.
//
// A header sent twice: the first is kept (present() says whether it was sent at all), except
// that Transfer-Encoding is counted (the engine refuses more than one) and Cache-Control's lines
// are joined with ", " (RFC 9110 5.3: several lines of a list field are one line, the values
// joined): its directives are read as one list (ttl.cc), so a max-age on a second line counts,
// and two max-ages disagree whether sent on one line or two.
#pragma once

#include <ostream>  // boost/core/detail/string_view.hpp needs it before Beast's headers

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/optional.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace server {

// One header the server reads: the first instance's value (or, for a list field, every
// instance's joined), and whether it was sent at all.
class KeptHeader {
 public:
  void keep(std::string_view v) {
    if (present_) return;
    value_.assign(v.data(), v.size());
    present_ = true;
  }
  // A list field's next line: appended after ", " (an empty value, an empty list element, adds
  // nothing: RFC 9110 5.6.1). Bounded by the parser's header limit, as the lines are.
  void join(std::string_view v) {
    if (!present_) return keep(v);
    if (v.empty()) return;
    if (!value_.empty()) value_ += ", ";
    value_.append(v.data(), v.size());
  }
  void forget() { present_ = false; }  // keeps the storage
  bool present() const { return present_; }
  std::string_view value() const {
    return present_ ? std::string_view(value_) : std::string_view();
  }

 private:
  std::string value_;
  bool present_ = false;
};

// What the server reads of one request. Owned by the connection's engine; its strings keep
// their capacity from one request to the next.
struct Request {
  static constexpr std::uint64_t kBodyReserveCap = 64 * 1024;

  Request() = default;
  Request(const Request&) = delete;  // target may point into the object itself
  Request& operator=(const Request&) = delete;

  boost::beast::http::verb method = boost::beast::http::verb::unknown;
  unsigned version = 0;  // 10 for HTTP/1.0, 11 for HTTP/1.1
  // Into the input the parser was given (not copied: a GET is answered from the same input in
  // the same consume(), and the copy was ~60 of its instructions) until own() copies it.
  std::string_view target;
  KeptHeader accept, if_match, if_none_match, cache_control, authorization;
  unsigned transfer_encodings = 0;    // Transfer-Encoding fields sent
  bool first_coding_chunked = false;  // the first Transfer-Encoding field is exactly "chunked"
  bool expect_continue = false;       // the first Expect field is "100-continue"
  bool has_expect = false;
  std::string body;  // bounded by the parser's body_limit (--max-value)

  // The input is about to go (the engine's consume() returns with this request unanswered):
  // from now on the target is in storage of its own. The headers kept are copied as they come
  // (Beast hands a folded value over in a buffer of its own that dies with the callback).
  void own() {
    if (target.empty() || target.data() == target_storage_.data()) return;
    target_storage_.assign(target.data(), target.size());
    target = target_storage_;
  }

  // Before a request: forgets the last one's headers and body, keeps the storage.
  void clear() {
    target = {};
    accept.forget();
    if_match.forget();
    if_none_match.forget();
    cache_control.forget();
    authorization.forget();
    transfer_encodings = 0;
    first_coding_chunked = false;
    expect_continue = false;
    has_expect = false;
    body.clear();
  }

 private:
  std::string target_storage_;
};

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  // Parses into `request`, which must outlive the parser; clears it first.
  explicit RequestParser(Request& request) : request_(request) { request_.clear(); }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::beast::error_code;
  using field = boost::beast::http::field;

  static std::string_view std_view(string_view s) { return {s.data(), s.size()}; }

  void on_request_impl(boost::beast::http::verb method, string_view, string_view target,
                       int version, error_code&) override {
    request_.method = method;
    request_.target = std_view(target);  // into the input: Request::own()
    request_.version = static_cast<unsigned>(version);
  }
  void on_response_impl(int, string_view, int, error_code&) override {}  // requests only

  // The headers kept as they are, by name: the first of each, or every line joined (`joined`:
  // Cache-Control); and for every field, its 1-based place in kKept or 0 (one load per field
  // instead of a search).
  struct Kept {
    field name;
    KeptHeader Request::*header;
    bool joined;
  };
  static constexpr Kept kKept[] = {{field::accept, &Request::accept, false},
                                   {field::if_match, &Request::if_match, false},
                                   {field::if_none_match, &Request::if_none_match, false},
                                   {field::cache_control, &Request::cache_control, true},
                                   {field::authorization, &Request::authorization, false}};
  static constexpr std::array<std::uint8_t, 512> kKeptSlot = [] {
    std::array<std::uint8_t, 512> slot{};
    for (std::size_t i = 0; i < std::size(kKept); ++i) {
      slot[static_cast<std::size_t>(kKept[i].name)] = static_cast<std::uint8_t>(i + 1);
    }
    return slot;
  }();
  static_assert(static_cast<std::size_t>(field::xref) < kKeptSlot.size(), "every field has a slot");

  void on_field_impl(field name, string_view, string_view value, error_code&) override {
    const auto f = static_cast<std::size_t>(name);
    if (f < kKeptSlot.size() && kKeptSlot[f] != 0) {
      const Kept& kept = kKept[kKeptSlot[f] - 1];
      KeptHeader& header = request_.*kept.header;
      return kept.joined ? header.join(std_view(value)) : header.keep(std_view(value));
    }
    if (name == field::transfer_encoding) {
      if (request_.transfer_encodings++ == 0) {
        request_.first_coding_chunked = boost::beast::iequals(value, "chunked");
      }
    } else if (name == field::expect && !request_.has_expect) {
      request_.has_expect = true;
      request_.expect_continue = boost::beast::iequals(value, "100-continue");
    }
  }
  void on_header_impl(error_code&) override {}

  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    request_.body.clear();
    // The parser has already checked length against body_limit. Reserve only up to a cap: a
    // declared length costs nothing until the bytes actually arrive.
    if (length) {
      request_.body.reserve(
          static_cast<std::size_t>(std::min<std::uint64_t>(*length, Request::kBodyReserveCap)));
    }
  }
  std::size_t on_body_impl(string_view bytes, error_code&) override {
    request_.body.append(bytes.data(), bytes.size());
    return bytes.size();
  }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view bytes, error_code& ec) override {
    return on_body_impl(bytes, ec);
  }
  void on_finish_impl(error_code&) override {}

  Request& request_;
};

}  // namespace server
