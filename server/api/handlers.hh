// handlers.hh — one function per endpoint, plus dispatch() that picks it. Handlers write their
// success response through the ResponseWriter and return a HandlerResult; an error result is
// rendered by the caller in one place (ResponseWriter::error). The value path is get_key: the
// cache hands the stored bytes to a sink that copies them straight into the output buffer.
// dispatch, get_key and head_key take the value-path policy (variant.hh) as a template
// argument: CStringValue is that zero-copy path, StringValue its baseline; the rest is shared.
// Handlers decode and render; the services decide (ctx.key_service: key_service.hh;
// ctx.board_service: board_service.hh). A service answers a handler's Reply (reply.hh) now or
// later: a miss, a write-through write and a reset wait on the store, and the handler returns
// kDeferred without knowing which. A GET hit never leaves the cache. The board endpoints are
// dispatched here too; their handlers are board_handlers.hh's (the request and the names they
// share with these are request_view.hh's).
#pragma once

#include <string_view>

#include "server/api/request_view.hh"
#include "server/api/router.hh"
#include "server/transport/handler_result.hh"
#include "server/transport/response_writer.hh"

namespace server {

struct ServerContext;  // server_context.hh: only named here, so the engine that holds the
struct WorkerStats;    // handlers does not include the services (and the tier behind them)

// Does an Accept header ask for JSON? (case-insensitive "application/json"; q-values ignored)
bool accepts_json(std::string_view accept);

struct Handlers {
  ServerContext& ctx;
  WorkerStats& stats;

  template <class ValuePath>
  HandlerResult dispatch(const Route& route, const RequestView& request, ResponseWriter& out);

  template <class ValuePath>
  HandlerResult get_key(std::string_view raw_key, bool json, const RequestView& request,
                        ResponseWriter& out);
  HandlerResult put_key(std::string_view raw_key, std::string_view value,
                        const RequestView& request, ResponseWriter& out);
  HandlerResult put_key_path(std::string_view raw_key, std::string_view raw_value,
                             const RequestView& request, ResponseWriter& out);
  HandlerResult delete_key(std::string_view raw_key, const RequestView& request,
                           ResponseWriter& out);
  template <class ValuePath>
  HandlerResult head_key(std::string_view raw_key, const RequestView& request, ResponseWriter& out);
  HandlerResult head_root(ResponseWriter& out);
  HandlerResult reset(std::string_view query, const RequestView& request, ResponseWriter& out);
  HandlerResult stats_json(ResponseWriter& out);
  HandlerResult metrics_text(ResponseWriter& out);  // GET /metrics (Prometheus text format)

  // GET and HEAD: the key decoded, If-None-Match parsed, the hit rendered by render_hit(key,
  // item) (false: no room under --max-inflight) or answered 304 inside the cache's sink; a miss
  // goes to lookup().
  template <class ValuePath, class RenderHit>
  HandlerResult read_key(std::string_view raw_key, bool json, const RequestView& request,
                         ResponseWriter& out, RenderHit render_hit);
  // A cache miss (GET/HEAD): answered by the key service (key_service.hh).
  HandlerResult lookup(std::string_view key, bool json, const RequestView& request,
                       ResponseWriter& out);
};

}  // namespace server
