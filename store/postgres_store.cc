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
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "store/postgres_internal.hh"
#include "store/timer_thread.hh"

namespace store {

using namespace detail;  // postgres_internal.hh: the half both files share

namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMaxKey = 250;

// The statements with parameters, by table (quoted), and their prepared names.
constexpr const char* kSelectExisted = "cache_select_existed";
constexpr const char* kUpsert = "cache_upsert";
constexpr const char* kDelete = "cache_delete";
constexpr const char* kRead = "cache_read";
std::string select_existed_sql(const std::string& table) {
  return "SELECT key FROM " + table + " WHERE key = ANY($1::bytea[]) FOR UPDATE";
}
std::string upsert_sql(const std::string& table) {
  return "INSERT INTO " + table +
         "(key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])"
         " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()";
}
std::string delete_sql(const std::string& table) {
  return "DELETE FROM " + table + " WHERE key = ANY($1::bytea[])";
}
std::string read_sql(const std::string& table) {
  return "SELECT key, value FROM " + table + " WHERE key = ANY($1::bytea[])";
}

// The board rows' statements (store/README.md, "Board rows in PostgreSQL"), by board table.
// Writer: a segment's coalesced rows, as arrays.
constexpr const char* kBoardUpsert = "cache_board_upsert";
constexpr const char* kBoardRemove = "cache_board_remove";
constexpr const char* kBoardDrop = "cache_board_drop";
std::string board_upsert_sql(const std::string& bt) {
  return "INSERT INTO " + bt +
         "(board, member, score, seq)"
         " SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::float8[], $4::int8[])"
         " ON CONFLICT (board, member) DO UPDATE SET score = EXCLUDED.score, seq = EXCLUDED.seq";
}
std::string board_remove_sql(const std::string& bt) {
  return "DELETE FROM " + bt +
         " AS t USING unnest($1::bytea[], $2::bytea[]) AS d(board, member)"
         " WHERE t.board = d.board AND t.member = d.member";
}
std::string board_drop_sql(const std::string& bt) {
  return "DELETE FROM " + bt + " WHERE board = ANY($1::bytea[])";
}
// The board reads' statements are postgres_boards.cc's (board_read_statements).

constexpr auto kIdleCheck = 200ms;  // an idle connection is checked this often
// close(): how long in-flight operations may take before the connections are shut down under
// them (a server that stopped answering must not hold the process's shutdown).
constexpr auto kCloseGrace = 1s;
constexpr auto kFirstBackoff = 50ms;
constexpr auto kMaxBackoff = 2000ms;

bool key_ok(std::string_view key) {
  return !key.empty() && key.size() <= kMaxKey;
}

bool is_board_op(const Write& w) {
  return w.kind != Write::Kind::put && w.kind != Write::Kind::del;
}

// Why write() refuses a batch holding w (empty: it does not). Names as RocksStore's; a score
// that is not finite or a seq that bigint cannot hold would not rank as the in-memory boards do.
std::string refusal(const Write& w) {
  const std::string max = std::to_string(kMaxKey);
  if (!key_ok(w.key)) {
    return std::string("store write refused: a ") + (is_board_op(w) ? "board" : "key") +
           " must be 1.." + max + " bytes (got " + std::to_string(w.key.size()) + ")";
  }
  if (w.kind == Write::Kind::board_set || w.kind == Write::Kind::board_remove) {
    if (!key_ok(w.member)) {
      return "store write refused: a member must be 1.." + max + " bytes (got " +
             std::to_string(w.member.size()) + ")";
    }
  }
  if (w.kind == Write::Kind::board_set) {
    if (!std::isfinite(w.score)) return "store write refused: a board score must be finite";
    if (w.seq > static_cast<std::uint64_t>(INT64_MAX)) {
      return "store write refused: a board seq must be below 2^63";
    }
  }
  return {};
}

// The binary wire format of a one-dimensional bytea[] without NULLs: ndim, has-null flag,
// element type, then the dimension and its lower bound, then (length, bytes) per element; every
// integer a big-endian int32.
std::string bytea_array(const std::vector<std::string_view>& items) {
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
std::string array8(Oid element, const std::vector<std::uint64_t>& items) {
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

// Sends the queries and a Sync on a connection in nonblocking pipeline mode, then reads every
// result up to the Sync's. Nonblocking, so a large group cannot deadlock against the server's
// own output (it is sending results while we are still sending queries).
PipelineOutcome run_pipeline(PGconn* c, const std::vector<Query>& queries, bool use_prepared) {
  PipelineOutcome out;
  // The connection is unusable from here on (a failed send, a closed socket): `lost` unless the
  // caller finds it still CONNECTION_OK, which libpq does not leave it in after these.
  auto broken = [&](const char* what) {
    out.lost = true;
    out.error = std::string(what) + ": " + one_line(PQerrorMessage(c));
    return std::move(out);
  };
  for (const Query& q : queries) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    std::vector<Oid> types;
    for (const Param& p : q.params) {
      values.push_back(p.bytes.data());
      lengths.push_back(static_cast<int>(p.bytes.size()));
      formats.push_back(1);
      types.push_back(p.type);
    }
    if (use_prepared && q.prepared != nullptr) {
      if (PQsendQueryPrepared(c, q.prepared, static_cast<int>(values.size()), values.data(),
                              lengths.data(), formats.data(), 1) != 1) {
        return broken("cannot send");
      }
      continue;
    }
    const std::string sql(q.sql);
    if (PQsendQueryParams(c, sql.c_str(), static_cast<int>(values.size()), types.data(),
                          values.data(), lengths.data(), formats.data(), 1) != 1) {
      return broken("cannot send");
    }
  }
  out.sent_all = true;  // COMMIT is queued: it may reach the server even if the Sync fails
  if (PQpipelineSync(c) != 1) return broken("cannot send");
  std::size_t finished = 0;  // queries whose results (and terminating null) were read
  bool have_current = false;
  for (;;) {
    const int flushed = PQflush(c);  // 0: all sent, 1: more to send, -1: error
    if (flushed < 0) return broken("cannot send");
    while (!PQisBusy(c)) {
      PgResult r(PQgetResult(c));
      if (PQstatus(c) == CONNECTION_BAD) return broken("connection lost");
      if (!r) {  // the end of one query's results
        if (!have_current) out.results.emplace_back();
        have_current = false;
        if (++finished > queries.size()) return broken("unexpected end of results");
        continue;
      }
      const ExecStatusType st = PQresultStatus(r.get());
      if (st == PGRES_PIPELINE_SYNC) return out;
      if (st == PGRES_FATAL_ERROR && out.error.empty()) {
        out.error = one_line(PQresultErrorMessage(r.get()));
      }
      if (!have_current) {
        out.results.push_back(std::move(r));
        have_current = true;
      }
    }
    pollfd p{PQsocket(c), static_cast<short>(POLLIN | (flushed == 1 ? POLLOUT : 0)), 0};
    if (p.fd < 0) return broken("connection lost");
    const int n = poll(&p, 1, 1000);
    if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0 && PQconsumeInput(c) == 0) {
      return broken("connection lost");
    }
  }
}

bool result_ok(const PGresult* r) {
  if (r == nullptr) return false;
  const ExecStatusType st = PQresultStatus(r);
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

}  // namespace

// --- open / close ----------------------------------------------------------------------------

std::unique_ptr<PostgresStore> PostgresStore::open(const PostgresOptions& options,
                                                   std::string& error) {
  if (options.connections < 2) {
    error = "postgres: needs at least 2 connections (one writer, one reader), got " +
            std::to_string(options.connections);
    return nullptr;
  }
  if (options.table.empty()) {
    error = "postgres: the table name is empty";
    return nullptr;
  }
  if (options.board_table.empty()) {
    error = "postgres: the board table name is empty";
    return nullptr;
  }
  std::vector<std::unique_ptr<PgConnection>> conns;
  for (int i = 0; i < options.connections; ++i) {
    conns.push_back(std::make_unique<PgConnection>(options.conninfo, i == 0));
  }
  // The schema, on a reader connection (blocking mode) before the writer enters pipeline mode.
  PgConnection& setup = *conns[1];
  if (!setup.connect(error)) return nullptr;
  auto quote = [&](const std::string& identifier, std::string& out) {
    std::unique_ptr<char, decltype(&PQfreemem)> quoted(
        PQescapeIdentifier(setup.get(), identifier.data(), identifier.size()), &PQfreemem);
    if (!quoted) {
      error = "postgres: bad table name '" + identifier + "': " + setup.error();
      return false;
    }
    out = quoted.get();
    return true;
  };
  std::string table, board_table, board_index;
  // The ranking index is named after its table, cut (at a UTF-8 character boundary) so that the
  // name fits PostgreSQL's 63 bytes: a name it truncated itself could collide with the table's.
  std::string index_name = options.board_table.substr(0, 58);
  while (index_name.size() < options.board_table.size() && !index_name.empty() &&
         (static_cast<unsigned char>(options.board_table[index_name.size()]) & 0xC0) == 0x80) {
    index_name.pop_back();
  }
  index_name += "_rank";
  if (!quote(options.table, table) || !quote(options.board_table, board_table) ||
      !quote(index_name, board_index)) {
    return nullptr;
  }
  const std::string create = "CREATE TABLE IF NOT EXISTS " + table +
                             "(key bytea primary key, value bytea not null, "
                             "updated_at timestamptz not null default now())";
  PgResult r(PQexec(setup.get(), create.c_str()));
  if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
    error = "postgres: cannot create table " + table + ": " +
            one_line(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(setup.get()));
    return nullptr;
  }
  // An existing table must have the columns the statements use.
  const std::string probe = "SELECT key, value, updated_at FROM " + table + " LIMIT 0";
  r.reset(PQexec(setup.get(), probe.c_str()));
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQftype(r.get(), 0) != kByteaOid ||
      PQftype(r.get(), 1) != kByteaOid) {
    error =
        "postgres: table " + table +
        " exists but is not (key bytea, value bytea, updated_at timestamptz): " +
        (r && PQresultStatus(r.get()) != PGRES_TUPLES_OK ? one_line(PQresultErrorMessage(r.get()))
                                                         : std::string("wrong column types"));
    return nullptr;
  }
  // The board rows: the primary key serves the upsert and the removes, the index the ranking
  // (WHERE board = $1 ORDER BY score DESC, seq: top, rank counts, around, max/min).
  for (const std::string& ddl :
       {"CREATE TABLE IF NOT EXISTS " + board_table +
            "(board bytea, member bytea, score double precision not null, seq bigint not null, "
            "primary key (board, member))",
        "CREATE INDEX IF NOT EXISTS " + board_index + " ON " + board_table +
            "(board, score DESC, seq)"}) {
    r.reset(PQexec(setup.get(), ddl.c_str()));
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
      error = "postgres: cannot create board table " + board_table + ": " +
              one_line(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(setup.get()));
      return nullptr;
    }
  }
  const std::string board_probe =
      "SELECT board, member, score, seq FROM " + board_table + " LIMIT 0";
  r.reset(PQexec(setup.get(), board_probe.c_str()));
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQftype(r.get(), 0) != kByteaOid ||
      PQftype(r.get(), 1) != kByteaOid || PQftype(r.get(), 2) != kFloat8Oid ||
      PQftype(r.get(), 3) != kInt8Oid) {
    error =
        "postgres: table " + board_table +
        " exists but is not (board bytea, member bytea, score double precision, seq bigint): " +
        (r && PQresultStatus(r.get()) != PGRES_TUPLES_OK ? one_line(PQresultErrorMessage(r.get()))
                                                         : std::string("wrong column types"));
    return nullptr;
  }
  r.reset();
  const std::vector<Oid> arr{kByteaArrayOid};
  const std::vector<Oid> arr2{kByteaArrayOid, kByteaArrayOid};
  conns[0]->use_statements({{kSelectExisted, select_existed_sql(table), arr},
                            {kUpsert, upsert_sql(table), arr2},
                            {kDelete, delete_sql(table), arr},
                            {kBoardUpsert,
                             board_upsert_sql(board_table),
                             {kByteaArrayOid, kByteaArrayOid, kFloat8ArrayOid, kInt8ArrayOid}},
                            {kBoardRemove, board_remove_sql(board_table), arr2},
                            {kBoardDrop, board_drop_sql(board_table), arr}});
  for (int i = 1; i < options.connections; ++i) {
    std::vector<PgConnection::Statement> reads{{kRead, read_sql(table), arr}};
    for (auto& st : board_read_statements(board_table)) reads.push_back(std::move(st));
    conns[i]->use_statements(std::move(reads));
  }
  setup.prepare_now();
  for (int i = 0; i < options.connections; ++i) {
    if (i != 1 && !conns[i]->connect(error)) return nullptr;
  }
  return std::make_unique<PostgresStore>(OpenKey{}, options, std::move(table),
                                         std::move(board_table), std::move(conns));
}

PostgresStore::PostgresStore(OpenKey, const PostgresOptions& options, std::string quoted_table,
                             std::string quoted_board_table,
                             std::vector<std::unique_ptr<PgConnection>> connections)
    : read_delay_(options.read_delay),
      conninfo_(options.conninfo),
      table_(std::move(quoted_table)),
      board_table_(std::move(quoted_board_table)),
      conns_(std::move(connections)),
      timer_(std::make_unique<detail::TimerThread>()) {
  completer_ = std::thread([this] { completer_main(); });
  committer_ = std::thread([this] { committer_main(); });
  for (std::size_t i = 1; i < conns_.size(); ++i) {
    readers_.emplace_back([this, c = conns_[i].get()] { reader_main(*c); });
  }
}

PostgresStore::~PostgresStore() {
  close();
  timer_.reset();  // runs the completions of operations started after close(), joins
}

void PostgresStore::close() {
  std::lock_guard close_lock(close_mu_);
  if (closed_) return;
  {
    std::lock_guard lock(write_mu_);
    write_stopping_ = true;
  }
  write_cv_.notify_all();
  {
    std::lock_guard lock(read_mu_);
    read_stopping_ = true;
  }
  read_cv_.notify_all();
  // A server that stopped answering (hung, or cut off by a partition with the connection still
  // open) would hold the committer or a reader forever, and the process's shutdown with it:
  // after kCloseGrace the connections are shut down under them, so what is in flight fails as
  // "outcome unknown" and nothing reconnects.
  bool threads_done = false;
  std::mutex done_mu;
  std::condition_variable done_cv;
  std::thread watchdog([&] {
    std::unique_lock lock(done_mu);
    if (done_cv.wait_for(lock, kCloseGrace, [&] { return threads_done; })) return;
    abandon_.store(true);
    for (auto& c : conns_) c->abort();
  });
  committer_.join();  // drains its queue first: queued writes are committed (or failed)
  {
    std::lock_guard lock(complete_mu_);
    complete_stopping_ = true;
  }
  complete_cv_.notify_all();
  completer_.join();
  for (auto& r : readers_) r.join();
  {
    std::lock_guard lock(done_mu);
    threads_done = true;
  }
  done_cv.notify_all();
  watchdog.join();
  timer_->drain();  // delayed reads issued before close()
  conns_.clear();   // PQfinish: every commit was answered already
  closed_ = true;
}

// --- stats, errors, connections --------------------------------------------------------------

StoreStats PostgresStore::stats() const {
  StoreStats s;
  s.reads = reads_.load();
  s.writes = writes_.load();
  s.commits = commits_.load();
  s.errors = errors_.load();
  s.failed = false;  // nothing here is sticky
  s.connected = down_.load() == 0;
  s.reconnects = reconnects_.load();
  std::lock_guard lock(error_mu_);
  s.last_error = last_error_;
  return s;
}

void PostgresStore::count_error() {
  errors_.fetch_add(1);
}

void PostgresStore::note_error(const std::string& why) {
  std::lock_guard lock(error_mu_);
  last_error_ = why;
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
  conn.last_error = error;
  conn.backoff = std::clamp(conn.backoff * 2, std::chrono::milliseconds(kFirstBackoff),
                            std::chrono::milliseconds(kMaxBackoff));
  conn.next_attempt = Clock::now() + conn.backoff;
  note_error(error);
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
    const auto deadline = conn.up() ? Clock::now() + kIdleCheck : conn.next_attempt;
    if (cv.wait_until(lock, deadline, ready)) return;
    lock.unlock();
    maintain();
    lock.lock();
  }
}

}  // namespace

// --- writes ----------------------------------------------------------------------------------

void PostgresStore::write(std::vector<Write> batch, WriteDone done) {
  WriteOp op;
  op.batch = std::move(batch);
  op.on_write = std::move(done);
  for (const Write& w : op.batch) {
    op.refused = refusal(w);
    if (!op.refused.empty()) break;
  }
  enqueue_write(std::move(op));
}

void PostgresStore::clear(ClearDone done) {
  WriteOp op;
  op.on_clear = std::move(done);
  op.is_clear = true;
  enqueue_write(std::move(op));
}

void PostgresStore::enqueue_write(WriteOp op) {
  {
    std::lock_guard lock(write_mu_);
    if (!write_stopping_) {
      write_queue_.push_back(std::move(op));
      write_cv_.notify_one();
      return;
    }
  }
  complete_closed(std::move(op));
}

void PostgresStore::complete_closed(WriteOp op) {
  count_error();
  timer_->post([op = std::make_shared<WriteOp>(std::move(op))] {
    Status closed{Code::closed, "store closed"};
    if (op->is_clear) {
      op->on_clear(std::move(closed));
    } else {
      op->on_write(WriteResult{std::move(closed), {}});
    }
  });
}

void PostgresStore::complete_write(WriteOp& op, Status status, std::vector<bool> existed) {
  if (!status.ok()) {
    count_error();
    existed.clear();
  }
  op.result = std::move(status);
  op.existed = std::move(existed);
}

void PostgresStore::committer_main() {
  PgConnection& conn = *conns_[0];
  std::vector<WriteOp> group;
  for (;;) {
    std::uint64_t taken = 0;
    {
      std::unique_lock lock(write_mu_);
      wait_keeping_connection(
          lock, write_cv_, conn, [this] { return write_stopping_ || !write_queue_.empty(); },
          [&] {
            if (!conn.up()) {
              ensure_connected(conn);
            } else if (!conn.alive()) {
              mark_lost(conn, "postgres: connection lost: " + conn.error());
            }
          });
      if (write_queue_.empty()) return;  // stopping, and everything queued is done
      group.swap(write_queue_);
      taken = ++groups_taken_;
    }
    commit_group(group);
    {
      std::lock_guard lock(complete_mu_);
      completed_.push_back(std::move(group));
    }
    complete_cv_.notify_one();
    group = {};
    std::unique_lock lock(write_mu_);
    write_cv_.wait(lock, [&] { return hold_after_group_ != taken || write_stopping_; });
  }
}

void PostgresStore::hold_committer_after_next_commit() {
  std::lock_guard lock(write_mu_);
  hold_after_group_ = groups_taken_ + 1;
}

void PostgresStore::release_committer() {
  {
    std::lock_guard lock(write_mu_);
    hold_after_group_ = 0;
  }
  write_cv_.notify_all();
}

void PostgresStore::completer_main() {
  std::vector<std::vector<WriteOp>> groups;
  for (;;) {
    {
      std::unique_lock lock(complete_mu_);
      complete_cv_.wait(lock, [this] { return complete_stopping_ || !completed_.empty(); });
      if (completed_.empty()) return;
      groups.swap(completed_);
    }
    for (auto& group : groups) {
      for (auto& op : group) {
        if (op.is_clear) {
          op.on_clear(std::move(op.result));
        } else {
          op.on_write(WriteResult{std::move(op.result), std::move(op.existed)});
        }
      }
    }
    groups.clear();
  }
}

// One group: every batch and clear queued since the last commit, in arrival order, as one
// transaction sent as one pipeline. Each key's ops are coalesced to the last one (PostgreSQL
// refuses to touch one row twice in one INSERT ... ON CONFLICT), segment by segment between
// clears; so is each board row, a drop cutting off the board's earlier ops (emit_board_rows);
// existed[] comes from the database's state before the group (a SELECT ... FOR UPDATE first in
// the transaction) and an overlay of the group's own key ops, as in RocksStore.
void PostgresStore::commit_group(std::vector<WriteOp>& group) {
  // Refused batches are answered alone, whatever happens to the rest.
  for (auto& op : group) {
    if (op.refused.empty()) continue;
    note_error(op.refused);
    complete_write(op, {Code::io_error, op.refused}, {});
  }
  auto fail_all = [&](const Status& st) {
    for (auto& op : group) {
      if (op.refused.empty()) complete_write(op, st, {});
    }
  };

  // Pass 1: the keys whose existed answer needs the database (asked about by the first op of
  // the group that touches them, before any clear), and the statements, segment by segment.
  std::vector<std::string_view> lookup;
  {
    std::unordered_set<std::string_view> touched;
    bool cleared = false;
    for (const auto& op : group) {
      if (!op.refused.empty()) continue;
      if (op.is_clear) {
        cleared = true;
        continue;
      }
      for (const Write& w : op.batch) {
        if (is_board_op(w)) continue;  // board rows are no keys
        if (!cleared && touched.insert(w.key).second && w.want_existed) lookup.push_back(w.key);
      }
    }
  }

  const std::string select_sql = select_existed_sql(table_);
  const std::string put_sql = upsert_sql(table_);
  const std::string del_sql = delete_sql(table_);
  const std::string truncate_sql = "TRUNCATE " + table_ + ", " + board_table_;
  const std::string board_put_sql = board_upsert_sql(board_table_);
  const std::string board_del_sql = board_remove_sql(board_table_);
  const std::string board_dropped_sql = board_drop_sql(board_table_);

  std::vector<Query> queries;
  queries.push_back({"BEGIN", {}});
  if (!lookup.empty()) queries.push_back({select_sql, {bytea_array(lookup)}, kSelectExisted});
  std::uint64_t ops = 0;
  bool statements = false;  // anything to commit?
  {
    std::unordered_map<std::string_view, const Write*> last;  // key -> its last op
    // Board rows, coalesced the same way: board -> member -> the row's last op since the board's
    // last drop in this segment. A drop forgets the board's earlier ops and is sent before the
    // segment's row statements, so it removes what was there before it (earlier groups, earlier
    // ops) and never a row set after it. Sorted maps: rows are locked in (board, member) order,
    // as keys are.
    std::map<std::string_view, std::map<std::string_view, const Write*>> rows;
    std::set<std::string_view> dropped;  // boards dropped in this segment, sorted
    bool truncate_pending = false, after_truncate = false;
    auto emit_board_rows = [&] {
      // After a truncate in this transaction, removes and drops have nothing left to remove.
      if (!dropped.empty() && !after_truncate) {
        queries.push_back(
            {board_dropped_sql,
             {bytea_array(std::vector<std::string_view>(dropped.begin(), dropped.end()))},
             kBoardDrop});
        statements = true;
      }
      std::vector<std::string_view> set_boards, set_members, del_boards, del_members;
      std::vector<std::uint64_t> scores, seqs;  // float8 bits, int8
      for (const auto& [board, members] : rows) {
        for (const auto& [member, w] : members) {
          if (w->kind == Write::Kind::board_set) {
            set_boards.push_back(board);
            set_members.push_back(member);
            scores.push_back(std::bit_cast<std::uint64_t>(w->score));
            seqs.push_back(w->seq);
          } else if (!after_truncate) {
            del_boards.push_back(board);
            del_members.push_back(member);
          }
        }
      }
      if (!set_boards.empty()) {
        queries.push_back({board_put_sql,
                           {bytea_array(set_boards), bytea_array(set_members),
                            Param(array8(kFloat8Oid, scores), kFloat8ArrayOid),
                            Param(array8(kInt8Oid, seqs), kInt8ArrayOid)},
                           kBoardUpsert});
        statements = true;
      }
      if (!del_boards.empty()) {
        queries.push_back(
            {board_del_sql, {bytea_array(del_boards), bytea_array(del_members)}, kBoardRemove});
        statements = true;
      }
      rows.clear();
      dropped.clear();
    };
    auto emit_segment = [&] {
      if (truncate_pending) {
        queries.push_back({truncate_sql, {}});
        truncate_pending = false;
        after_truncate = true;
        statements = true;
      }
      emit_board_rows();
      if (last.empty()) return;
      std::vector<const Write*> ws;
      ws.reserve(last.size());
      for (const auto& [k, w] : last) ws.push_back(w);
      // Sorted: the B-tree sees keys in order, and two stores sharing a table lock rows in the
      // same order.
      std::sort(ws.begin(), ws.end(),
                [](const Write* a, const Write* b) { return a->key < b->key; });
      std::vector<std::string_view> put_keys, put_values, del_keys;
      for (const Write* w : ws) {
        if (w->kind == Write::Kind::put) {
          put_keys.push_back(w->key);
          put_values.push_back(w->value);
        } else if (!after_truncate) {  // nothing to delete after a truncate in this transaction
          del_keys.push_back(w->key);
        }
      }
      if (!put_keys.empty()) {
        queries.push_back({put_sql, {bytea_array(put_keys), bytea_array(put_values)}, kUpsert});
      }
      if (!del_keys.empty()) queries.push_back({del_sql, {bytea_array(del_keys)}, kDelete});
      statements = true;
      last.clear();
    };
    for (const auto& op : group) {
      if (!op.refused.empty()) continue;
      if (op.is_clear) {
        emit_segment();
        truncate_pending = true;
        continue;
      }
      for (const Write& w : op.batch) {
        ++ops;
        switch (w.kind) {
          case Write::Kind::put:
          case Write::Kind::del:
            last[w.key] = &w;
            break;
          case Write::Kind::board_set:
          case Write::Kind::board_remove:
            rows[w.key][w.member] = &w;
            break;
          case Write::Kind::board_drop:
            rows.erase(w.key);
            dropped.insert(w.key);
            break;
        }
      }
    }
    emit_segment();
  }

  if (!statements) {  // only empty batches (and refused ones)
    for (auto& op : group) {
      if (op.refused.empty()) complete_write(op, {}, std::vector<bool>(op.batch.size(), false));
    }
    return;
  }

  PgConnection& conn = *conns_[0];
  // A server that went away since the last idle check: notice it before sending, so the group
  // is not sent into a dead socket (whose outcome would then be unknown).
  if (conn.up() && !conn.alive()) mark_lost(conn, "postgres: connection lost: " + conn.error());
  if (!ensure_connected(conn)) {
    fail_all({Code::io_error, "postgres: not connected: " + conn.last_error});
    return;
  }
  queries.push_back({"COMMIT", {}});

  PipelineOutcome out = run_pipeline(conn.get(), queries, conn.prepared());
  const std::size_t commit_index = queries.size() - 1;
  const bool committed = out.results.size() > commit_index &&
                         result_ok(out.results[commit_index].get()) &&
                         std::all_of(out.results.begin(), out.results.end(),
                                     [](const PgResult& r) { return result_ok(r.get()); });
  if (!committed) {
    if (out.lost || conn.bad()) {
      const std::string why = out.error.empty() ? "connection lost: " + conn.error() : out.error;
      mark_lost(conn, "postgres: " + why);
      const std::string msg =
          out.sent_all
              ? "postgres: commit outcome unknown (connection lost during the commit): " + why
              : "postgres: commit failed (connection lost before COMMIT was sent): " + why;
      note_error(msg);
      fail_all({Code::io_error, msg});
      return;
    }
    // A statement error (a dropped table, a permission, ...): the transaction is aborted and
    // nothing of the group applied. The session is left in the aborted transaction: roll back.
    const std::string msg = "postgres: commit failed: " +
                            (out.error.empty() ? std::string("unexpected result") : out.error);
    note_error(msg);
    fail_all({Code::io_error, msg});
    if (PQtransactionStatus(conn.get()) != PQTRANS_IDLE) {
      PipelineOutcome rb = run_pipeline(conn.get(), {Query{"ROLLBACK", {}}}, false);
      if (rb.lost || conn.bad()) mark_lost(conn, "postgres: " + rb.error);
    }
    return;
  }
  commits_.fetch_add(1);
  writes_.fetch_add(ops);

  // Pass 2: existed[] from the pre-group state and an overlay of the group's own ops.
  std::unordered_set<std::string_view> in_db;
  if (!lookup.empty()) {
    const PGresult* sel = out.results[1].get();
    for (int i = 0, n = PQntuples(sel); i < n; ++i) in_db.insert(value_at(sel, i, 0));
  }
  std::unordered_map<std::string_view, bool> now;  // keys the group has set, since any clear
  bool cleared = false;
  for (auto& op : group) {
    if (!op.refused.empty()) continue;
    if (op.is_clear) {
      now.clear();
      cleared = true;
      complete_write(op, {}, {});
      continue;
    }
    std::vector<bool> existed(op.batch.size(), false);
    for (std::size_t i = 0; i < op.batch.size(); ++i) {
      const Write& w = op.batch[i];
      if (is_board_op(w)) continue;  // no existed for board rows (store.hh)
      if (w.want_existed) {
        if (auto it = now.find(w.key); it != now.end()) {
          existed[i] = it->second;
        } else if (!cleared) {
          existed[i] = in_db.contains(w.key);
        }
      }
      now[w.key] = w.kind == Write::Kind::put;
    }
    complete_write(op, {}, std::move(existed));
  }
}

// --- reads -----------------------------------------------------------------------------------

void PostgresStore::read(std::string key, ReadDone done) {
  ReadOp op{std::move(key), std::move(done), Clock::now()};
  {
    std::lock_guard lock(read_mu_);
    if (!read_stopping_) {
      read_queue_.push_back(std::move(op));
      read_cv_.notify_one();
      return;
    }
  }
  count_error();
  timer_->post([done = std::move(op.done)] {
    done(ReadResult{{Code::closed, "store closed"}, {}});
  });
}

void PostgresStore::reader_main(PgConnection& conn) {
  std::vector<ReadOp> reads;
  std::optional<BoardOp> board;
  for (;;) {
    {
      std::unique_lock lock(read_mu_);
      wait_keeping_connection(
          lock, read_cv_, conn,
          [this] { return read_stopping_ || !read_queue_.empty() || !board_queue_.empty(); },
          [&] {
            if (!conn.up()) {
              ensure_connected(conn);
            } else if (!conn.alive()) {
              mark_lost(conn, "postgres: connection lost: " + conn.error());
            }
          });
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
  const std::string sql = read_sql(table_);
  PgResult res;
  const Status error = run_read(conn, [&](PGconn* c) {
    res.reset(exec_params(c, conn.prepared() ? kRead : nullptr, sql, params));
    return res.get();
  });

  std::unordered_map<std::string_view, std::string_view> found;
  if (error.ok()) {
    for (int i = 0, rows = PQntuples(res.get()); i < rows; ++i) {
      found.emplace(value_at(res.get(), i, 0), value_at(res.get(), i, 1));
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
      r.value.assign(it->second);
    } else {
      r.status = {Code::not_found, {}};
    }
    const auto due = op.issued + read_delay_;
    if (read_delay_.count() > 0 && now < due) {
      timer_->post(due,
                   [done = std::move(op.done), r = std::move(r)]() mutable { done(std::move(r)); });
    } else {
      op.done(std::move(r));
    }
  }
}

}  // namespace store
