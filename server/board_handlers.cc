// board_handlers.cc — see board_handlers.hh. Each handler: decode, parse, one registry call, one
// response. JSON is rendered by hand, like the key's (json_escape.hh for names, append_score for
// scores), into a string the response then copies.
#include "server/board_handlers.hh"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include "boards/score.hh"
#include "server/handlers.hh"
#include "server/inflight_budget.hh"
#include "server/json_escape.hh"

namespace server {
namespace http = boost::beast::http;
using status = http::status;

namespace {

HandlerResult fail(status s, std::string_view reason) {
  return {s, reason, {}};
}

constexpr std::string_view kBoardNotFound = "board not found";
constexpr std::string_view kMemberNotFound = "member not found";

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

// --- JSON -------------------------------------------------------------------------------------

void append_u64(std::string& out, std::uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_string(std::string& out, std::string_view bytes) {
  out += '"';
  json_escape_append(bytes, out);
  out += '"';
}

// {"member": m, "score": s, "rank": r}
void append_member(std::string& out, std::string_view member, double score, std::size_t rank) {
  out += "{\"member\": ";
  append_string(out, member);
  out += ", \"score\": ";
  boards::append_score(out, score);
  out += ", \"rank\": ";
  append_u64(out, rank);
  out += '}';
}

// The entries of ranks first .. first + count - 1 of the board, comma-separated
// {"rank": r, "member": m, "score": s} objects (nothing when count is 0): the text a top-N page
// caches.
void append_entries(std::string& json, const boards::Board& board, std::size_t first,
                    std::size_t count) {
  if (count == 0) return;
  bool first_entry = true;
  board.for_ranks(first, count, [&](const boards::Ranked& r) {
    json += first_entry ? "{\"rank\": " : ", {\"rank\": ";
    first_entry = false;
    append_u64(json, r.rank);
    json += ", \"member\": ";
    append_string(json, r.member);
    json += ", \"score\": ";
    boards::append_score(json, r.score);
    json += '}';
  });
}

// {"board": b, "members": N, "entries": [ ...entries... ]}
std::string render_window(std::string_view name, std::size_t members, std::string_view entries) {
  std::string json = "{\"board\": ";
  append_string(json, name);
  json += ", \"members\": ";
  append_u64(json, members);
  json += ", \"entries\": [";
  json += entries;
  json += "]}";
  return json;
}

// Sends a rendered JSON body; 503 when --max-inflight has no room for it.
HandlerResult send_json(status s, const std::string& json, ResponseWriter& out) {
  if (!out.admit(json.size())) return fail(status::service_unavailable, kInflightFull);
  out.start(s, kJson, json.size());
  out.end_headers();
  out.body(json);
  return {};
}

// The board and member names of a member or around route, decoded into the caller's buffers;
// error holds the result for the first bad one.
struct BoardMember {
  std::string_view board, member;
  HandlerResult error;
};
BoardMember decode_board_member(std::string_view raw_board, std::string_view raw_member,
                                NameBuffer& board_storage, NameBuffer& member_storage) {
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return {{}, {}, b.error};
  const DecodedName m = decode_name(raw_member, member_storage, NameKind::member);
  if (!m.error.ok()) return {{}, {}, m.error};
  return {b.name, m.name, {}};
}

}  // namespace

HandlerResult BoardHandlers::get_member(std::string_view raw_board, std::string_view raw_member,
                                        ResponseWriter& out) {
  NameBuffer board_storage, member_storage;
  const BoardMember names =
      decode_board_member(raw_board, raw_member, board_storage, member_storage);
  if (!names.error.ok()) return names.error;
  const std::string_view b = names.board, m = names.member;
  std::string json;
  bool found_member = false;
  const bool found_board = registry.read(b, [&](const boards::Board& board) {
    const std::optional<boards::Ranked> r = board.find(m);
    if (!r) return;
    found_member = true;
    append_member(json, m, r->score, r->rank);
  });
  if (!found_board) return fail(status::not_found, kBoardNotFound);
  if (!found_member) return fail(status::not_found, kMemberNotFound);
  return send_json(status::ok, json, out);
}

HandlerResult BoardHandlers::put_member(std::string_view raw_board, std::string_view raw_member,
                                        std::string_view query, std::string_view body,
                                        ResponseWriter& out) {
  NameBuffer board_storage, member_storage;
  const BoardMember names =
      decode_board_member(raw_board, raw_member, board_storage, member_storage);
  if (!names.error.ok()) return names.error;
  const std::string_view b = names.board, m = names.member;
  const std::optional<boards::Op> op = op_param(query);
  if (!op) return fail(status::bad_request, "invalid op (want set, best or incr)");
  std::string why;
  const std::optional<double> score = boards::parse_score(body, &why);
  if (!score) {
    // The reason is built here, so it is rendered here (a HandlerResult only holds a view).
    out.error(status::bad_request, "invalid score: " + why);
    return {};
  }
  const boards::UpdateOutcome u = registry.update(b, m, *op, *score);
  switch (u.status) {
    case boards::UpdateOutcome::Status::ok:
      break;
    case boards::UpdateOutcome::Status::no_space:
      return fail(status::insufficient_storage,
                  "boards full: a new member would exceed "
                  "--board-maxmem");
    case boards::UpdateOutcome::Status::not_finite:
      return fail(status::bad_request, "the new score would not be a finite number");
  }
  std::string json;
  append_member(json, m, u.updated.score, u.updated.rank);
  return send_json(u.updated.created ? status::created : status::ok, json, out);
}

HandlerResult BoardHandlers::delete_member(std::string_view raw_board, std::string_view raw_member,
                                           ResponseWriter& out) {
  NameBuffer board_storage, member_storage;
  const BoardMember names =
      decode_board_member(raw_board, raw_member, board_storage, member_storage);
  if (!names.error.ok()) return names.error;
  const std::string_view b = names.board, m = names.member;
  if (!registry.remove_member(b, m)) {
    return fail(status::not_found, "board or member not found");
  }
  out.no_content(status::no_content);
  return {};
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
  // The entries come from the board's top-N cache when no update has moved a member within
  // them since they were rendered (--board-top-cache, boards/top_cache.hh); the member count
  // around them is read now.
  std::string json;
  const bool found = registry.read_top(
      b.name, *offset, *n,
      [&](const boards::Board& board) {
        std::string entries;
        if (*offset < board.size()) append_entries(entries, board, *offset + 1, *n);
        return entries;
      },
      [&](const boards::Board& board, const std::string& entries) {
        // A board being created or emptied does not exist yet / any more.
        if (!board.empty()) json = render_window(b.name, board.size(), entries);
      });
  if (!found || json.empty()) return fail(status::not_found, kBoardNotFound);
  return send_json(status::ok, json, out);
}

HandlerResult BoardHandlers::around(std::string_view raw_board, std::string_view raw_member,
                                    std::string_view query, ResponseWriter& out) {
  NameBuffer board_storage, member_storage;
  const BoardMember names =
      decode_board_member(raw_board, raw_member, board_storage, member_storage);
  if (!names.error.ok()) return names.error;
  const std::string_view b = names.board, m = names.member;
  const auto n = count_param(query, "n", kBoardAroundDefault, 0, kBoardAroundMax);
  if (!n) return fail(status::bad_request, "invalid n (want a whole number 0..500)");
  std::string json;
  bool found_member = false;
  const bool found_board = registry.read(b, [&](const boards::Board& board) {
    const auto window = board.around(m, *n);
    if (!window) return;
    found_member = true;
    std::string entries;
    append_entries(entries, board, window->first, window->second);
    json = render_window(b, board.size(), entries);
  });
  if (!found_board) return fail(status::not_found, kBoardNotFound);
  if (!found_member) return fail(status::not_found, kMemberNotFound);
  return send_json(status::ok, json, out);
}

HandlerResult BoardHandlers::get_board(std::string_view raw_board, ResponseWriter& out) {
  NameBuffer board_storage;
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return b.error;
  std::string json;
  const bool found = registry.read(b.name, [&](const boards::Board& board) {
    if (board.empty()) return;  // as in top()
    json = "{\"board\": ";
    append_string(json, b.name);
    json += ", \"members\": ";
    append_u64(json, board.size());
    json += ", \"top_score\": ";
    boards::append_score(json, board.top_score());
    json += ", \"bottom_score\": ";
    boards::append_score(json, board.bottom_score());
    json += '}';
  });
  if (!found || json.empty()) return fail(status::not_found, kBoardNotFound);
  return send_json(status::ok, json, out);
}

HandlerResult BoardHandlers::delete_board(std::string_view raw_board, ResponseWriter& out) {
  NameBuffer board_storage;
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return b.error;
  if (!registry.remove_board(b.name)) return fail(status::not_found, kBoardNotFound);
  out.no_content(status::no_content);
  return {};
}

}  // namespace server
