// request_view.hh — what a handler sees of a request besides its route (RequestView), and the
// names in its path (decode_name). Shared by the key handlers (handlers.hh) and the board
// handlers (board_handlers.hh), so that neither includes the other.
#pragma once

#include <array>
#include <cstring>
#include <string_view>

#include "cache/cache.hh"
#include "server/api/percent_decode.hh"
#include "server/transport/handler_result.hh"

namespace server {

class ResponseQueue;

// What the handlers need from the request besides the route.
struct RequestView {
  std::string_view accept;             // the Accept header (GET /key only)
  std::string_view body;               // the request body (PUT /key/{k} only)
  ResponseQueue* responses = nullptr;  // where a response that waits on the store is queued
  // Key routes only (collect_key_headers, http_engine.cc): the query (a PUT's ttl) and the
  // headers of expiry and conditional requests, each with whether it was sent at all.
  std::string_view query;
  std::string_view if_match, if_none_match, cache_control;
  bool has_if_match = false, has_if_none_match = false;
  // POST /reset only: the Authorization header (the admin token), and whether it was sent.
  std::string_view authorization;
  bool has_authorization = false;
};

// A name in the path — a key, a board or a member — percent-decoded into `storage`: 1..250
// bytes (cache::kMaxKeyBytes), any byte. On failure `error` holds the result to return: 400 for
// an empty name or a bad encoding, 414 for a long one (its reason names what was named).
enum class NameKind { key, board, member };
using NameBuffer = std::array<char, cache::kMaxKeyBytes>;
struct DecodedName {
  std::string_view name;  // in the caller's NameBuffer
  HandlerResult error;
};

namespace detail {
// The reasons decode_name gives, per kind of name (static: HandlerResult holds a view).
struct NameErrors {
  std::string_view empty;
  std::string_view too_long;
};
constexpr NameErrors name_errors(NameKind kind) {
  switch (kind) {
    case NameKind::board:
      return {"empty board name", "board name longer than 250 bytes"};
    case NameKind::member:
      return {"empty member name", "member name longer than 250 bytes"};
    case NameKind::key:
      break;
  }
  return {"empty key", "key longer than 250 bytes"};
}
}  // namespace detail

// Inlined where it is called: the GET hit decodes its key here, its kind known.
[[gnu::always_inline]] inline DecodedName decode_name(std::string_view raw, NameBuffer& storage,
                                                      NameKind kind) {
  using boost::beast::http::status;
  const detail::NameErrors reasons = detail::name_errors(kind);
  if (raw.empty()) return {{}, fail(status::bad_request, reasons.empty)};
  // Most names carry no escape: then the raw bytes (in the request, which outlives the handler)
  // are the name, not copied (callgrind: ~40 of a pipelined GET hit's ~2,600 instructions).
  if (raw.size() <= storage.size() && std::memchr(raw.data(), '%', raw.size()) == nullptr) {
    return {raw, {}};
  }
  const DecodeResult r = percent_decode(raw, storage);
  switch (r.status) {
    case DecodeStatus::bad_encoding:
      return {{}, fail(status::bad_request, "invalid percent-encoding")};
    case DecodeStatus::too_long:
      return {{}, fail(status::uri_too_long, reasons.too_long)};
    case DecodeStatus::ok:
      break;
  }
  if (r.size == 0) return {{}, fail(status::bad_request, reasons.empty)};
  return {std::string_view(storage.data(), r.size), {}};
}

}  // namespace server
