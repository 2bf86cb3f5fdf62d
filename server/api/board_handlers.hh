// board_handlers.hh — the leaderboard endpoints (/board/..., docs/api.md "Boards"): decode the
// board and member names (request_view.hh's decode_name, the key rules), parse the score
// (boards::parse_score) and the query, make one BoardService call (board_service.hh, which
// decides: the registry, the store's rows, the store's reads with --board-source store) and
// render its answer (now or later, reply.hh). Handlers::dispatch (handlers.cc) picks these like
// every other endpoint.
#pragma once

#include <string_view>

#include "server/api/request_view.hh"
#include "server/transport/handler_result.hh"
#include "server/transport/response_writer.hh"

namespace server {

struct ServerContext;  // server_context.hh

// The query bounds of the reads (docs/api.md).
inline constexpr std::size_t kBoardTopDefault = 10;  // GET /board/{b}/top?n=
inline constexpr std::size_t kBoardTopMax = 1000;
inline constexpr std::size_t kBoardAroundDefault = 5;  // GET /board/{b}/around/{m}?n=
inline constexpr std::size_t kBoardAroundMax = 500;

struct BoardHandlers {
  ServerContext& ctx;
  const RequestView& request;

  // The raw_* arguments are the route's percent-encoded segments; query is the raw query.
  HandlerResult get_member(std::string_view raw_board, std::string_view raw_member,
                           ResponseWriter& out);
  HandlerResult put_member(std::string_view raw_board, std::string_view raw_member,
                           std::string_view query, std::string_view body, ResponseWriter& out);
  HandlerResult delete_member(std::string_view raw_board, std::string_view raw_member,
                              ResponseWriter& out);
  HandlerResult top(std::string_view raw_board, std::string_view query, ResponseWriter& out);
  HandlerResult around(std::string_view raw_board, std::string_view raw_member,
                       std::string_view query, ResponseWriter& out);
  HandlerResult get_board(std::string_view raw_board, ResponseWriter& out);
  HandlerResult delete_board(std::string_view raw_board, ResponseWriter& out);
};

}  // namespace server
