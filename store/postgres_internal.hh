// postgres_internal.hh — private to postgres_store.cc and postgres_boards.cc, the two halves of
// PostgresStore: what both need (the connection, the binary parameters and results, running one
// statement, run_read) lives here once instead of being copied. Not part of the store's interface:
// everything else includes postgres_store.hh.
#pragma once

#include <libpq-fe.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/postgres_store.hh"

namespace store::detail {

using Clock = std::chrono::steady_clock;

// Type OIDs (pg_type.h) of the binary parameters and results.
inline constexpr Oid kByteaOid = 17;
inline constexpr Oid kInt8Oid = 20;
inline constexpr Oid kTimestamptzOid = 1184;
inline constexpr Oid kFloat8Oid = 701;
inline constexpr Oid kByteaArrayOid = 1001;   // bytea[]
inline constexpr Oid kInt8ArrayOid = 1016;    // int8[]
inline constexpr Oid kFloat8ArrayOid = 1022;  // float8[]

// libpq's messages end with a newline and may hold several lines ("...failed: Connection
// refused\n\tIs the server running...?"): one line, for logs and 503 bodies.
inline std::string one_line(std::string_view msg) {
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

// --- libpq's error text, as it may leave the store ---------------------------------------------
//
// libpq's messages say where it tried to connect and as whom: `connection to server at
// "127.0.0.1", port 5432 failed: Connection refused`, `... at "db" (10.0.0.5), port ...`,
// `... on socket "/run/postgresql/.s.PGSQL.5432" ...`, `could not translate host name "db" ...`,
// with a hint naming the host and port (libpq 14: `Is the server running on host "h" and
// accepting TCP/IP connections on port 5432?`), and the server's own `password authentication
// failed for user "u"`, `database "d" does not exist`, `no pg_hba.conf entry for host "h", user
// "u", database "d"`. docs/api.md promises that the conninfo never reaches a client (503 bodies,
// /stats store_error), so what the store reports is scrubbed: every "connection to server ...
// failed:" becomes "connection to the database failed:", every double-quoted name becomes
// "...", and the "Is the server running ...?" hint goes. The reason stays ("Connection refused",
// "role \"...\" is not permitted to log in"). Idempotent.
inline std::string scrub_libpq_text(std::string_view text) {
  constexpr std::string_view kHidden = "\"...\"";
  std::string unquoted;
  unquoted.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] != '"') {
      unquoted += text[i++];
      continue;
    }
    unquoted += kHidden;
    const std::size_t close = text.find('"', i + 1);
    if (close == std::string_view::npos) break;  // unterminated: the rest is the name
    i = close + 1;
  }
  constexpr std::string_view kServer = "connection to server ",
                             kFailed = " failed:", kHint = "Is the server running";
  std::string out;
  std::string_view rest = unquoted;
  while (!rest.empty()) {
    const std::size_t server = rest.find(kServer), hint = rest.find(kHint);
    const std::size_t at = std::min(server, hint);
    out.append(rest.substr(0, at));
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at);
    if (at == hint) {  // to its question mark, and the space before it
      const std::size_t end = rest.find('?');
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
      while (!out.empty() && out.back() == ' ') out.pop_back();
      continue;
    }
    const std::size_t failed = rest.find(kFailed);
    out += "connection to the database failed:";
    rest.remove_prefix(failed == std::string_view::npos ? rest.size() : failed + kFailed.size());
  }
  return out;
}

// The text to report for libpq's (one_line) text `full`: scrubbed. When scrubbing hid anything,
// the full text is written on stderr for the operator, once per distinct text (postgres_store.cc).
// For what the store reports while it runs; open()'s errors go to the operator alone (start-up's
// one line on stderr) and stay whole.
std::string libpq_error(std::string_view full);

// A statement's SQL for one table: `sql` with each "{table}" replaced by `table` (a quoted
// identifier, quote_identifier). The statements are written whole, as SQL, with the placeholder.
inline std::string with_table(std::string_view sql, std::string_view table) {
  constexpr std::string_view placeholder = "{table}";
  std::string out;
  out.reserve(sql.size() + 2 * table.size());
  for (std::size_t at; (at = sql.find(placeholder)) != std::string_view::npos;) {
    out.append(sql.substr(0, at)).append(table);
    sql.remove_prefix(at + placeholder.size());
  }
  return out.append(sql);
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// Big-endian integers, as the binary wire format has them (parameters, results, COPY).
inline void put_be32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

inline void put_be64(std::string& out, std::uint64_t v) {
  put_be32(out, static_cast<std::uint32_t>(v >> 32));
  put_be32(out, static_cast<std::uint32_t>(v));
}

inline std::string be64(std::uint64_t v) {
  std::string out;
  put_be64(out, v);
  return out;
}

inline std::uint64_t get_be64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
inline std::uint32_t get_be32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// The 8 bytes of a binary int8 or float8 result, big-endian decoded; 0 for NULL (length 0).
inline std::uint64_t be64_at(const PGresult* r, int row, int col) {
  return PQgetlength(r, row, col) == 8 ? get_be64(PQgetvalue(r, row, col)) : 0;
}

inline std::string_view value_at(const PGresult* r, int row, int col) {
  return {PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col))};
}

// --- the connection ---------------------------------------------------------------------------

// One libpq connection and its reconnection state. Used by one thread at a time (its owner);
// down_ in the store counts lost connections across threads.
class PgConnection {
 public:
  PgConnection(std::string conninfo, bool pipelined)
      : conninfo_(std::move(conninfo)), pipelined_(pipelined) {}
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Blocking connect (bounded by connect_timeout, 5 s unless the conninfo says otherwise). The
  // writer's connection goes into nonblocking pipeline mode. error: libpq's full text (open()
  // hands it to the operator; a reconnect reports it through libpq_error).
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
    std::vector<Oid> types;  // of its parameters, all binary
  };
  void use_statements(std::vector<Statement> statements) { statements_ = std::move(statements); }
  // For a connection made before use_statements (open()'s setup connection; not pipelined).
  void prepare_now() { prepared_ = conn_ && prepare(conn_.get()); }
  bool prepared() const { return prepared_; }

  PGconn* get() const { return conn_.get(); }
  bool up() const { return conn_ != nullptr; }
  bool bad() const { return !conn_ || PQstatus(conn_.get()) == CONNECTION_BAD; }
  // libpq's last error on this connection, scrubbed (libpq_error).
  std::string error() const {
    return conn_ ? libpq_error(one_line(PQerrorMessage(conn_.get()))) : "";
  }
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

  // Reconnection state, owned by the connection's thread. last_error is scrubbed
  // (libpq_error): the store reports it.
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
      PGresult* r =
          PQprepare(c, st.name, st.sql.c_str(), static_cast<int>(st.types.size()), st.types.data());
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

// --- running one statement --------------------------------------------------------------------

// A parameter in binary format, and its type (for a statement sent unprepared). Implicit from
// the bytes: most parameters are bytea[].
struct Param {
  Param(std::string b, Oid t = kByteaArrayOid) : bytes(std::move(b)), type(t) {}  // NOLINT
  std::string bytes;
  Oid type;
};

// PostgreSQL takes no message (a Bind with its parameters included) of 1 GB or more
// (MaxAllocSize): no parameter can be larger. Checked before a length is cast to libpq's int.
inline constexpr std::size_t kMaxParamBytes = 0x3fffffff;

// Parameters as libpq takes them: pointers, int lengths, binary formats, types. too_long: a
// parameter is over kMaxParamBytes (its length is not cast; the statement must not be sent).
struct ParamArrays {
  explicit ParamArrays(const std::vector<Param>& params) {
    for (const Param& p : params) {
      too_long = too_long || p.bytes.size() > kMaxParamBytes;
      values.push_back(p.bytes.data());
      lengths.push_back(too_long ? 0 : static_cast<int>(p.bytes.size()));
      formats.push_back(1);
      types.push_back(p.type);
    }
  }
  int count() const { return static_cast<int>(values.size()); }
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<Oid> types;
  bool too_long = false;
};

// One statement on a connection in blocking mode, binary parameters and results: the prepared
// statement `prepared`, or (null: the connection could not prepare it) the SQL itself. Null if
// a parameter is too long to send.
inline PGresult* exec_params(PGconn* c, const char* prepared, const std::string& sql,
                             const std::vector<Param>& params) {
  const ParamArrays p(params);
  if (p.too_long) return nullptr;
  return prepared != nullptr ? PQexecPrepared(c, prepared, p.count(), p.values.data(),
                                              p.lengths.data(), p.formats.data(), 1)
                             : PQexecParams(c, sql.c_str(), p.count(), p.types.data(),
                                            p.values.data(), p.lengths.data(), p.formats.data(), 1);
}

// The statements a reader connection prepares for the board reads (postgres_boards.cc, beside
// the SQL they name): open() adds them to the key read's.
std::vector<PgConnection::Statement> board_read_statements(const std::string& board_table);

}  // namespace store::detail

namespace store {

// --- run_read ---------------------------------------------------------------------------------

// A member template used by serve_reads (postgres_store.cc) and serve_board
// (postgres_boards.cc), so defined here where both see it.
// Runs exec(conn) (one read statement; it keeps the result) and says how it went. A read is
// idempotent: if the connection turns out to be lost, it is retried once on a fresh connection
// before failing.
template <class Exec>
Status PostgresStore::run_read(detail::PgConnection& conn, Exec exec) {
  Status error;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!ensure_connected(conn)) {
      return {Code::unavailable, "postgres: not connected: " + conn.last_error};
    }
    const PGresult* res = exec(conn.get());
    if (PQresultStatus(res) == PGRES_TUPLES_OK) return {};
    const std::string why =
        res ? detail::libpq_error(detail::one_line(PQresultErrorMessage(res))) : conn.error();
    if (conn.bad()) {
      mark_lost(conn, "postgres: connection lost: " + why);
      error = {Code::io_error, "postgres: read failed (connection lost): " + why};
      continue;  // once more, on a new connection (mark_lost allows an attempt at once)
    }
    return {Code::io_error, "postgres: read failed: " + why};
  }
  return error;
}

}  // namespace store
