// postgres_store.cc — PostgresStore: the pipelined group committer (coalescing, existed, clears),
// the batched readers, the binary bytea[] parameters, and reconnection after a lost connection
// (store/README.md, "The PostgreSQL store", says why each is so).
#include "store/postgres_store.hh"

#include <libpq-fe.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "store/timer_thread.hh"

namespace store {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::size_t kMaxKey = 250;
constexpr Oid kByteaArrayOid = 1001;  // bytea[]

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
constexpr Oid kByteaOid = 17;
constexpr auto kIdleCheck = 200ms;  // an idle connection is checked this often
// close(): how long in-flight operations may take before the connections are shut down under
// them (a server that stopped answering must not hold the process's shutdown).
constexpr auto kCloseGrace = 1s;
constexpr auto kFirstBackoff = 50ms;
constexpr auto kMaxBackoff = 2000ms;

bool key_ok(std::string_view key) {
  return !key.empty() && key.size() <= kMaxKey;
}

// libpq's messages end with a newline and may hold several lines ("...failed: Connection
// refused\n\tIs the server running...?"): one line, for logs and 503 bodies.
std::string one_line(std::string_view msg) {
  std::string out;
  bool space = false;
  for (char c : msg) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// The binary wire format of a one-dimensional bytea[] without NULLs: ndim, has-null flag,
// element type, then the dimension and its lower bound, then (length, bytes) per element; every
// integer a big-endian int32.
void put_be32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

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

std::string_view value_at(const PGresult* r, int row, int col) {
  return {PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col))};
}

}  // namespace

namespace detail {

// One libpq connection and its reconnection state. Used by one thread at a time (its owner);
// down_ in the store counts lost connections across threads.
class PgConnection {
 public:
  PgConnection(std::string conninfo, bool pipelined)
      : conninfo_(std::move(conninfo)), pipelined_(pipelined) {}
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Blocking connect (bounded by connect_timeout, 5 s unless the conninfo says otherwise). The
  // writer's connection goes into nonblocking pipeline mode.
  bool connect(std::string& error) {
    // expand_dbname: the conninfo (keyword/value or URI) is expanded in place of dbname, and its
    // keywords override the defaults listed before it.
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {"5", "cache_server store", conninfo_.c_str(), nullptr};
    Conn c(PQconnectdbParams(keys, values, 1));
    if (!c) {
      error = "postgres: cannot connect: out of memory";
      return false;
    }
    if (PQstatus(c.get()) != CONNECTION_OK) {
      error = "postgres: cannot connect: " + one_line(PQerrorMessage(c.get()));
      return false;
    }
    PQsetNoticeProcessor(
        c.get(), [](void*, const char*) {}, nullptr);  // "already exists"
    // An acknowledged write must be durable: a database (or role) configured with
    // synchronous_commit=off would acknowledge commits before their WAL is flushed, so the
    // writer's session turns it back on. Any stronger setting (remote_write, remote_apply for
    // synchronous standbys) or local is kept.
    if (pipelined_) {
      PGresult* r = PQexec(c.get(),
                           "SELECT set_config('synchronous_commit', 'on', false) "
                           "WHERE current_setting('synchronous_commit') = 'off'");
      const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
      PQclear(r);
      if (!ok) {
        error = "postgres: cannot set synchronous_commit: " + one_line(PQerrorMessage(c.get()));
        return false;
      }
    }
    prepared_ = prepare(c.get());
    if (pipelined_ && (PQsetnonblocking(c.get(), 1) != 0 || PQenterPipelineMode(c.get()) != 1)) {
      error = "postgres: cannot enter pipeline mode: " + one_line(PQerrorMessage(c.get()));
      return false;
    }
    install(std::move(c));
    return true;
  }

  // The statements this connection runs with parameters, prepared on every connect: a group or
  // a batch of reads then skips parsing and planning. If preparing fails (the table is missing
  // at that moment), the connection still works, sending the SQL itself (prepared() false).
  struct Statement {
    const char* name;
    std::string sql;
    int params;  // each a bytea[]
  };
  void use_statements(std::vector<Statement> statements) { statements_ = std::move(statements); }
  // For a connection made before use_statements (open()'s setup connection; not pipelined).
  void prepare_now() { prepared_ = conn_ && prepare(conn_.get()); }
  bool prepared() const { return prepared_; }

  PGconn* get() const { return conn_.get(); }
  bool up() const { return conn_ != nullptr; }
  bool bad() const { return !conn_ || PQstatus(conn_.get()) == CONNECTION_BAD; }
  std::string error() const { return conn_ ? one_line(PQerrorMessage(conn_.get())) : ""; }
  void drop() { install(nullptr); }

  // From any thread: makes the owner's blocked reads and writes on this connection fail at once
  // (close()'s last resort against a server that stopped answering without closing the
  // connection); the owner then sees a lost connection. The socket is shut down, not closed:
  // its descriptor stays the owner's until PQfinish.
  void abort() {
    std::lock_guard lock(socket_mu_);
    if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);
  }

  // An idle connection: reads whatever the server sent (a backend terminated by a shutdown sends
  // an error, then closes) without blocking. False if the connection is gone.
  bool alive() {
    if (!conn_) return false;
    if (PQconsumeInput(conn_.get()) == 0) return false;
    return PQstatus(conn_.get()) == CONNECTION_OK;
  }

  // Reconnection state, owned by the connection's thread.
  Clock::time_point next_attempt{};
  std::chrono::milliseconds backoff{0};
  std::string last_error;

 private:
  struct ConnDeleter {
    void operator()(PGconn* c) const { PQfinish(c); }
  };
  using Conn = std::unique_ptr<PGconn, ConnDeleter>;

  // Swaps the connection (the owner thread only); abort() sees the socket change atomically.
  // The old connection is finished outside the lock.
  void install(Conn c) {
    Conn old;
    {
      std::lock_guard lock(socket_mu_);
      old = std::move(conn_);
      conn_ = std::move(c);
      socket_ = conn_ ? PQsocket(conn_.get()) : -1;
    }
  }

  bool prepare(PGconn* c) const {
    for (const Statement& st : statements_) {
      const std::vector<Oid> types(static_cast<std::size_t>(st.params), kByteaArrayOid);
      PGresult* r = PQprepare(c, st.name, st.sql.c_str(), st.params, types.data());
      const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
      PQclear(r);
      if (!ok) return false;
    }
    return !statements_.empty();
  }

  const std::string conninfo_;
  const bool pipelined_;
  std::vector<Statement> statements_;
  bool prepared_ = false;
  Conn conn_;
  std::mutex socket_mu_;  // guards socket_ against abort() from another thread
  int socket_ = -1;
};

}  // namespace detail

using detail::PgConnection;

namespace {

// One query of a pipeline: its SQL and its parameters (binary bytea[] arrays).
struct Query {
  std::string_view sql;
  std::vector<std::string> params;
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
    for (const auto& p : q.params) {
      values.push_back(p.data());
      lengths.push_back(static_cast<int>(p.size()));
      formats.push_back(1);
      types.push_back(kByteaArrayOid);
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
  std::vector<std::unique_ptr<PgConnection>> conns;
  for (int i = 0; i < options.connections; ++i) {
    conns.push_back(std::make_unique<PgConnection>(options.conninfo, i == 0));
  }
  // The schema, on a reader connection (blocking mode) before the writer enters pipeline mode.
  PgConnection& setup = *conns[1];
  if (!setup.connect(error)) return nullptr;
  std::string table;
  {
    std::unique_ptr<char, decltype(&PQfreemem)> quoted(
        PQescapeIdentifier(setup.get(), options.table.data(), options.table.size()), &PQfreemem);
    if (!quoted) {
      error = "postgres: bad table name '" + options.table + "': " + setup.error();
      return nullptr;
    }
    table = quoted.get();
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
  r.reset();
  conns[0]->use_statements({{kSelectExisted, select_existed_sql(table), 1},
                            {kUpsert, upsert_sql(table), 2},
                            {kDelete, delete_sql(table), 1}});
  for (int i = 1; i < options.connections; ++i) {
    conns[i]->use_statements({{kRead, read_sql(table), 1}});
  }
  setup.prepare_now();
  for (int i = 0; i < options.connections; ++i) {
    if (i != 1 && !conns[i]->connect(error)) return nullptr;
  }
  return std::make_unique<PostgresStore>(OpenKey{}, options, std::move(table), std::move(conns));
}

PostgresStore::PostgresStore(OpenKey, const PostgresOptions& options, std::string quoted_table,
                             std::vector<std::unique_ptr<PgConnection>> connections)
    : read_delay_(options.read_delay),
      table_(std::move(quoted_table)),
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
    if (!key_ok(w.key)) {
      op.refused = "store write refused: a key must be 1.." + std::to_string(kMaxKey) +
                   " bytes (got " + std::to_string(w.key.size()) + ")";
      break;
    }
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
// clears; existed[] comes from the database's state before the group (a SELECT ... FOR UPDATE
// first in the transaction) and an overlay of the group's own ops, as in RocksStore.
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
        if (!cleared && touched.insert(w.key).second && w.want_existed) lookup.push_back(w.key);
      }
    }
  }

  const std::string select_sql = select_existed_sql(table_);
  const std::string put_sql = upsert_sql(table_);
  const std::string del_sql = delete_sql(table_);
  const std::string truncate_sql = "TRUNCATE " + table_;

  std::vector<Query> queries;
  queries.push_back({"BEGIN", {}});
  if (!lookup.empty()) queries.push_back({select_sql, {bytea_array(lookup)}, kSelectExisted});
  std::uint64_t ops = 0;
  bool statements = false;  // anything to commit?
  {
    std::unordered_map<std::string_view, const Write*> last;  // key -> its last op
    bool truncate_pending = false, after_truncate = false;
    auto emit_segment = [&] {
      if (truncate_pending) {
        queries.push_back({truncate_sql, {}});
        truncate_pending = false;
        after_truncate = true;
        statements = true;
      }
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
        last[w.key] = &w;
        ++ops;
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
  for (;;) {
    {
      std::unique_lock lock(read_mu_);
      wait_keeping_connection(
          lock, read_cv_, conn, [this] { return read_stopping_ || !read_queue_.empty(); },
          [&] {
            if (!conn.up()) {
              ensure_connected(conn);
            } else if (!conn.alive()) {
              mark_lost(conn, "postgres: connection lost: " + conn.error());
            }
          });
      if (read_queue_.empty()) return;
      reads.swap(read_queue_);
    }
    serve_reads(conn, reads);
    reads.clear();
  }
}

// One SELECT for every distinct key of the batch. A read is idempotent: if the connection
// turns out to be lost, it is retried once on a fresh connection before failing.
void PostgresStore::serve_reads(PgConnection& conn, std::vector<ReadOp>& reads) {
  const std::size_t n = reads.size();
  std::vector<std::string_view> keys;
  {
    std::unordered_set<std::string_view> seen;
    for (const auto& r : reads) {
      if (seen.insert(r.key).second) keys.push_back(r.key);
    }
  }
  const std::string param = bytea_array(keys);
  const std::string sql = read_sql(table_);
  const char* values[] = {param.data()};
  const int lengths[] = {static_cast<int>(param.size())};
  const int formats[] = {1};
  const Oid types[] = {kByteaArrayOid};

  Status error;
  PgResult res;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!ensure_connected(conn)) {
      error = {Code::io_error, "postgres: not connected: " + conn.last_error};
      break;
    }
    res.reset(conn.prepared()
                  ? PQexecPrepared(conn.get(), kRead, 1, values, lengths, formats, 1)
                  : PQexecParams(conn.get(), sql.c_str(), 1, types, values, lengths, formats, 1));
    if (PQresultStatus(res.get()) == PGRES_TUPLES_OK) {
      error = {};
      break;
    }
    const std::string why = one_line(res ? PQresultErrorMessage(res.get()) : conn.error());
    res.reset();
    if (conn.bad()) {
      mark_lost(conn, "postgres: connection lost: " + why);
      error = {Code::io_error, "postgres: read failed (connection lost): " + why};
      continue;  // once more, on a new connection (mark_lost allows an attempt at once)
    }
    error = {Code::io_error, "postgres: read failed: " + why};
    break;
  }

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
