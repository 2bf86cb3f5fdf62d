// postgres_store.cc — PostgresStore: the pipelined group committer (coalescing, existed, clears,
// board rows), the batched key readers, the binary parameters, and reconnection after a lost
// connection (store/README.md, "The PostgreSQL store" and "Board rows in PostgreSQL", says why
// each is so). The board reads and load_boards are postgres_boards.cc's; what both files use is
// postgres_internal.hh's.
#include "store/postgres_store.hh"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "store/postgres_internal.hh"
#include "store/timer_thread.hh"

namespace store {

using namespace detail;  // postgres_internal.hh: the half both files share

// The distinct full texts already written, process-wide as stderr is (every store of the
// process writes there): a reconnect that fails every 2 s for an hour writes its text once.
// Bounded: past kRemembered distinct texts it starts again (and may repeat one).
std::string detail::libpq_error(std::string_view full) {
  std::string scrubbed = scrub_libpq_text(full);
  if (scrubbed == full) return scrubbed;  // nothing hidden: what is reported says it all
  constexpr std::size_t kRemembered = 64;
  static std::mutex mu;
  static std::set<std::string, std::less<>> written;
  std::lock_guard lock(mu);
  if (written.contains(full)) return scrubbed;
  if (written.size() >= kRemembered) written.clear();
  written.emplace(full);
  std::cerr << "cache_server: libpq's full text (clients see it without names): " << full
            << std::endl;
  return scrubbed;
}

namespace {

using namespace std::chrono_literals;

// The statements with parameters, by table (quoted), and their prepared names.
constexpr const char* kSelectExisted = "cache_select_existed";
constexpr const char* kUpsert = "cache_upsert";
constexpr const char* kDelete = "cache_delete";
constexpr const char* kRead = "cache_read";
constexpr std::string_view kSelectExistedSql =
    "SELECT key, expires_at FROM {table} WHERE key = ANY($1::bytea[]) FOR UPDATE";
constexpr std::string_view kUpsertSql =
    "INSERT INTO {table}(key, value, expires_at) SELECT * FROM unnest($1::bytea[], "
    "$2::bytea[], $3::int8[]) ON CONFLICT (key) DO UPDATE SET value = "
    "EXCLUDED.value, expires_at = EXCLUDED.expires_at, updated_at = now()";
constexpr std::string_view kDeleteSql = "DELETE FROM {table} WHERE key = ANY($1::bytea[])";
constexpr std::string_view kReadSql =
    "SELECT key, value, expires_at FROM {table} WHERE key = ANY($1::bytea[])";
// Expired rows, by the partial index on expires_at (create_tables). The condition is on the
// table itself, so a row a concurrent upsert gives a later expiry is re-checked and kept.
std::string purge_sql(const std::string& table, std::uint64_t now_ms) {
  return "DELETE FROM " + table + " WHERE expires_at BETWEEN 1 AND " + std::to_string(now_ms);
}

// The board rows' statements (store/README.md, "Board rows in PostgreSQL"), by board table.
// Writer: a segment's coalesced rows, as arrays.
constexpr const char* kBoardUpsert = "cache_board_upsert";
constexpr const char* kBoardRemove = "cache_board_remove";
constexpr const char* kBoardDrop = "cache_board_drop";
constexpr std::string_view kBoardUpsertSql =
    "INSERT INTO {table}(board, member, score, seq) SELECT * FROM "
    "unnest($1::bytea[], $2::bytea[], $3::float8[], $4::int8[]) ON CONFLICT "
    "(board, member) DO UPDATE SET score = EXCLUDED.score, seq = EXCLUDED.seq";
constexpr std::string_view kBoardRemoveSql =
    "DELETE FROM {table} AS t USING unnest($1::bytea[], $2::bytea[]) AS d(board, "
    "member) WHERE t.board = d.board AND t.member = d.member";
constexpr std::string_view kBoardDropSql = "DELETE FROM {table} WHERE board = ANY($1::bytea[])";
// The board reads' statements are postgres_boards.cc's (board_read_statements).

constexpr auto kIdleCheck = 200ms;  // an idle connection is checked this often
constexpr auto kPurgeEvery = 1s;    // expired rows are deleted this often (purge_expired_if_due)
// close(): how long in-flight operations may take before the connections are shut down under
// them (a server that stopped answering must not hold the process's shutdown).
constexpr auto kCloseGrace = 1s;
constexpr auto kFirstBackoff = 50ms;
constexpr auto kMaxBackoff = 2000ms;

// When a thread waiting for work next looks after its connection: an idle one is checked every
// kIdleCheck, a lost one is retried when its backoff expires.
Clock::time_point next_check(const PgConnection& conn) {
  return conn.up() ? Clock::now() + kIdleCheck : conn.next_attempt;
}

// The binary wire format of a one-dimensional bytea[] without NULLs: ndim, has-null flag,
// element type, then the dimension and its lower bound, then (length, bytes) per element; every
// integer a big-endian int32. Elements are keys, names and values of at most kPostgresMaxValue
// bytes (write() refuses longer ones), so their lengths fit.
std::string bytea_array(std::span<const std::string_view> items) {
  std::size_t size = 20;
  for (auto s : items) size += 4 + s.size();
  std::string out;
  out.reserve(size);
  put_be32(out, 1);  // ndim
  put_be32(out, 0);  // no NULLs
  put_be32(out, kByteaOid);
  put_be32(out, static_cast<std::uint32_t>(items.size()));
  put_be32(out, 1);  // lower bound
  for (auto s : items) {
    put_be32(out, static_cast<std::uint32_t>(s.size()));
    out.append(s);
  }
  return out;
}

// A one-dimensional array of 8-byte elements (int8, or float8 as its IEEE bits: a double goes
// through exactly, no decimal conversion), in the same wire format.
std::string array8(Oid element, std::span<const std::uint64_t> items) {
  std::string out;
  out.reserve(20 + items.size() * 12);
  put_be32(out, 1);  // ndim
  put_be32(out, 0);  // no NULLs
  put_be32(out, element);
  put_be32(out, static_cast<std::uint32_t>(items.size()));
  put_be32(out, 1);  // lower bound
  for (std::uint64_t v : items) {
    put_be32(out, 8);
    put_be64(out, v);
  }
  return out;
}

// Splits rows [0, n) of a statement whose parameters are `columns` arrays into runs whose
// parameters stay within max_bytes: 20 bytes of header per array, then per row and column
// 4 bytes of length and the element (row_bytes(i): row i's elements). A row over max_bytes
// alone goes alone.
template <class RowBytes>
std::vector<std::pair<std::size_t, std::size_t>> split_rows(std::size_t n, std::size_t columns,
                                                            std::size_t max_bytes,
                                                            RowBytes row_bytes) {
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  const std::size_t header = 20 * columns;
  std::size_t begin = 0;
  std::size_t bytes = header;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t b = row_bytes(i) + 4 * columns;
    if (i > begin && bytes + b > max_bytes) {
      runs.emplace_back(begin, i);
      begin = i;
      bytes = header;
    }
    bytes += b;
  }
  if (n > begin) runs.emplace_back(begin, n);
  return runs;
}

// One query of a pipeline: its SQL and its parameters.
struct Query {
  std::string_view sql;
  std::vector<Param> params;
  const char* prepared = nullptr;  // its prepared statement's name, if it has one
};

// The outcome of one pipeline: a result per query (null if the query produced none), whether
// the connection was lost, and the first error.
struct PipelineOutcome {
  std::vector<PgResult> results;
  bool lost = false;
  bool sent_all = false;  // every query was handed to libpq (the last one, COMMIT, included)
  std::string error;
};

// Why the queries cannot be sent (a parameter too long for the protocol: GroupPlan keeps them
// far below), or empty.
std::string too_long(const std::vector<Query>& queries) {
  for (const Query& q : queries) {
    for (const Param& p : q.params) {
      if (p.bytes.size() > kMaxParamBytes) {
        return "a parameter of " + std::to_string(p.bytes.size()) + " bytes (at most " +
               std::to_string(kMaxParamBytes) + ")";
      }
    }
  }
  return {};
}

// Hands one query to libpq (which buffers it); false if it cannot.
bool send_query(PGconn* c, const Query& q, bool use_prepared) {
  const ParamArrays p(q.params);
  if (use_prepared && q.prepared != nullptr) {
    return PQsendQueryPrepared(c, q.prepared, p.count(), p.values.data(), p.lengths.data(),
                               p.formats.data(), 1) == 1;
  }
  const std::string sql(q.sql);
  return PQsendQueryParams(c, sql.c_str(), p.count(), p.types.data(), p.values.data(),
                           p.lengths.data(), p.formats.data(), 1) == 1;
}

// Flushes what is still unsent and reads every result up to the Sync's, polling between: a
// result per query into out. Null when done, else why the connection is unusable.
const char* read_results(PGconn* c, std::size_t queries, PipelineOutcome& out) {
  std::size_t finished = 0;  // queries whose results (and terminating null) were read
  bool have_current = false;
  for (;;) {
    const int flushed = PQflush(c);  // 0: all sent, 1: more to send, -1: error
    if (flushed < 0) return "cannot send";
    while (!PQisBusy(c)) {
      PgResult r(PQgetResult(c));
      if (PQstatus(c) == CONNECTION_BAD) return "connection lost";
      if (!r) {  // the end of one query's results
        if (!have_current) out.results.emplace_back();
        have_current = false;
        if (++finished > queries) return "unexpected end of results";
        continue;
      }
      const ExecStatusType st = PQresultStatus(r.get());
      if (st == PGRES_PIPELINE_SYNC) return nullptr;
      if (st == PGRES_FATAL_ERROR && out.error.empty()) {
        out.error = libpq_error(one_line(PQresultErrorMessage(r.get())));
      }
      if (!have_current) {
        out.results.push_back(std::move(r));
        have_current = true;
      }
    }
    pollfd p{PQsocket(c), static_cast<short>(POLLIN | (flushed == 1 ? POLLOUT : 0)), 0};
    if (p.fd < 0) return "connection lost";
    const int n = poll(&p, 1, 1000);
    if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0 && PQconsumeInput(c) == 0) {
      return "connection lost";
    }
  }
}

// Sends the queries and a Sync on a connection in nonblocking pipeline mode, then reads every
// result up to the Sync's. Nonblocking, so a large group cannot deadlock against the server's
// own output (it is sending results while we are still sending queries).
PipelineOutcome run_pipeline(PGconn* c, const std::vector<Query>& queries, bool use_prepared) {
  PipelineOutcome out;
  // The connection is unusable from here on (a failed send, a closed socket): `lost` unless the
  // caller finds it still CONNECTION_OK, which libpq does not leave it in after these.
  auto broken = [&](const char* what) {
    out.lost = true;
    out.error = std::string(what) + ": " + libpq_error(one_line(PQerrorMessage(c)));
    return std::move(out);
  };
  out.error = too_long(queries);
  if (!out.error.empty()) return out;  // nothing sent: the transaction is not even begun
  for (const Query& q : queries) {
    if (!send_query(c, q, use_prepared)) return broken("cannot send");
  }
  out.sent_all = true;  // COMMIT is queued: it may reach the server even if the Sync fails
  if (PQpipelineSync(c) != 1) return broken("cannot send");
  if (const char* what = read_results(c, queries.size(), out)) return broken(what);
  return out;
}

bool result_ok(const PGresult* r) {
  if (r == nullptr) return false;
  const ExecStatusType st = PQresultStatus(r);
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

// The statements of one group (store/README.md, "What one commit sends"): BEGIN, the existed
// lookup, then per segment (between clears) its TRUNCATE, the dropped boards, the board rows
// and the keys, each key and each board row coalesced to its last op in the segment (PostgreSQL
// refuses to touch one row twice in one INSERT ... ON CONFLICT). Each kind of statement is sent
// as several when its arrays would pass max_bytes, all in the one transaction.
class GroupPlan {
 public:
  GroupPlan(const std::string& table, const std::string& board_table, std::size_t max_bytes)
      : select_sql_(with_table(kSelectExistedSql, table)),
        put_sql_(with_table(kUpsertSql, table)),
        del_sql_(with_table(kDeleteSql, table)),
        truncate_sql_("TRUNCATE " + table + ", " + board_table),
        board_put_sql_(with_table(kBoardUpsertSql, board_table)),
        board_del_sql_(with_table(kBoardRemoveSql, board_table)),
        board_drop_sql_(with_table(kBoardDropSql, board_table)),
        max_bytes_(max_bytes) {
    queries.push_back({"BEGIN", {}});
  }
  GroupPlan(const GroupPlan&) = delete;  // queries point into the SQL above
  GroupPlan& operator=(const GroupPlan&) = delete;

  // SELECT ... FOR UPDATE of the keys: first in the transaction, so it sees the state the group
  // applies to (and locks the rows that exist against other writers of the table).
  void add_lookup(const std::vector<std::string_view>& keys) {
    auto bytes = [&](std::size_t i) { return keys[i].size(); };
    for (auto [b, e] : split_rows(keys.size(), 1, max_bytes_, bytes)) {
      lookups.push_back(queries.size());
      queries.push_back(
          {select_sql_, {bytea_array(std::span(keys).subspan(b, e - b))}, kSelectExisted});
    }
  }

  void add_group(const std::vector<GroupCommitter::Op>& group) {
    for (const auto& op : group) {
      if (!op.refused.empty()) continue;
      if (op.is_clear) {
        emit_segment();
        truncate_pending_ = true;
        continue;
      }
      for (const Write& w : op.batch) add_op(w);
    }
    emit_segment();
  }

  std::vector<Query> queries;        // BEGIN, ... (the caller adds COMMIT)
  std::vector<std::size_t> lookups;  // which queries are the existed lookups
  bool statements = false;           // anything to commit?
  std::uint64_t ops = 0;             // write ops, before coalescing

 private:
  void add_op(const Write& w) {
    ++ops;
    switch (w.kind) {
      case Write::Kind::put:
      case Write::Kind::del:
        last_[w.key] = &w;
        break;
      case Write::Kind::board_set:
      case Write::Kind::board_remove:
        rows_[w.key][w.member] = &w;
        break;
      case Write::Kind::board_drop:
        rows_.erase(w.key);
        dropped_.insert(w.key);
        break;
    }
  }

  void emit_segment() {
    if (truncate_pending_) {
      queries.push_back({truncate_sql_, {}});
      truncate_pending_ = false;
      after_truncate_ = true;
      statements = true;
    }
    emit_drops();
    emit_board_rows();
    emit_keys();
  }

  // After a truncate in this transaction, removes and drops have nothing left to remove.
  void emit_drops() {
    if (!dropped_.empty() && !after_truncate_) {
      const std::vector<std::string_view> boards(dropped_.begin(), dropped_.end());
      auto bytes = [&](std::size_t i) { return boards[i].size(); };
      for (auto [b, e] : split_rows(boards.size(), 1, max_bytes_, bytes)) {
        queries.push_back(
            {board_drop_sql_, {bytea_array(std::span(boards).subspan(b, e - b))}, kBoardDrop});
      }
      statements = true;
    }
    dropped_.clear();
  }

  void emit_board_rows() {
    BoardColumns set, del;
    for (const auto& [board, members] : rows_) {
      for (const auto& [member, w] : members) {
        if (w->kind == Write::Kind::board_set) {
          set.add(board, member, std::bit_cast<std::uint64_t>(w->score), w->seq);
        } else if (!after_truncate_) {
          del.add(board, member, 0, 0);
        }
      }
    }
    rows_.clear();
    auto bytes = [](const BoardColumns& c) {
      return [&c](std::size_t i) { return c.boards[i].size() + c.members[i].size() + 16; };
    };
    for (auto [b, e] : split_rows(set.boards.size(), 4, max_bytes_, bytes(set))) {
      queries.push_back({board_put_sql_,
                         {bytea_array(set.board_span(b, e)), bytea_array(set.member_span(b, e)),
                          Param(array8(kFloat8Oid, set.score_span(b, e)), kFloat8ArrayOid),
                          Param(array8(kInt8Oid, set.seq_span(b, e)), kInt8ArrayOid)},
                         kBoardUpsert});
      statements = true;
    }
    for (auto [b, e] : split_rows(del.boards.size(), 2, max_bytes_, bytes(del))) {
      queries.push_back({board_del_sql_,
                         {bytea_array(del.board_span(b, e)), bytea_array(del.member_span(b, e))},
                         kBoardRemove});
      statements = true;
    }
  }

  void emit_keys() {
    if (last_.empty()) return;
    std::vector<const Write*> ws;
    ws.reserve(last_.size());
    for (const auto& [k, w] : last_) ws.push_back(w);
    last_.clear();
    // Sorted: the B-tree sees keys in order, and two stores sharing a table lock rows in the
    // same order.
    std::sort(ws.begin(), ws.end(), [](const Write* a, const Write* b) { return a->key < b->key; });
    std::vector<std::string_view> put_keys, put_values, del_keys;
    std::vector<std::uint64_t> put_expiry;
    for (const Write* w : ws) {
      if (w->kind == Write::Kind::put) {
        put_keys.push_back(w->key);
        put_values.push_back(w->value);
        put_expiry.push_back(w->expires_at_ms);
      } else if (!after_truncate_) {  // nothing to delete after a truncate in this transaction
        del_keys.push_back(w->key);
      }
    }
    auto put_bytes = [&](std::size_t i) { return put_keys[i].size() + put_values[i].size() + 8; };
    for (auto [b, e] : split_rows(put_keys.size(), 3, max_bytes_, put_bytes)) {
      queries.push_back(
          {put_sql_,
           {bytea_array(std::span(put_keys).subspan(b, e - b)),
            bytea_array(std::span(put_values).subspan(b, e - b)),
            Param(array8(kInt8Oid, std::span(put_expiry).subspan(b, e - b)), kInt8ArrayOid)},
           kUpsert});
    }
    auto del_bytes = [&](std::size_t i) { return del_keys[i].size(); };
    for (auto [b, e] : split_rows(del_keys.size(), 1, max_bytes_, del_bytes)) {
      queries.push_back({del_sql_, {bytea_array(std::span(del_keys).subspan(b, e - b))}, kDelete});
    }
    statements = true;
  }

  // A segment's board rows as columns (sorted by board, then member).
  struct BoardColumns {
    std::vector<std::string_view> boards, members;
    std::vector<std::uint64_t> scores, seqs;  // float8 bits, int8
    void add(std::string_view board, std::string_view member, std::uint64_t score,
             std::uint64_t seq) {
      boards.push_back(board);
      members.push_back(member);
      scores.push_back(score);
      seqs.push_back(seq);
    }
    std::span<const std::string_view> board_span(std::size_t b, std::size_t e) const {
      return std::span(boards).subspan(b, e - b);
    }
    std::span<const std::string_view> member_span(std::size_t b, std::size_t e) const {
      return std::span(members).subspan(b, e - b);
    }
    std::span<const std::uint64_t> score_span(std::size_t b, std::size_t e) const {
      return std::span(scores).subspan(b, e - b);
    }
    std::span<const std::uint64_t> seq_span(std::size_t b, std::size_t e) const {
      return std::span(seqs).subspan(b, e - b);
    }
  };

  const std::string select_sql_, put_sql_, del_sql_, truncate_sql_;
  const std::string board_put_sql_, board_del_sql_, board_drop_sql_;
  const std::size_t max_bytes_;
  std::unordered_map<std::string_view, const Write*> last_;  // key -> its last op
  // Board rows, coalesced the same way: board -> member -> the row's last op since the board's
  // last drop in this segment. A drop forgets the board's earlier ops and is sent before the
  // segment's row statements, so it removes what was there before it (earlier groups, earlier
  // ops) and never a row set after it. Sorted maps: rows are locked in (board, member) order,
  // as keys are.
  std::map<std::string_view, std::map<std::string_view, const Write*>> rows_;
  std::set<std::string_view> dropped_;  // boards dropped in this segment, sorted
  bool truncate_pending_ = false;
  bool after_truncate_ = false;
};

}  // namespace

// --- open / close ----------------------------------------------------------------------------

namespace {

// Empty, or why open() refuses the options.
std::string options_error(const PostgresOptions& options) {
  if (options.connections < 2) {
    return "postgres: needs at least 2 connections (one writer, one reader), got " +
           std::to_string(options.connections);
  }
  if (options.table.empty()) return "postgres: the table name is empty";
  if (options.board_table.empty()) return "postgres: the board table name is empty";
  return {};
}

// The tables' names, quoted as identifiers, and the ranking index's.
struct Names {
  std::string table, board_table, board_index, expiry_index;
};

bool quote(PgConnection& setup, const std::string& identifier, std::string& out,
           std::string& error) {
  std::unique_ptr<char, decltype(&PQfreemem)> quoted(
      PQescapeIdentifier(setup.get(), identifier.data(), identifier.size()), &PQfreemem);
  if (!quoted) {
    error = "postgres: bad table name '" + identifier + "': " + setup.error();
    return false;
  }
  out = quoted.get();
  return true;
}

// name's first `bytes` bytes at most, cut at a UTF-8 character boundary.
std::string cut_name(const std::string& name, std::size_t bytes) {
  std::string cut = name.substr(0, bytes);
  while (cut.size() < name.size() && !cut.empty() &&
         (static_cast<unsigned char>(name[cut.size()]) & 0xC0) == 0x80) {
    cut.pop_back();
  }
  return cut;
}

bool quote_names(PgConnection& setup, const PostgresOptions& options, Names& names,
                 std::string& error) {
  // The indexes are named after their tables, cut so that the names fit PostgreSQL's 63 bytes:
  // a name it truncated itself could collide with the table's.
  std::string index_name = cut_name(options.board_table, 58) + "_rank";
  return quote(setup, options.table, names.table, error) &&
         quote(setup, options.board_table, names.board_table, error) &&
         quote(setup, index_name, names.board_index, error) &&
         quote(setup, cut_name(options.table, 56) + "_expiry", names.expiry_index, error);
}

// Runs a DDL statement; false (and error: what, then why) if it fails.
bool run_ddl(PgConnection& setup, const std::string& ddl, const std::string& what,
             std::string& error) {
  PgResult r(PQexec(setup.get(), ddl.c_str()));
  if (PQresultStatus(r.get()) == PGRES_COMMAND_OK) return true;
  error = "postgres: cannot create " + what + ": " +
          one_line(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(setup.get()));
  return false;
}

// An existing table must have the columns the statements use: `columns` of it, of these types.
bool probe_table(PgConnection& setup, const std::string& table, const std::string& columns,
                 const std::vector<Oid>& types, const std::string& shape, std::string& error) {
  const std::string probe = "SELECT " + columns + " FROM " + table + " LIMIT 0";
  PgResult r(PQexec(setup.get(), probe.c_str()));
  bool ok = PQresultStatus(r.get()) == PGRES_TUPLES_OK;
  for (std::size_t i = 0; ok && i < types.size(); ++i) {
    ok = PQftype(r.get(), static_cast<int>(i)) == types[i];
  }
  if (ok) return true;
  error = "postgres: table " + table + " exists but is not " + shape + ": " +
          (r && PQresultStatus(r.get()) != PGRES_TUPLES_OK ? one_line(PQresultErrorMessage(r.get()))
                                                           : std::string("wrong column types"));
  return false;
}

// The tables (created if missing, checked if not). The board rows: the primary key serves the
// upsert and the removes, the index the ranking (WHERE board = $1 ORDER BY score DESC, seq:
// top, rank counts, around, max/min); it includes member so that a top page is an index-only
// scan (postgres_boards.cc).
bool create_tables(PgConnection& setup, const Names& n, std::string& error) {
  const std::string keys = "table " + n.table, boards = "board table " + n.board_table;
  const std::pair<std::string, const std::string*> ddl[] = {
      {"CREATE TABLE IF NOT EXISTS " + n.table +
           "(key bytea primary key, value bytea not null, "
           "updated_at timestamptz not null default now(), expires_at bigint not null default 0)",
       &keys},
      // A table made before expiry: the column (a constant default: no rewrite) and the purge's
      // partial index (only rows with an expiry).
      {"ALTER TABLE " + n.table + " ADD COLUMN IF NOT EXISTS expires_at bigint not null default 0",
       &keys},
      {"CREATE INDEX IF NOT EXISTS " + n.expiry_index + " ON " + n.table +
           "(expires_at) WHERE expires_at <> 0",
       &keys},
      {"CREATE TABLE IF NOT EXISTS " + n.board_table +
           "(board bytea, member bytea, score double precision not null, "
           "seq bigint not null, primary key (board, member))",
       &boards},
      {"CREATE INDEX IF NOT EXISTS " + n.board_index + " ON " + n.board_table +
           "(board, score DESC, seq) INCLUDE (member)",
       &boards},
  };
  for (const auto& [sql, what] : ddl) {
    if (!run_ddl(setup, sql, *what, error)) return false;
  }
  return probe_table(setup, n.table, "key, value, updated_at, expires_at",
                     {kByteaOid, kByteaOid, kTimestamptzOid, kInt8Oid},
                     "(key bytea, value bytea, updated_at timestamptz, expires_at bigint)",
                     error) &&
         probe_table(setup, n.board_table, "board, member, score, seq",
                     {kByteaOid, kByteaOid, kFloat8Oid, kInt8Oid},
                     "(board bytea, member bytea, score double precision, seq bigint)", error);
}

// What each connection prepares: the writer the group's statements, the readers theirs.
void use_statements(std::vector<std::unique_ptr<PgConnection>>& conns, const Names& n) {
  const std::vector<Oid> arr{kByteaArrayOid};
  const std::vector<Oid> arr2{kByteaArrayOid, kByteaArrayOid};
  conns[0]->use_statements(
      {{kSelectExisted, with_table(kSelectExistedSql, n.table), arr},
       {kUpsert, with_table(kUpsertSql, n.table), {kByteaArrayOid, kByteaArrayOid, kInt8ArrayOid}},
       {kDelete, with_table(kDeleteSql, n.table), arr},
       {kBoardUpsert,
        with_table(kBoardUpsertSql, n.board_table),
        {kByteaArrayOid, kByteaArrayOid, kFloat8ArrayOid, kInt8ArrayOid}},
       {kBoardRemove, with_table(kBoardRemoveSql, n.board_table), arr2},
       {kBoardDrop, with_table(kBoardDropSql, n.board_table), arr}});
  for (std::size_t i = 1; i < conns.size(); ++i) {
    std::vector<PgConnection::Statement> reads{{kRead, with_table(kReadSql, n.table), arr}};
    for (auto& st : board_read_statements(n.board_table)) reads.push_back(std::move(st));
    conns[i]->use_statements(std::move(reads));
  }
}

}  // namespace

std::unique_ptr<PostgresStore> PostgresStore::open(const PostgresOptions& options,
                                                   std::string& error) {
  error = options_error(options);
  if (!error.empty()) return nullptr;
  std::vector<std::unique_ptr<PgConnection>> conns;
  for (int i = 0; i < options.connections; ++i) {
    conns.push_back(std::make_unique<PgConnection>(options.conninfo, i == 0));
  }
  // The schema, on a reader connection (blocking mode) before the writer enters pipeline mode.
  PgConnection& setup = *conns[1];
  Names names;
  if (!setup.connect(error) || !quote_names(setup, options, names, error) ||
      !create_tables(setup, names, error)) {
    return nullptr;
  }
  use_statements(conns, names);
  setup.prepare_now();
  for (int i = 0; i < options.connections; ++i) {
    if (i != 1 && !conns[i]->connect(error)) return nullptr;
  }
  return std::make_unique<PostgresStore>(OpenKey{}, options, std::move(names.table),
                                         std::move(names.board_table), std::move(conns));
}

PostgresStore::PostgresStore(OpenKey, const PostgresOptions& options, std::string quoted_table,
                             std::string quoted_board_table,
                             std::vector<std::unique_ptr<PgConnection>> connections)
    : EngineStore(options.read_delay, kPostgresMaxValue, "postgres"),
      conninfo_(options.conninfo),
      table_(std::move(quoted_table)),
      board_table_(std::move(quoted_board_table)),
      max_statement_bytes_(options.max_statement_bytes),
      conns_(std::move(connections)) {
  start_committer();
  for (std::size_t i = 1; i < conns_.size(); ++i) {
    readers_.emplace_back([this, c = conns_[i].get()] { reader_main(*c); });
  }
}

PostgresStore::~PostgresStore() {
  close();
}

// close(), once every queue is told to stop: the threads drain their queues (queued writes are
// committed or failed), then the connections close. A server that stopped answering (hung, or
// cut off by a partition with the connection still open) would hold the committer or a reader
// forever, and the process's shutdown with it: after kCloseGrace the connections are shut down
// under them, so what is in flight fails as "outcome unknown" and nothing reconnects.
void PostgresStore::shut_down() {
  bool threads_done = false;
  std::mutex done_mu;
  std::condition_variable done_cv;
  std::thread watchdog([&] {
    std::unique_lock lock(done_mu);
    if (done_cv.wait_for(lock, kCloseGrace, [&] { return threads_done; })) return;
    abandon_.store(true);
    for (auto& c : conns_) c->abort();
  });
  committer_.join();
  for (auto& r : readers_) r.join();
  {
    std::lock_guard lock(done_mu);
    threads_done = true;
  }
  done_cv.notify_all();
  watchdog.join();
  conns_.clear();  // PQfinish: every commit was answered already
}

// --- stats, errors, connections --------------------------------------------------------------

void PostgresStore::add_stats(StoreStats& s) const {
  s.failed = false;  // nothing here is sticky
  s.connected = down_.load() == 0;
  s.reconnects = reconnects_.load();
}

void PostgresStore::mark_lost(PgConnection& conn, const std::string& why) {
  if (!conn.up()) return;
  conn.drop();
  conn.last_error = why;
  conn.backoff = 0ms;
  conn.next_attempt = Clock::now();  // the first attempt at once (a restarted server is back)
  down_.fetch_add(1);
  note_error(why);
}

void PostgresStore::keep_connection(PgConnection& conn) {
  if (!conn.up()) {
    ensure_connected(conn);
  } else if (!conn.alive()) {
    mark_lost(conn, "postgres: connection lost: " + conn.error());
  }
}

bool PostgresStore::ensure_connected(PgConnection& conn) {
  if (conn.up()) return true;
  if (abandon_.load()) {
    conn.last_error = "the store is closing and the server did not answer in time";
    return false;
  }
  const auto now = Clock::now();
  if (now < conn.next_attempt) return false;
  std::string error;
  if (conn.connect(error)) {
    conn.backoff = 0ms;
    down_.fetch_sub(1);
    reconnects_.fetch_add(1);
    return true;
  }
  conn.last_error = libpq_error(error);
  conn.backoff = std::clamp(conn.backoff * 2, std::chrono::milliseconds(kFirstBackoff),
                            std::chrono::milliseconds(kMaxBackoff));
  conn.next_attempt = Clock::now() + conn.backoff;
  note_error(conn.last_error);
  return false;
}

namespace {

// Waits (lock held on entry and exit) until ready() holds, meanwhile looking after the waiting
// thread's connection: an idle one is checked every kIdleCheck, a lost one is retried when its
// backoff expires. maintain() runs without the lock.
template <class Ready, class Maintain>
void wait_keeping_connection(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                             const PgConnection& conn, Ready ready, Maintain maintain) {
  while (!ready()) {
    if (cv.wait_until(lock, next_check(conn), ready)) return;
    lock.unlock();
    maintain();
    lock.lock();
  }
}

}  // namespace

// --- writes ----------------------------------------------------------------------------------

std::optional<GroupCommitter::Clock::time_point> PostgresStore::idle_deadline() {
  return next_check(*conns_[0]);
}

void PostgresStore::idle() {
  keep_connection(*conns_[0]);
  purge_expired_if_due();
}

// Its own transaction on the writer, never part of a group's: a failed purge fails no write.
void PostgresStore::purge_expired_if_due() {
  const auto now = Clock::now();
  if (now < next_purge_) return;
  next_purge_ = now + kPurgeEvery;
  PgConnection& conn = *conns_[0];
  if (!conn.up()) return;
  const std::string purge = purge_sql(table_, unix_now_ms());  // a Query only points at its SQL
  const std::vector<Query> queries{{"BEGIN", {}}, {purge, {}}, {"COMMIT", {}}};
  const PipelineOutcome out = run_pipeline(conn.get(), queries, false);
  const bool ok = out.results.size() == queries.size() &&
                  std::all_of(out.results.begin(), out.results.end(),
                              [](const PgResult& r) { return result_ok(r.get()); });
  if (ok) return;
  const std::string why = "postgres: removing expired rows failed: " +
                          (out.error.empty() ? std::string("unexpected result") : out.error);
  if (out.lost || conn.bad()) {
    mark_lost(conn, why);
    return;
  }
  note_error(why);
  if (PQtransactionStatus(conn.get()) != PQTRANS_IDLE) {
    PipelineOutcome rb = run_pipeline(conn.get(), {Query{"ROLLBACK", {}}}, false);
    if (rb.lost || conn.bad()) mark_lost(conn, "postgres: " + rb.error);
  }
}

// One group (GroupCommitter::Engine): every batch and clear queued since the last commit, in
// arrival order (refused batches left out), as one transaction sent as one pipeline
// (GroupPlan). existed[] comes from the database's state before the group (the SELECT ... FOR
// UPDATE first in the transaction) and an overlay of the group's own key ops, as in RocksStore.
Status PostgresStore::commit(std::vector<Op>& group) {
  purge_expired_if_due();  // a busy writer is never idle
  GroupPlan plan(table_, board_table_, max_statement_bytes_);
  plan.add_lookup(GroupCommitter::keys_to_look_up(group));
  plan.add_group(group);
  if (!plan.statements) {  // only empty batches (and refused ones)
    GroupCommitter::answer_existed(group, [](std::string_view) { return false; });
    return {};
  }
  PgConnection& conn = *conns_[0];
  // A server that went away since the last idle check: notice it before sending, so the group
  // is not sent into a dead socket (whose outcome would then be unknown).
  if (conn.up() && !conn.alive()) mark_lost(conn, "postgres: connection lost: " + conn.error());
  if (!ensure_connected(conn))
    return {Code::unavailable, "postgres: not connected: " + conn.last_error};
  plan.queries.push_back({"COMMIT", {}});

  const PipelineOutcome out = run_pipeline(conn.get(), plan.queries, conn.prepared());
  const bool committed = out.results.size() == plan.queries.size() &&
                         std::all_of(out.results.begin(), out.results.end(),
                                     [](const PgResult& r) { return result_ok(r.get()); });
  if (!committed) return commit_failed(conn, out.lost, out.sent_all, out.error);
  commits_.fetch_add(1);
  writes_.fetch_add(plan.ops);

  std::unordered_set<std::string_view> in_db;  // views into the lookups' results
  const std::uint64_t now_ms = unix_now_ms();  // an expired row counts as absent
  for (std::size_t q : plan.lookups) {
    const PGresult* sel = out.results[q].get();
    for (int i = 0, n = PQntuples(sel); i < n; ++i) {
      if (!expired(be64_at(sel, i, 1), now_ms)) in_db.insert(value_at(sel, i, 0));
    }
  }
  GroupCommitter::answer_existed(group, [&](std::string_view key) { return in_db.contains(key); });
  return {};
}

// A group that did not commit. A lost connection: the outcome is unknown if COMMIT was sent. A
// statement error (a dropped table, a permission, ...): the transaction is aborted and nothing
// of the group applied; the session, left in the aborted transaction, is rolled back.
Status PostgresStore::commit_failed(PgConnection& conn, bool lost, bool sent_all,
                                    const std::string& error) {
  if (lost || conn.bad()) {
    const std::string why = error.empty() ? "connection lost: " + conn.error() : error;
    mark_lost(conn, "postgres: " + why);
    const std::string msg =
        sent_all ? "postgres: commit outcome unknown (connection lost during the commit): " + why
                 : "postgres: commit failed (connection lost before COMMIT was sent): " + why;
    note_error(msg);
    return {Code::io_error, msg};
  }
  const std::string msg =
      "postgres: commit failed: " + (error.empty() ? std::string("unexpected result") : error);
  note_error(msg);
  if (PQtransactionStatus(conn.get()) != PQTRANS_IDLE) {
    PipelineOutcome rb = run_pipeline(conn.get(), {Query{"ROLLBACK", {}}}, false);
    if (rb.lost || conn.bad()) mark_lost(conn, "postgres: " + rb.error);
  }
  return {Code::io_error, msg};
}

// --- reads -----------------------------------------------------------------------------------

void PostgresStore::reader_main(PgConnection& conn) {
  std::vector<ReadOp> reads;
  std::optional<BoardOp> board;
  for (;;) {
    {
      std::unique_lock lock(read_mu_);
      wait_keeping_connection(
          lock, read_cv_, conn,
          [this] { return read_stopping_ || !read_queue_.empty() || !board_queue_.empty(); },
          [&] { keep_connection(conn); });
      if (read_queue_.empty() && board_queue_.empty()) return;
      reads.swap(read_queue_);
      // Key reads are batched into one SELECT; a board read is a statement of its own, so a
      // reader takes one and leaves the rest to the other readers, which serve them in
      // parallel (as a pool of connections would, one query each).
      if (!board_queue_.empty()) {
        board.emplace(std::move(board_queue_.front()));
        board_queue_.pop_front();
        if (!board_queue_.empty()) read_cv_.notify_one();
      }
    }
    if (!reads.empty()) serve_reads(conn, reads);
    reads.clear();
    if (board) serve_board(conn, *board);
    board.reset();
  }
}

// One SELECT for every distinct key of the batch.
void PostgresStore::serve_reads(PgConnection& conn, std::vector<ReadOp>& reads) {
  const std::size_t n = reads.size();
  std::vector<std::string_view> keys;
  {
    std::unordered_set<std::string_view> seen;
    for (const auto& r : reads) {
      if (seen.insert(r.key).second) keys.push_back(r.key);
    }
  }
  const std::vector<Param> params{bytea_array(keys)};
  const std::string sql = with_table(kReadSql, table_);
  PgResult res;
  const Status error = run_read(conn, [&](PGconn* c) {
    res.reset(exec_params(c, conn.prepared() ? kRead : nullptr, sql, params));
    return res.get();
  });

  struct Row {
    std::string_view value;
    std::uint64_t expires_at_ms;
  };
  std::unordered_map<std::string_view, Row> found;
  if (error.ok()) {
    const std::uint64_t now_ms = unix_now_ms();  // an expired row is not served
    for (int i = 0, rows = PQntuples(res.get()); i < rows; ++i) {
      const std::uint64_t expires_at_ms = be64_at(res.get(), i, 2);
      if (expired(expires_at_ms, now_ms)) continue;
      found.emplace(value_at(res.get(), i, 0), Row{value_at(res.get(), i, 1), expires_at_ms});
    }
  } else {
    note_error(error.message);
  }
  reads_.fetch_add(n);
  const auto now = Clock::now();
  for (auto& op : reads) {
    ReadResult r;
    if (!error.ok()) {
      count_error();
      r.status = error;
    } else if (auto it = found.find(op.key); it != found.end()) {
      r.value.assign(it->second.value);
      r.expires_at_ms = it->second.expires_at_ms;
    } else {
      r.status = {Code::not_found, {}};
    }
    deliver(op, std::move(r), now);
  }
}

}  // namespace store
