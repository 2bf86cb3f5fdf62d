// postgres_boards.cc — PostgresStore's board reads: the BoardReader calls (one SQL statement
// each, served by the reader threads) and load_boards' binary COPY of the whole board table with
// its stream parser. Apart from postgres_store.cc (the key-value store, the group commit that
// also writes the board rows) because the ranking SQL and the COPY format are a concept of their
// own; store/README.md, "Board rows in PostgreSQL", says why each is so.
#include <libpq-fe.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/postgres_internal.hh"
#include "store/postgres_store.hh"
#include "store/timer_thread.hh"

namespace store {

using namespace detail;  // postgres_internal.hh: the half both files share

namespace {

// Readers: one statement per BoardReader call, so each is one round trip. "Ranked above" a row
// (s, q) is `score > s OR (score = s AND seq < q)`, counted as two index-only range scans of
// (board, score DESC, seq): written as one OR, PostgreSQL plans a BitmapOr and a heap scan
// instead (102-121 ms against 81 ms for a member ranked 500,000th of 1M, EXPLAIN ANALYZE).
constexpr const char* kBoardTop = "cache_board_top";
constexpr const char* kBoardMember = "cache_board_member";
constexpr const char* kBoardAround = "cache_board_around";
constexpr const char* kBoardInfo = "cache_board_info";
// Whether board $1 has a row: its top score read from the index (PostgreSQL plans max() on an
// index's leading order as a one-entry index-only scan; an EXISTS subquery it estimated to match
// most rows was planned as a sequential scan, which reads the whole table for a small board).
std::string board_exists_sql(const std::string& bt) {
  return "(SELECT max(score) FROM " + bt + " WHERE board = $1) IS NOT NULL";
}
std::string rank_sql(const std::string& bt, const std::string& row) {  // row: (score, seq)
  return "(SELECT count(*) FROM " + bt + " o WHERE o.board = $1 AND o.score > " + row +
         ".score) + (SELECT count(*) FROM " + bt + " o WHERE o.board = $1 AND o.score = " + row +
         ".score AND o.seq < " + row + ".seq) + 1";
}
// $1 board, $2 offset, $3 n -> (board exists, member, score), a row of NULLs past the end. The
// page is an index-only scan of (board, score DESC, seq) INCLUDE (member) with LIMIT/OFFSET; the
// board's existence one probe of that index (an InitPlan). No count(*): counting the board
// would read all of its index entries for every page (the caller knows the member count).
std::string board_top_sql(const std::string& bt) {
  return "SELECT " + board_exists_sql(bt) +
         ", r.member, r.score FROM (VALUES (1)) one(x) LEFT JOIN LATERAL "
         "(SELECT member, score, seq FROM " +
         bt +
         " WHERE board = $1 ORDER BY score DESC, seq LIMIT $3 OFFSET $2) r ON true"
         " ORDER BY r.score DESC, r.seq";
}
// $1 board, $2 member -> (board exists, score, rank), score NULL if the member is absent.
std::string board_member_sql(const std::string& bt) {
  return "SELECT " + board_exists_sql(bt) + ", m.score, " + rank_sql(bt, "m") +
         " FROM (VALUES (1)) one(x) LEFT JOIN " + bt + " m ON m.board = $1 AND m.member = $2";
}
// $1 board, $2 member, $3 n -> (board exists, rank, member, score): the board's existence (one
// probe of the ranking index, as for a top page), the member's rank counted on the index (the
// rows ranked above it only), then the window around it, clipped at both ends by itself: up to n
// rows ranked just above it and up to n + 1 from it down, each side as two index range scans
// (equal score and seq beyond it, then the next scores) read from the member outwards. Rank NULL
// if the member is absent. No count(*) of the board: members is not filled (the caller knows
// the member count, as for a top page). (LIMIT 2n+1 OFFSET rank-n-1 would answer the same, but
// walk the index down to the window: 190 ms for a member ranked 500,000th of 1M, against 0.2 ms
// this way.)
std::string board_around_sql(const std::string& bt) {
  const std::string cols = "SELECT member, score, seq FROM " + bt + " WHERE board = $1 AND ";
  return "SELECT " + board_exists_sql(bt) +
         ", m.rank, w.member, w.score FROM (VALUES (1)) one(x) LEFT JOIN LATERAL (SELECT "
         "x.score, x.seq, " +
         rank_sql(bt, "x") + " AS rank FROM " + bt +
         " x WHERE x.board = $1 AND x.member = $2) m ON true LEFT JOIN LATERAL ("
         "(SELECT * FROM ((" +
         cols + "score = m.score AND seq < m.seq ORDER BY seq DESC LIMIT $3) UNION ALL (" + cols +
         "score > m.score ORDER BY score, seq DESC LIMIT $3)) above"
         " ORDER BY score, seq DESC LIMIT $3) UNION ALL (SELECT * FROM ((" +
         cols + "score = m.score AND seq >= m.seq ORDER BY seq LIMIT $3 + 1) UNION ALL (" + cols +
         "score < m.score ORDER BY score DESC, seq LIMIT $3 + 1)) below"
         " ORDER BY score DESC, seq LIMIT $3 + 1)) w ON true ORDER BY w.score DESC, w.seq";
}
// $1 board -> (top score, bottom score), NULLs when the board has no row: each one entry of
// the ranking index (PostgreSQL plans max() and min() on its leading order as one-entry
// index-only scans). No count(*): members is not filled (the caller knows it, as for a page).
constexpr std::string_view kBoardInfoSql =
    "SELECT max(score), min(score) FROM {table} WHERE board = $1";
// load_boards(): the whole table, binary (no text conversion of the doubles either way).
constexpr std::string_view kBoardCopySql =
    "COPY (SELECT board, member, score, seq FROM {table}) TO STDOUT (FORMAT binary)";
// LIMIT/OFFSET are bigint: larger requests are clipped (no board has 2^40 members).
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 40;

// Binary int8 / float8 / bool results (count(*) is int8). A NULL reads as 0 / false.
std::int64_t int8_at(const PGresult* r, int row, int col) {
  return static_cast<std::int64_t>(be64_at(r, row, col));
}
double float8_at(const PGresult* r, int row, int col) {
  return std::bit_cast<double>(be64_at(r, row, col));
}
bool bool_at(const PGresult* r, int row, int col) {
  return !PQgetisnull(r, row, col) && PQgetlength(r, row, col) == 1 &&
         PQgetvalue(r, row, col)[0] != 0;
}

// The board reads' results (one row at least), into a page: its status.
const Status kBoardAbsent{Code::not_found, "board not found"};
const Status kMemberAbsent{Code::not_found, "member not found"};

// (board exists, member, score), NULLs past the end. members is not filled.
Status read_top(const PGresult* r, std::uint64_t offset, BoardPage& page) {
  if (!bool_at(r, 0, 0)) return kBoardAbsent;
  for (int i = 0, rows = PQntuples(r); i < rows; ++i) {
    if (PQgetisnull(r, i, 1)) continue;
    page.entries.push_back({.rank = offset + page.entries.size() + 1,
                            .member = std::string(value_at(r, i, 1)),
                            .score = float8_at(r, i, 2)});
  }
  return {};
}

// (board exists, score, rank), score NULL if the member is absent.
Status read_member(const PGresult* r, std::string member, BoardPage& page) {
  if (!bool_at(r, 0, 0)) return kBoardAbsent;
  if (PQgetisnull(r, 0, 1)) return kMemberAbsent;
  page.entries.push_back({.rank = static_cast<std::uint64_t>(int8_at(r, 0, 2)),
                          .member = std::move(member),
                          .score = float8_at(r, 0, 1)});
  return {};
}

// (board exists, rank, member, score), rank NULL if the member is absent. members is not filled.
Status read_around(const PGresult* r, const std::string& member, BoardPage& page) {
  if (!bool_at(r, 0, 0)) return kBoardAbsent;
  if (PQgetisnull(r, 0, 1)) return kMemberAbsent;
  // The window's first rank: the member's, less the rows listed above it.
  const auto rank = static_cast<std::uint64_t>(int8_at(r, 0, 1));
  const int rows = PQntuples(r);
  int at = 0;
  while (at < rows && value_at(r, at, 2) != member) ++at;
  if (at == rows) return {Code::io_error, "postgres: read failed: the member is not in its window"};
  auto next = rank - static_cast<std::uint64_t>(at);
  for (int i = 0; i < rows; ++i) {
    page.entries.push_back(
        {.rank = next++, .member = std::string(value_at(r, i, 2)), .score = float8_at(r, i, 3)});
  }
  return {};
}

// (max, min), NULL for a board without rows. members is not filled.
Status read_info(const PGresult* r, BoardPage& page) {
  if (PQgetisnull(r, 0, 0)) return kBoardAbsent;
  page.top_score = float8_at(r, 0, 0);
  page.bottom_score = float8_at(r, 0, 1);
  return {};
}

// load_boards(): PostgreSQL's binary COPY stream (a 19-byte header, then per tuple an int16
// field count and per field an int32 length and the bytes; a field count of -1 ends it) into
// board rows. libpq hands it out one CopyData message at a time, in practice a tuple each (the
// header riding with the first), but nothing promises that: a tuple cut across two chunks is
// kept until the rest arrives.
class BoardCopyParser {
 public:
  explicit BoardCopyParser(const BoardVisitor& visit) : visit_(visit) {}

  // False if the stream is malformed.
  bool feed(std::string_view chunk) {
    if (pending_.empty()) {
      std::size_t used = 0;
      if (!parse(chunk, used)) return false;
      pending_.assign(chunk.substr(used));
      return true;
    }
    pending_.append(chunk);
    std::size_t used = 0;
    if (!parse(pending_, used)) return false;
    pending_.erase(0, used);
    return true;
  }
  bool complete() const { return ended_ && pending_.empty(); }

 private:
  static constexpr std::string_view kSignature{"PGCOPY\n\377\r\n\0", 11};

  // Visits every whole tuple of data; used: the bytes consumed.
  bool parse(std::string_view data, std::size_t& used) {
    std::size_t p = 0;
    if (!header_done_) {
      if (data.size() < 19) return true;  // used = 0: wait for the rest
      if (data.substr(0, 11) != kSignature) return false;
      const std::size_t extension = get_be32(data.data() + 15);
      if (data.size() - 19 < extension) return true;
      p = 19 + extension;
      header_done_ = true;
    }
    while (!ended_ && data.size() - p >= 2) {
      const auto fields = static_cast<std::int16_t>((static_cast<unsigned char>(data[p]) << 8) |
                                                    static_cast<unsigned char>(data[p + 1]));
      if (fields == -1) {
        ended_ = true;
        p += 2;
        break;
      }
      if (fields != 4) return false;
      std::size_t q = p + 2;
      std::string_view field[4];
      int have = 0;
      for (; have < 4; ++have) {
        if (data.size() - q < 4) break;
        const auto length = static_cast<std::int32_t>(get_be32(data.data() + q));
        if (length < 0) return false;  // NULL: every column is NOT NULL
        q += 4;
        if (data.size() - q < static_cast<std::size_t>(length)) break;
        field[have] = data.substr(q, static_cast<std::size_t>(length));
        q += static_cast<std::size_t>(length);
      }
      if (have < 4) break;  // cut: the rest comes with the next chunk
      if (field[2].size() != 8 || field[3].size() != 8) return false;
      visit_(BoardRow{.board = field[0],
                      .member = field[1],
                      .score = std::bit_cast<double>(get_be64(field[2].data())),
                      .seq = get_be64(field[3].data())});
      p = q;
    }
    if (ended_ && p != data.size()) return false;  // bytes after the trailer
    used = p;
    return true;
  }

  const BoardVisitor& visit_;
  std::string pending_;
  bool header_done_ = false;
  bool ended_ = false;
};

}  // namespace

namespace detail {

std::vector<PgConnection::Statement> board_read_statements(const std::string& board_table) {
  return {{kBoardTop, board_top_sql(board_table), {kByteaOid, kInt8Oid, kInt8Oid}},
          {kBoardMember, board_member_sql(board_table), {kByteaOid, kByteaOid}},
          {kBoardAround, board_around_sql(board_table), {kByteaOid, kByteaOid, kInt8Oid}},
          {kBoardInfo, with_table(kBoardInfoSql, board_table), {kByteaOid}}};
}

}  // namespace detail

// --- boards ----------------------------------------------------------------------------------

void PostgresStore::board_top(std::string board, std::uint64_t offset, std::uint64_t n,
                              BoardPageDone done) {
  BoardOp op;
  op.kind = BoardOp::Kind::top;
  op.board = std::move(board);
  op.offset = offset;
  op.n = n;
  op.done = std::move(done);
  enqueue_board(std::move(op));
}

void PostgresStore::board_member(std::string board, std::string member, BoardPageDone done) {
  BoardOp op;
  op.kind = BoardOp::Kind::member;
  op.board = std::move(board);
  op.member = std::move(member);
  op.done = std::move(done);
  enqueue_board(std::move(op));
}

void PostgresStore::board_around(std::string board, std::string member, std::uint64_t n,
                                 BoardPageDone done) {
  BoardOp op;
  op.kind = BoardOp::Kind::around;
  op.board = std::move(board);
  op.member = std::move(member);
  op.n = n;
  op.done = std::move(done);
  enqueue_board(std::move(op));
}

void PostgresStore::board_info(std::string board, BoardPageDone done) {
  BoardOp op;
  op.kind = BoardOp::Kind::info;
  op.board = std::move(board);
  op.done = std::move(done);
  enqueue_board(std::move(op));
}

void PostgresStore::enqueue_board(BoardOp op) {
  op.issued = Clock::now();
  {
    std::lock_guard lock(read_mu_);
    if (!read_stopping_) {
      board_queue_.push_back(std::move(op));
      read_cv_.notify_one();
      return;
    }
  }
  count_error();
  timer_->post([done = std::move(op.done)] {
    BoardPage page;
    page.status = {Code::closed, "store closed"};
    done(std::move(page));
  });
}

// A board read's statement: its prepared name, its SQL and its binary parameters.
struct PostgresStore::BoardQuery {
  const char* name = nullptr;
  std::string sql;
  std::vector<Param> params;
};

PostgresStore::BoardQuery PostgresStore::board_query(const BoardOp& op) const {
  using Kind = BoardOp::Kind;
  const auto n = static_cast<std::uint64_t>(std::min(op.n, kMaxCount));
  const auto offset = static_cast<std::uint64_t>(std::min(op.offset, kMaxCount));
  BoardQuery q;
  q.params.emplace_back(op.board, kByteaOid);
  switch (op.kind) {
    case Kind::top:
      q.name = kBoardTop;
      q.sql = board_top_sql(board_table_);
      q.params.emplace_back(be64(offset), kInt8Oid);
      q.params.emplace_back(be64(n), kInt8Oid);
      break;
    case Kind::member:
      q.name = kBoardMember;
      q.sql = board_member_sql(board_table_);
      q.params.emplace_back(op.member, kByteaOid);
      break;
    case Kind::around:
      q.name = kBoardAround;
      q.sql = board_around_sql(board_table_);
      q.params.emplace_back(op.member, kByteaOid);
      q.params.emplace_back(be64(n), kInt8Oid);
      break;
    case Kind::info:
      q.name = kBoardInfo;
      q.sql = with_table(kBoardInfoSql, board_table_);
      break;
  }
  return q;
}

// One statement (one round trip) per call; its result in binary.
void PostgresStore::serve_board(PgConnection& conn, BoardOp& op) {
  using Kind = BoardOp::Kind;
  const BoardQuery q = board_query(op);
  PgResult res;
  BoardPage page;
  page.status = run_read(conn, [&](PGconn* c) {
    res.reset(exec_params(c, conn.prepared() ? q.name : nullptr, q.sql, q.params));
    return res.get();
  });
  const PGresult* r = res.get();
  if (page.status.ok() && PQntuples(r) < 1) {  // every statement returns a row at least
    page.status = {Code::io_error, "postgres: read failed: no row"};
  }
  if (page.status.ok()) {
    switch (op.kind) {
      case Kind::top:
        page.status = read_top(r, std::min(op.offset, kMaxCount), page);
        break;
      case Kind::member:
        page.status = read_member(r, std::move(op.member), page);
        break;
      case Kind::around:
        page.status = read_around(r, op.member, page);
        break;
      case Kind::info:
        page.status = read_info(r, page);
        break;
    }
  }
  if (!page.status.ok()) {  // no members, no entries, as the contract reads
    page.members = 0;
    page.entries.clear();
    if (page.status.code != Code::not_found) {
      count_error();
      note_error(page.status.message);
    }
  }
  res.reset();
  reads_.fetch_add(1);
  deliver(op.issued, op.done, std::move(page), Clock::now());
}

// A connection of its own (the readers keep serving), one binary COPY of the whole table: no
// per-row result objects in libpq and no text conversion of the scores, which is what makes a
// million rows load in well under the 2 s the server's startup allows them
// (store/README.md, "Board rows in PostgreSQL", has the measurement).
Status PostgresStore::load_boards(const BoardVisitor& visit) {
  {
    std::lock_guard lock(read_mu_);
    if (read_stopping_) {
      count_error();
      return {Code::closed, "store closed"};
    }
  }
  auto fail = [&](std::string why) {
    count_error();
    note_error(why);
    return Status{Code::io_error, std::move(why)};
  };
  PgConnection conn(conninfo_, false);
  std::string error;
  if (!conn.connect(error)) return fail(libpq_error(error));
  const std::string sql = with_table(kBoardCopySql, board_table_);
  PgResult r(PQexec(conn.get(), sql.c_str()));
  if (PQresultStatus(r.get()) != PGRES_COPY_OUT) {
    return fail(
        "postgres: cannot read the boards: " +
        libpq_error(one_line(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn.get()))));
  }
  BoardCopyParser parser(visit);
  for (;;) {
    char* data = nullptr;
    const int got = PQgetCopyData(conn.get(), &data, 0);  // blocking: one message or the end
    if (got == -1) break;                                 // the end of the COPY
    if (got < 0) {
      return fail("postgres: cannot read the boards: " + conn.error());
    }
    const std::unique_ptr<char, decltype(&PQfreemem)> owned(data, &PQfreemem);
    if (!parser.feed({data, static_cast<std::size_t>(got)})) {
      return fail("postgres: cannot read the boards: malformed COPY data");
    }
  }
  r.reset(PQgetResult(conn.get()));
  if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
    return fail(
        "postgres: cannot read the boards: " +
        libpq_error(one_line(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn.get()))));
  }
  if (!parser.complete()) return fail("postgres: cannot read the boards: truncated COPY data");
  return {};
}

}  // namespace store
