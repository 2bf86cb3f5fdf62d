// board_commands.cc — the sorted-set commands, on the boards: a board is a sorted set whose
// members rank by score, highest first, equal scores by arrival (docs/resp.md). Changes go
// through the board service (board_service.hh: the store's row first, with a store; a
// write-through change answers once durable), so a ZADD over RESP is a PUT /board/... over
// HTTP. Reads are the registry's, under the board's shared lock (with --board-source store too:
// memory holds every committed change, and RESP clients ask for memory's speed).
// Ranks: the board's rank r (1-based, highest first) is ZREVRANK r-1 and ZRANK size-r.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "boards/board.hh"
#include "server/api/board_service.hh"
#include "server/api/reply.hh"
#include "server/resp/commands.hh"
#include "server/resp/gather.hh"
#include "server/server_context.hh"

namespace server::resp {

namespace {

// The top cache's forms of ZREVRANGE's reply (boards/top_cache.hh; the HTTP front's JSON is 0):
// this, +1 WITHSCORES, +2 RESP3.
constexpr std::uint8_t kRespTopForm = 1;
constexpr std::string_view kBadName = "ERR invalid name: keys and members are 1 to 250 bytes";

bool valid_name(std::string_view s) {
  return !s.empty() && s.size() <= cache::kMaxKeyBytes;
}

std::string change_error(const BoardChange& c) {
  switch (c.kind) {
    case BoardChange::Kind::no_space:
      return "OOM board full (--board-maxmem)";
    case BoardChange::Kind::not_finite:
      return "ERR resulting score is not a number (NaN)";
    default:
      return "TRYAGAIN " + c.error;
  }
}

// The member's score and board rank, read under the board's lock.
struct Found {
  bool board = false;
  std::size_t size = 0;
  std::optional<boards::Ranked> member;
};
Found find_member(ServerContext& ctx, std::string_view board, std::string_view member) {
  Found f;
  f.board = ctx.boards.read(board, [&](const boards::Board& b) {
    f.size = b.size();
    if (auto r = b.find(member)) f.member = boards::Ranked{r->rank, {}, r->score};
  });
  return f;
}

// The member's score alone (no rank: a walk up the board's tree), read under the board's lock.
std::optional<double> find_score(ServerContext& ctx, std::string_view board,
                                 std::string_view member) {
  std::optional<double> score;
  ctx.boards.read(board, [&](const boards::Board& b) {
    if (auto s = b.stored(member)) score = s->score;
  });
  return score;
}

// ZADD's flags (t_zset.c, zaddGenericCommand).
struct ZaddFlags {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
};

}  // namespace

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
// NX, XX and LT are tested against the member's current score, then the change is made (not
// atomic against another connection's change of the same member: docs/resp.md).
HandlerResult cmd_zadd(Call& call) {
  ReplyWriter r = call.reply();
  ZaddFlags f;
  std::size_t i = 2;
  for (; i < call.args.size(); ++i) {
    const std::string_view a = call.args[i];
    if (is_word(a, "nx")) {
      f.nx = true;
    } else if (is_word(a, "xx")) {
      f.xx = true;
    } else if (is_word(a, "gt")) {
      f.gt = true;
    } else if (is_word(a, "lt")) {
      f.lt = true;
    } else if (is_word(a, "ch")) {
      f.ch = true;
    } else if (is_word(a, "incr")) {
      f.incr = true;
    } else {
      break;
    }
  }
  const std::size_t left = call.args.size() - i;
  if (left == 0 || left % 2 != 0) {
    r.error(kSyntaxError);
    return {};
  }
  if (f.nx && f.xx) {
    r.error("ERR XX and NX options at the same time are not compatible");
    return {};
  }
  if ((f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt)) {
    r.error("ERR GT, LT, and/or NX options at the same time are not compatible");
    return {};
  }
  if (f.incr && left > 2) {
    r.error("ERR INCR option supports a single increment-element pair");
    return {};
  }
  const std::string_view board = call.args[1];
  std::vector<double> scores(left / 2);
  for (std::size_t k = 0; k < scores.size(); ++k) {
    if (!parse_score(call.args[i + 2 * k], scores[k]) || !std::isfinite(scores[k])) {
      r.error(kNotFloat);
      return {};
    }
    if (!valid_name(call.args[i + 2 * k + 1]) || !valid_name(board)) {
      r.error(kBadName);
      return {};
    }
  }
  // Each pair: decide from the current score, then change through the service.
  const auto form = f.incr ? Gather::Form::single : Gather::Form::count;
  const HandlerResult result =
      gather_reply(form, scores.size(), call, [&](std::size_t k, const std::shared_ptr<Gather>& g) {
        const std::string_view member = call.args[i + 2 * k + 1];
        const double value = scores[k];
        const std::optional<double> now = find_score(call.ctx, board, member);
        const bool exists = now.has_value();
        std::optional<boards::Op> op = f.incr ? boards::Op::incr : boards::Op::set;
        if ((f.nx && exists) || (f.xx && !exists)) op.reset();
        if (op && exists && (f.gt || f.lt)) {
          const double next = f.incr ? *now + value : value;
          if ((f.gt && !(next > *now)) || (f.lt && !(next < *now))) op.reset();
        }
        if (!op) {
          if (f.incr) {
            std::string e;
            ReplyWriter(e, call.session.resp3).null();
            g->element(0, std::move(e));
          }
          g->part_done();
          return;
        }
        const double old_score = exists ? *now : 0;
        auto part = make_part<BoardChange>(
            g, [incr = f.incr, ch = f.ch, exists, old_score, resp3 = call.session.resp3](
                   const BoardChange& c, Gather& gather) {
              if (c.kind != BoardChange::Kind::done) return gather.error(change_error(c));
              if (incr) {
                std::string e;
                ReplyWriter(e, resp3).score(c.updated.score);
                return gather.element(0, std::move(e));
              }
              if (c.updated.created || (ch && exists && c.updated.score != old_score)) {
                gather.count(1);
              }
            });
        call.ctx.board_service.update(board, member, *op, value, part, /*want_ranks=*/false);
        part.settle();
      });
  return result;
}

// ZINCRBY key increment member: the new score.
HandlerResult cmd_zincrby(Call& call) {
  double by = 0;
  if (!parse_score(call.args[2], by) || !std::isfinite(by)) {
    call.reply().error(kNotFloat);
    return {};
  }
  if (!valid_name(call.args[1]) || !valid_name(call.args[3])) {
    call.reply().error(kBadName);
    return {};
  }
  auto reply = make_reply<BoardChange>(
      call.responses, call.out,
      [resp3 = call.session.resp3](const BoardChange& c, ResponseWriter& w) {
        ReplyWriter r(w.buffer(), resp3);
        if (c.kind == BoardChange::Kind::done) {
          r.score(c.updated.score);
        } else {
          r.error(change_error(c));
        }
        return HandlerResult{};
      });
  call.ctx.board_service.update(call.args[1], call.args[3], boards::Op::incr, by, reply,
                                /*want_ranks=*/false);
  return reply.answer(call.out);
}

HandlerResult cmd_zscore(Call& call) {
  const Found f = find_member(call.ctx, call.args[1], call.args[2]);
  ReplyWriter r = call.reply();
  if (f.member) {
    r.score(f.member->score);
  } else {
    r.null();
  }
  return {};
}

HandlerResult cmd_zmscore(Call& call) {
  ReplyWriter r = call.reply();
  const auto members = call.args.subspan(2);
  r.array(members.size());
  const bool found = call.ctx.boards.read(call.args[1], [&](const boards::Board& b) {
    for (const std::string_view m : members) {
      if (auto ranked = b.find(m)) {
        r.score(ranked->score);
      } else {
        r.null();
      }
    }
  });
  if (!found) {
    for (std::size_t k = 0; k < members.size(); ++k) r.null();
  }
  return {};
}

HandlerResult cmd_zcard(Call& call) {
  std::size_t n = 0;
  call.ctx.boards.read(call.args[1], [&](const boards::Board& b) { n = b.size(); });
  call.reply().integer(static_cast<std::int64_t>(n));
  return {};
}

namespace {
// ZRANK / ZREVRANK key member [WITHSCORE] (WITHSCORE as Redis 7.2 has it).
HandlerResult rank(Call& call, bool reverse) {
  ReplyWriter r = call.reply();
  bool with_score = false;
  if (call.args.size() == 4) {
    if (!is_word(call.args[3], "withscore")) {
      r.error(kSyntaxError);
      return {};
    }
    with_score = true;
  } else if (call.args.size() > 4) {
    r.error(kSyntaxError);
    return {};
  }
  const Found f = find_member(call.ctx, call.args[1], call.args[2]);
  if (!f.member) {
    if (with_score) {
      r.null_array();
    } else {
      r.null();
    }
    return {};
  }
  const auto place =
      static_cast<std::int64_t>(reverse ? f.member->rank - 1 : f.size - f.member->rank);
  if (with_score) {
    r.array(2);
    r.integer(place);
    r.score(f.member->score);
  } else {
    r.integer(place);
  }
  return {};
}

// The index range [start, stop] of a set of `size`, Redis's way (negative from the end,
// clipped); nullopt when empty.
std::optional<std::pair<std::size_t, std::size_t>> index_range(std::int64_t start,
                                                               std::int64_t stop,
                                                               std::size_t size) {
  const auto n = static_cast<std::int64_t>(size);
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  if (start < 0) start = 0;
  if (start > stop || start >= n) return std::nullopt;
  if (stop >= n) stop = n - 1;
  return std::pair{static_cast<std::size_t>(start), static_cast<std::size_t>(stop)};
}

// ZRANGE key start stop [REV] [WITHSCORES] (the index form), ZREVRANGE key start stop
// [WITHSCORES]: members by index, lowest score first (REV: highest first).
HandlerResult range(Call& call, bool reverse, bool rev_allowed,
                    std::span<const std::string_view> opts) {
  ReplyWriter r = call.reply();
  bool with_scores = false;
  for (const std::string_view o : opts) {
    if (is_word(o, "withscores")) {
      with_scores = true;
    } else if (is_word(o, "rev") && rev_allowed) {
      reverse = true;
    } else {
      r.error(kSyntaxError);
      return {};
    }
  }
  std::int64_t start = 0, stop = 0;
  if (!parse_integer(call.args[2], start) || !parse_integer(call.args[3], stop)) {
    r.error(kNotInteger);
    return {};
  }
  const auto render = [&](const boards::Board& b, ReplyWriter& w) {
    const auto span = index_range(start, stop, b.size());
    if (!span) return w.array(0);
    const std::size_t count = span->second - span->first + 1;
    w.array(with_scores ? w.pairs_count(count) : count);
    const auto emit = [&](const boards::Ranked& m) {
      if (with_scores) w.begin_pair();
      w.bulk(m.member);
      if (with_scores) w.score(m.score);
    };
    if (reverse) {  // index i is the board's rank i + 1
      b.for_ranks(span->first + 1, count, emit);
      return;
    }
    // Lowest first: ranks size - first down to size - stop, gathered then emitted backwards.
    std::vector<boards::Ranked> rows;
    rows.reserve(count);
    b.for_ranks(b.size() - span->second, count,
                [&](const boards::Ranked& m) { rows.push_back(m); });
    for (auto it = rows.rbegin(); it != rows.rend(); ++it) emit(*it);
  };
  bool found = false;
  if (reverse && start >= 0 && stop >= start) {
    // The top of a board, highest first: the hot read. Its rendering is kept in the board's
    // top cache (boards/top_cache.hh), one entry per form, until an update moves those ranks.
    const auto offset = static_cast<std::size_t>(start);
    const auto n = static_cast<std::size_t>(stop - start) + 1;
    const std::uint8_t form =
        static_cast<std::uint8_t>(kRespTopForm + (with_scores ? 1 : 0) + (r.resp3() ? 2 : 0));
    found = call.ctx.boards.read_top(
        call.args[1], offset, n,
        [&](const boards::Board& b) {
          std::string text;
          ReplyWriter w(text, r.resp3());
          render(b, w);
          return text;
        },
        [&](const boards::Board&, const std::string& text) { r.buffer().append(text); }, form);
  } else {
    found = call.ctx.boards.read(call.args[1], [&](const boards::Board& b) { render(b, r); });
  }
  if (!found) r.array(0);
  return {};
}
}  // namespace

HandlerResult cmd_zrank(Call& call) {
  return rank(call, false);
}

HandlerResult cmd_zrevrank(Call& call) {
  return rank(call, true);
}

HandlerResult cmd_zrange(Call& call) {
  return range(call, false, true, call.args.subspan(4));
}

HandlerResult cmd_zrevrange(Call& call) {
  return range(call, true, false, call.args.subspan(4));
}

// ZREM key member...: how many were removed.
HandlerResult cmd_zrem(Call& call) {
  const std::string_view board = call.args[1];
  const auto members = call.args.subspan(2);
  return gather_reply(Gather::Form::count, members.size(), call,
                      [&](std::size_t k, const std::shared_ptr<Gather>& g) {
                        auto part =
                            make_part<BoardChange>(g, [](const BoardChange& c, Gather& gather) {
                              if (c.kind == BoardChange::Kind::done) {
                                gather.count(1);
                              } else if (c.kind != BoardChange::Kind::not_found) {
                                gather.error(change_error(c));
                              }
                            });
                        call.ctx.board_service.remove_member(board, members[k], part);
                        part.settle();
                      });
}

}  // namespace server::resp
