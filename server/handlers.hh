// handlers.hh — one function per endpoint, plus dispatch() that picks it. Handlers write their
// success response through the ResponseWriter and return a HandlerResult; an error result is
// rendered by the caller in one place (ResponseWriter::error). The value path is get_key: the
// cache hands the stored bytes to a sink that copies them straight into the output buffer.
// dispatch, get_key and head_key take the value-path policy (variant.hh) as a template
// argument: CStringValue is that zero-copy path, StringValue its baseline; the rest is shared.
#pragma once

#include <ostream>  // boost/core/detail/string_view.hpp needs it before status.hpp

#include <boost/beast/http/status.hpp>
#include <string_view>

#include "server/response_writer.hh"
#include "server/router.hh"
#include "server/server_context.hh"
#include "server/stats.hh"
#include "server/variant.hh"

namespace server {

struct HandlerResult {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string_view error;  // empty: the handler has written the response
  std::string_view allow;  // Allow header for 405
  bool ok() const { return error.empty(); }
};

// What the handlers need from the request besides the route.
struct RequestView {
  std::string_view accept;  // the Accept header (GET /key only)
  std::string_view body;    // the request body (PUT /key/{k} only)
};

// Does an Accept header ask for JSON? (case-insensitive "application/json"; q-values ignored)
bool accepts_json(std::string_view accept);

struct Handlers {
  ServerContext& ctx;
  WorkerStats& stats;

  template <class ValuePath>
  HandlerResult dispatch(const Route& route, const RequestView& request, ResponseWriter& out);

  template <class ValuePath>
  HandlerResult get_key(std::string_view raw_key, bool json, ResponseWriter& out);
  HandlerResult put_key(std::string_view raw_key, std::string_view value, ResponseWriter& out);
  HandlerResult put_key_path(std::string_view raw_key, std::string_view raw_value,
                             ResponseWriter& out);
  HandlerResult delete_key(std::string_view raw_key, ResponseWriter& out);
  template <class ValuePath>
  HandlerResult head_key(std::string_view raw_key, ResponseWriter& out);
  HandlerResult head_root(ResponseWriter& out);
  HandlerResult reset(ResponseWriter& out);
  HandlerResult stats_json(ResponseWriter& out);
};

}  // namespace server
