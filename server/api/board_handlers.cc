// board_handlers.cc — see board_handlers.hh. Each handler: decode, parse, one BoardService call
// (board_service.hh decides: registry, store rows, store reads), one rendering of its answer,
// now or later (reply.hh).
#include "server/api/board_handlers.hh"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "boards/score.hh"
#include "server/api/board_json.hh"
#include "server/api/board_service.hh"
#include "server/api/reply.hh"
#include "server/server_context.hh"
#include "server/transport/inflight_budget.hh"
#include "server/transport/json_escape.hh"

namespace server {
namespace http = boost::beast::http;
using status = http::status;

namespace {

constexpr std::string_view kResetPending =
    "a reset is pending: board changes are refused until the store has answered it";

// --- the query --------------------------------------------------------------------------------

// A parameter's value: absent (the default applies), or its text ("n" alone has no text: bad).
struct Param {
  bool present = false;
  bool has_value = false;
  std::string_view value;
};

// The last occurrence of `name` in a raw query ("a=1&b=2"); other parameters are ignored, as
// every route ignores the parameters it does not read.
Param find_param(std::string_view query, std::string_view name) {
  Param found;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = param.find('=');
    if (param.substr(0, eq) != name) continue;
    found.present = true;
    found.has_value = eq != std::string_view::npos;
    found.value = found.has_value ? param.substr(eq + 1) : std::string_view();
  }
  return found;
}

// A decimal whole number in lo..hi ("+5", "-1", " 5", "5x", "" are not).
bool parse_count(std::string_view text, std::uint64_t lo, std::uint64_t hi, std::uint64_t& out) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out >= lo && out <= hi;
}

// A count parameter: its default when absent, nullopt when malformed or out of range.
std::optional<std::uint64_t> count_param(std::string_view query, std::string_view name,
                                         std::uint64_t fallback, std::uint64_t lo,
                                         std::uint64_t hi) {
  const Param p = find_param(query, name);
  if (!p.present) return fallback;
  std::uint64_t n = 0;
  if (!p.has_value || !parse_count(p.value, lo, hi, n)) return std::nullopt;
  return n;
}

std::optional<boards::Op> op_param(std::string_view query) {
  const Param p = find_param(query, "op");
  if (!p.present) return boards::Op::set;
  if (p.has_value) {
    if (p.value == "set") return boards::Op::set;
    if (p.value == "best") return boards::Op::best;
    if (p.value == "incr") return boards::Op::incr;
  }
  return std::nullopt;
}

// Sends a rendered JSON body; 503 when --max-inflight has no room for it.
HandlerResult send_json(status s, const std::string& json, ResponseWriter& out) {
  if (!out.admit(json.size())) return fail(status::service_unavailable, kInflightFull);
  out.start(s, kJson, json.size());
  out.end_headers();
  out.body(json);
  return {};
}

// The board and member names of a member or around route, decoded into buffers of its own;
// error holds the result for the first bad one. Not copied: the names view its buffers.
struct BoardMember {
  BoardMember(std::string_view raw_board, std::string_view raw_member) {
    const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
    if (!b.error.ok()) {
      error = b.error;
      return;
    }
    const DecodedName m = decode_name(raw_member, member_storage, NameKind::member);
    if (!m.error.ok()) {
      error = m.error;
      return;
    }
    board = b.name;
    member = m.name;
  }
  BoardMember(const BoardMember&) = delete;
  BoardMember& operator=(const BoardMember&) = delete;

  NameBuffer board_storage, member_storage;
  std::string_view board, member;
  HandlerResult error;
};

// What a board change answers: its JSON (update), 204 (removals), or why not.
// `member`: the updated member, or empty for a removal (204, no body).
HandlerResult render_change(const BoardChange& c, std::string_view member, bool removal,
                            ResponseWriter& w) {
  using K = BoardChange::Kind;
  switch (c.kind) {
    case K::done:
      break;
    case K::not_found:
      return fail(status::not_found, member.empty() ? kBoardNotFound : "board or member not found");
    case K::no_space:
      return fail(status::insufficient_storage,
                  "boards full: a new member would exceed --board-maxmem");
    case K::not_finite:
      return fail(status::bad_request, "the new score would not be a finite number");
    case K::frozen:
      return fail(status::service_unavailable, kResetPending);
    case K::refused:
    case K::failed:
      return fail(status::service_unavailable, c.error);
  }
  if (removal) {
    w.no_content(status::no_content);
    return {};
  }
  std::string json;
  append_member(json, member, c.updated.score, c.updated.rank);
  return send_json(c.updated.created ? status::created : status::ok, json, w);
}

// A reply to a board change: an update of `member`, or a removal of it (or, member empty, of
// the whole board).
auto change_reply(const RequestView& request, const ResponseWriter& out, std::string_view member,
                  bool removal) {
  return make_reply<BoardChange>(
      request.responses, out,
      [m = std::string(member), removal](const BoardChange& c, ResponseWriter& w) {
        return render_change(c, m, removal, w);
      });
}

// A reply to a board read: the JSON, or 404/503 with the reason.
auto read_reply(const RequestView& request, const ResponseWriter& out) {
  return make_reply<BoardRead>(request.responses, out,
                               [](const BoardRead& r, ResponseWriter& w) -> HandlerResult {
                                 switch (r.kind) {
                                   case BoardRead::Kind::ok:
                                     return send_json(status::ok, r.text, w);
                                   case BoardRead::Kind::not_found:
                                     return {status::not_found, r.text, {}, false};
                                   case BoardRead::Kind::error:
                                     break;
                                 }
                                 return {status::service_unavailable, r.text, {}, false};
                               });
}

}  // namespace

HandlerResult BoardHandlers::get_member(std::string_view raw_board, std::string_view raw_member,
                                        ResponseWriter& out) {
  const BoardMember names(raw_board, raw_member);
  if (!names.error.ok()) return names.error;
  auto reply = read_reply(request, out);
  ctx.board_service.member(names.board, names.member, reply);
  return reply.answer(out);
}

HandlerResult BoardHandlers::put_member(std::string_view raw_board, std::string_view raw_member,
                                        std::string_view query, std::string_view body,
                                        ResponseWriter& out) {
  const BoardMember names(raw_board, raw_member);
  if (!names.error.ok()) return names.error;
  const std::optional<boards::Op> op = op_param(query);
  if (!op) return fail(status::bad_request, "invalid op (want set, best or incr)");
  std::string why;
  const std::optional<double> score = boards::parse_score(body, &why);
  if (!score) {
    // The reason is built here, so it is rendered here (a HandlerResult only holds a view).
    out.error(status::bad_request, "invalid score: " + why);
    return {};
  }
  auto reply = change_reply(request, out, names.member, false);
  ctx.board_service.update(names.board, names.member, *op, *score, reply);
  return reply.answer(out);
}

HandlerResult BoardHandlers::delete_member(std::string_view raw_board, std::string_view raw_member,
                                           ResponseWriter& out) {
  const BoardMember names(raw_board, raw_member);
  if (!names.error.ok()) return names.error;
  auto reply = change_reply(request, out, names.member, true);
  ctx.board_service.remove_member(names.board, names.member, reply);
  return reply.answer(out);
}

HandlerResult BoardHandlers::top(std::string_view raw_board, std::string_view query,
                                 ResponseWriter& out) {
  NameBuffer board_storage;
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return b.error;
  const auto n = count_param(query, "n", kBoardTopDefault, 1, kBoardTopMax);
  if (!n) return fail(status::bad_request, "invalid n (want a whole number 1..1000)");
  const auto offset = count_param(query, "offset", 0, 0, UINT64_MAX);
  if (!offset) return fail(status::bad_request, "invalid offset (want a whole number, 0 or more)");
  auto reply = read_reply(request, out);
  ctx.board_service.top(b.name, *offset, *n, reply);
  return reply.answer(out);
}

HandlerResult BoardHandlers::around(std::string_view raw_board, std::string_view raw_member,
                                    std::string_view query, ResponseWriter& out) {
  const BoardMember names(raw_board, raw_member);
  if (!names.error.ok()) return names.error;
  const auto n = count_param(query, "n", kBoardAroundDefault, 0, kBoardAroundMax);
  if (!n) return fail(status::bad_request, "invalid n (want a whole number 0..500)");
  auto reply = read_reply(request, out);
  ctx.board_service.around(names.board, names.member, *n, reply);
  return reply.answer(out);
}

HandlerResult BoardHandlers::get_board(std::string_view raw_board, ResponseWriter& out) {
  NameBuffer board_storage;
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return b.error;
  auto reply = read_reply(request, out);
  ctx.board_service.info(b.name, reply);
  return reply.answer(out);
}

HandlerResult BoardHandlers::delete_board(std::string_view raw_board, ResponseWriter& out) {
  NameBuffer board_storage;
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return b.error;
  auto reply = change_reply(request, out, {}, true);
  ctx.board_service.remove_board(b.name, reply);
  return reply.answer(out);
}

}  // namespace server
