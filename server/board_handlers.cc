// board_handlers.cc — see board_handlers.hh. Each handler: decode, parse, one registry call (its
// changes forwarded to the store by RowWriter), one response; or, with --board-source store, one
// store::BoardSource call answered later. JSON is rendered by hand, like the key's (json_escape.hh
// for names, append_score for scores), into a string the response then copies.
#include "server/board_handlers.hh"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "boards/score.hh"
#include "server/handlers.hh"
#include "server/inflight_budget.hh"
#include "server/json_escape.hh"
#include "server/store_tier.hh"

namespace server {
namespace http = boost::beast::http;
using status = http::status;

namespace {

HandlerResult fail(status s, std::string_view reason) {
  return {s, reason, {}};
}

constexpr std::string_view kBoardNotFound = "board not found";
constexpr std::string_view kResetPending =
    "a reset is pending: board changes are refused until the store has answered it";
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

// One {"rank": r, "member": m, "score": s} object, after a comma unless it is the first.
void append_entry(std::string& json, std::size_t rank, std::string_view member, double score) {
  json += json.empty() ? "{\"rank\": " : ", {\"rank\": ";
  append_u64(json, rank);
  json += ", \"member\": ";
  append_string(json, member);
  json += ", \"score\": ";
  boards::append_score(json, score);
  json += '}';
}

// The entries of ranks first .. first + count - 1 of the board, comma-separated
// {"rank": r, "member": m, "score": s} objects (nothing when count is 0): the text a top-N page
// caches.
void append_entries(std::string& json, const boards::Board& board, std::size_t first,
                    std::size_t count) {
  if (count == 0) return;
  board.for_ranks(first, count, [&json](const boards::Ranked& r) {
    append_entry(json, r.rank, r.member, r.score);
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

std::shared_ptr<DeferredResponse> defer(const RequestView& request, DeferKind kind,
                                        const ResponseWriter& out) {
  return std::make_shared<DeferredResponse>(request.responses->defer(kind, out));
}

// --- durability: the registry's changes as store rows ------------------------------------------

// The response of a change that waits for its row's commit: rendered by the handler once the
// registry call returned; sent by the commit's callback. (finish() renders on the connection's
// thread, after the handler has returned, so the handler's rendering is always there first.)
struct PendingAnswer {
  std::shared_ptr<DeferredResponse> slot;
  status code = status::ok;
  std::string json;  // empty: no body (204)
};

HandlerResult send_answer(const PendingAnswer& a, ResponseWriter& w) {
  if (a.json.empty()) {
    w.no_content(a.code);
    return {};
  }
  return send_json(a.code, a.json, w);
}

// Forwards a registry call's change (at most one row: a member set or removed, or a board
// dropped) to the store tier, inside the board's lock (boards::ChangeSink). Write-through defers
// the request's response until the row is committed; write-behind answers at once.
class RowWriter final : public boards::ChangeSink {
 public:
  RowWriter(StoreTier& tier, const RequestView& request, const ResponseWriter& out)
      : tier_(tier), request_(request), out_(out) {}

  void member_set(std::string_view board, std::string_view member,
                  const boards::Stored& row) override {
    submit(
        store::Write::board_set_row(std::string(board), std::string(member), row.score, row.seq));
  }
  void member_removed(std::string_view board, std::string_view member) override {
    submit(store::Write::board_remove_row(std::string(board), std::string(member)));
  }
  void board_removed(std::string_view board) override {
    submit(store::Write::board_drop_rows(std::string(board)));
  }
  void refused_frozen() override { frozen_ = true; }
  bool frozen() const { return frozen_; }

  // The answer to a change the registry made: now (no store write was needed, or write-behind
  // took it), or once its row is committed.
  HandlerResult answer(status code, std::string json, ResponseWriter& out) {
    if (pending_) {
      pending_->code = code;
      pending_->json = std::move(json);
      return kDeferred;
    }
    if (!error_.empty()) {
      out.error(status::service_unavailable, error_);
      return {};
    }
    return send_answer(PendingAnswer{nullptr, code, std::move(json)}, out);
  }

 private:
  void submit(store::Write row) {
    if (tier_.mode() == WriteMode::behind) {
      if (auto now = tier_.board_write(std::move(row), {})) {
        if (now->kind == StoreTier::Outcome::Kind::error) error_ = now->error;
      }
      return;
    }
    pending_ = std::make_shared<PendingAnswer>();
    pending_->slot = defer(request_, DeferKind::write, out_);
    auto done = [pending = pending_](const StoreTier::Outcome& o) {
      pending->slot->finish([pending, o](ResponseWriter& w) -> HandlerResult {
        if (o.kind == StoreTier::Outcome::Kind::error) {
          return {status::service_unavailable, o.error, {}, false};
        }
        return send_answer(*pending, w);
      });
    };
    if (auto now = tier_.board_write(std::move(row), done)) done(*now);
  }

  StoreTier& tier_;
  const RequestView& request_;
  const ResponseWriter& out_;
  std::shared_ptr<PendingAnswer> pending_;  // write-through: the deferred answer
  std::string error_;                       // write-behind: why the row was refused
  bool frozen_ = false;                     // refused: a reset is pending
};

// --- --board-source store: reads answered by the database ---------------------------------------

// Renders a BoardPage's entries as append_entries renders a board's.
std::string page_entries(const store::BoardPage& page) {
  std::string json;
  for (const store::BoardEntry& e : page.entries) append_entry(json, e.rank, e.member, e.score);
  return json;
}

// Sends the request to the database and answers it when the page comes back: 404 with the
// store's "board not found" / "member not found", 503 for a store error, else render(page).
template <class Render>
HandlerResult from_store(const RequestView& request, const ResponseWriter& out,
                         const std::function<void(store::BoardPageDone)>& ask, Render render) {
  auto slot = defer(request, DeferKind::read, out);
  ask([slot, render](store::BoardPage page) {
    slot->finish([page = std::move(page), render](ResponseWriter& w) -> HandlerResult {
      if (page.status.code == store::Code::not_found) {
        return {status::not_found, page.status.message, {}, false};
      }
      if (!page.status.ok()) {
        return {status::service_unavailable, page.status.message, {}, false};
      }
      return send_json(status::ok, render(page), w);
    });
  });
  return kDeferred;
}

store::BoardSource* store_source(const ServerContext& ctx) {
  if (ctx.config.board_source != BoardSource::store || ctx.tier == nullptr) return nullptr;
  return ctx.tier->board_source();
}

}  // namespace

HandlerResult BoardHandlers::get_member(std::string_view raw_board, std::string_view raw_member,
                                        ResponseWriter& out) {
  NameBuffer board_storage, member_storage;
  const BoardMember names =
      decode_board_member(raw_board, raw_member, board_storage, member_storage);
  if (!names.error.ok()) return names.error;
  const std::string_view b = names.board, m = names.member;
  if (store::BoardSource* source = store_source(ctx)) {
    return from_store(
        request, out,
        [&](store::BoardPageDone done) {
          source->board_member(std::string(b), std::string(m), std::move(done));
        },
        [member = std::string(m)](const store::BoardPage& page) {
          std::string json;
          if (!page.entries.empty()) {
            append_member(json, member, page.entries[0].score, page.entries[0].rank);
          }
          return json;
        });
  }
  std::string json;
  bool found_member = false;
  const bool found_board = ctx.boards.read(b, [&](const boards::Board& board) {
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
  std::optional<RowWriter> rows;
  if (ctx.tier != nullptr) rows.emplace(*ctx.tier, request, out);
  const boards::UpdateOutcome u = ctx.boards.update(b, m, *op, *score, rows ? &*rows : nullptr);
  switch (u.status) {
    case boards::UpdateOutcome::Status::ok:
      break;
    case boards::UpdateOutcome::Status::no_space:  // (no row was written)
      return fail(status::insufficient_storage,
                  "boards full: a new member would exceed "
                  "--board-maxmem");
    case boards::UpdateOutcome::Status::not_finite:
      return fail(status::bad_request, "the new score would not be a finite number");
    case boards::UpdateOutcome::Status::frozen:
      return fail(status::service_unavailable, kResetPending);
  }
  std::string json;
  append_member(json, m, u.updated.score, u.updated.rank);
  const status code = u.updated.created ? status::created : status::ok;
  if (rows) return rows->answer(code, std::move(json), out);
  return send_json(code, json, out);
}

HandlerResult BoardHandlers::delete_member(std::string_view raw_board, std::string_view raw_member,
                                           ResponseWriter& out) {
  NameBuffer board_storage, member_storage;
  const BoardMember names =
      decode_board_member(raw_board, raw_member, board_storage, member_storage);
  if (!names.error.ok()) return names.error;
  const std::string_view b = names.board, m = names.member;
  std::optional<RowWriter> rows;
  if (ctx.tier != nullptr) rows.emplace(*ctx.tier, request, out);
  if (!ctx.boards.remove_member(b, m, rows ? &*rows : nullptr)) {
    if (rows && rows->frozen()) return fail(status::service_unavailable, kResetPending);
    return fail(status::not_found, "board or member not found");
  }
  if (rows) return rows->answer(status::no_content, {}, out);
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
  if (store::BoardSource* source = store_source(ctx)) {
    // SQL's OFFSET is a bigint: anything past it is past every board's end anyway.
    const std::uint64_t sql_offset = std::min<std::uint64_t>(*offset, INT64_MAX);
    return from_store(
        request, out,
        [&](store::BoardPageDone done) {
          source->board_top(std::string(b.name), sql_offset, *n, std::move(done));
        },
        [board = std::string(b.name)](const store::BoardPage& page) {
          return render_window(board, page.members, page_entries(page));
        });
  }
  // The entries come from the board's top-N cache when no update has moved a member within
  // them since they were rendered (--board-top-cache, boards/top_cache.hh); the member count
  // around them is read now.
  std::string json;
  const bool found = ctx.boards.read_top(
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
  if (store::BoardSource* source = store_source(ctx)) {
    return from_store(
        request, out,
        [&](store::BoardPageDone done) {
          source->board_around(std::string(b), std::string(m), *n, std::move(done));
        },
        [board = std::string(b)](const store::BoardPage& page) {
          return render_window(board, page.members, page_entries(page));
        });
  }
  std::string json;
  bool found_member = false;
  const bool found_board = ctx.boards.read(b, [&](const boards::Board& board) {
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

namespace {

// {"board": b, "members": N, "top_score": s, "bottom_score": s}
std::string render_info(std::string_view board, std::size_t members, double top, double bottom) {
  std::string json = "{\"board\": ";
  append_string(json, board);
  json += ", \"members\": ";
  append_u64(json, members);
  json += ", \"top_score\": ";
  boards::append_score(json, top);
  json += ", \"bottom_score\": ";
  boards::append_score(json, bottom);
  json += '}';
  return json;
}

}  // namespace

HandlerResult BoardHandlers::get_board(std::string_view raw_board, ResponseWriter& out) {
  NameBuffer board_storage;
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return b.error;
  if (store::BoardSource* source = store_source(ctx)) {
    return from_store(
        request, out,
        [&](store::BoardPageDone done) {
          source->board_info(std::string(b.name), std::move(done));
        },
        [board = std::string(b.name)](const store::BoardPage& page) {
          return render_info(board, page.members, page.top_score, page.bottom_score);
        });
  }
  std::string json;
  const bool found = ctx.boards.read(b.name, [&](const boards::Board& board) {
    if (board.empty()) return;  // as in top()
    json = render_info(b.name, board.size(), board.top_score(), board.bottom_score());
  });
  if (!found || json.empty()) return fail(status::not_found, kBoardNotFound);
  return send_json(status::ok, json, out);
}

HandlerResult BoardHandlers::delete_board(std::string_view raw_board, ResponseWriter& out) {
  NameBuffer board_storage;
  const DecodedName b = decode_name(raw_board, board_storage, NameKind::board);
  if (!b.error.ok()) return b.error;
  std::optional<RowWriter> rows;
  if (ctx.tier != nullptr) rows.emplace(*ctx.tier, request, out);
  if (!ctx.boards.remove_board(b.name, rows ? &*rows : nullptr)) {
    if (rows && rows->frozen()) return fail(status::service_unavailable, kResetPending);
    return fail(status::not_found, kBoardNotFound);
  }
  if (rows) return rows->answer(status::no_content, {}, out);
  out.no_content(status::no_content);
  return {};
}

}  // namespace server
