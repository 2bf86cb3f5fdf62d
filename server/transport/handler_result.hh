// handler_result.hh — what a handler returns: success (it wrote the response), an error for the
// engine to render in one place (ResponseWriter::error), or "deferred" (the store will finish it).
#pragma once

#include <ostream>  // boost/core/detail/string_view.hpp needs it before status.hpp

#include <boost/beast/http/status.hpp>
#include <string_view>

namespace server {

struct HandlerResult {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string_view error;  // empty: the handler has written the response (or deferred it)
  std::string_view allow;  // Allow header for 405
  bool deferred = false;   // the response slot was handed to the store (response_queue.hh)
  bool ok() const { return error.empty(); }
};

// What a handler returns once it has handed its response slot to the store.
inline constexpr HandlerResult kDeferred{boost::beast::http::status::ok, {}, {}, true};

// An error for the engine to render; reason must outlive the request (a literal, usually).
inline HandlerResult fail(boost::beast::http::status s, std::string_view reason) {
  return {s, reason, {}};
}

}  // namespace server
