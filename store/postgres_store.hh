// postgres_store.hh — PostgresStore, the Store over a PostgreSQL table reached with libpq
// (store.hh is the contract; store/README.md, "The PostgreSQL store", has the design).
//
// Schema: <table>(key bytea primary key, value bytea not null, updated_at timestamptz) and
// <board_table>(board bytea, member bytea, score double precision, seq bigint, primary key
// (board, member)) with an index on (board, score DESC, seq), created by open() if missing.
// Durability is PostgreSQL's: an ok write is in a committed transaction (fsync'ed WAL with the
// server's default fsync=on, synchronous_commit=on).
//
// Threads (all owned, all joined by close()); each connection belongs to one thread. The queues,
// the timer and close()'s order are EngineStore's (engine_store.hh):
// - the GroupCommitter's committer (group_committer.hh; this store supplies commit()), on the
//   writer connection: takes every write()/clear() queued since its last commit, coalesces
//   each key and each board row to its last op (segment by segment between
//   clears) and sends the whole group as ONE pipeline: BEGIN, [SELECT ... FOR UPDATE for
//   want_existed], per segment [TRUNCATE of both tables], one DELETE of the dropped boards, one
//   multi-row upsert and one DELETE of board rows, one multi-row upsert and one DELETE of keys,
//   COMMIT, Sync: one round trip per group. Each statement's arrays stay within
//   max_statement_bytes: a larger group sends several statements of a kind, in the same
//   transaction.
// - the GroupCommitter's completer: runs write callbacks in commit order (as RocksStore's).
// - connections-1 readers: each takes every read queued so far and serves them with one
//   `SELECT key, value ... WHERE key = ANY($1)`, and one board read (BoardReader) at a time, each
//   one SQL statement (one round trip).
// load_boards() runs on the caller's thread, over a connection of its own (binary COPY).
// - a timer thread: delayed reads (fault injection) and operations started after close().
// Connection loss is not sticky (unlike RocksStore's failed sync): the group in flight completes
// with io_error ("commit outcome unknown"), the thread reconnects with exponential backoff
// (50 ms doubling to 2 s), and while it is disconnected every op it takes completes at once with
// unavailable ("postgres: not connected: ...": nothing applied). stats().failed stays false;
// stats().connected says
// whether every connection is up. Idle connections are checked every 200 ms, so a server that
// went away is noticed before the next op is sent to it. The writer's session turns
// synchronous_commit back on if the database or role set it off.
// close() gives in-flight operations 1 s, then shuts the connections down under them (a server
// that stopped answering must not hold the process's shutdown): they fail as "outcome unknown".
// Thread safety: every public method may be called from any thread (store.hh).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/engine_store.hh"
#include "store/store.hh"

namespace store {

namespace detail {
class PgConnection;
}  // namespace detail

// The default of PostgresOptions::max_statement_bytes: 256 MiB.
inline constexpr std::size_t kPostgresMaxStatementBytes = std::size_t{256} << 20;

struct PostgresOptions {
  std::string conninfo;  // a libpq keyword/value string or a postgresql:// URI, passed as is
  std::string table = "kv";
  std::string board_table = "leaderboard";
  int connections = 4;                      // >= 2: one writer, the rest readers
  std::chrono::milliseconds read_delay{0};  // fault injection: see Faults
  // The most parameter bytes one statement of a group carries: a group's rows are split into
  // several statements, all in its one transaction, each below this (a row larger alone goes
  // alone), so that no Bind message nears the protocol's 1 GB. Tests make it small.
  std::size_t max_statement_bytes = kPostgresMaxStatementBytes;
};

class PostgresStore final : public detail::EngineStore, public BoardReader {
 public:
  // Connects every connection and creates the table if missing, or returns nullptr and a
  // one-line error: bad options (connections < 2, empty table name), the server cannot be
  // reached or refuses the login, a table cannot be created (privileges, ...) or has another
  // shape.
  [[nodiscard]] static std::unique_ptr<PostgresStore> open(const PostgresOptions& options,
                                                           std::string& error);
  struct OpenKey {  // only open() can construct (it connects first)
   private:
    friend class PostgresStore;
    OpenKey() = default;
  };
  PostgresStore(OpenKey, const PostgresOptions& options, std::string quoted_table,
                std::string quoted_board_table,
                std::vector<std::unique_ptr<detail::PgConnection>> connections);
  ~PostgresStore() override;

  const char* scheme() const override { return "postgres"; }
  [[nodiscard]] Status load_boards(const BoardVisitor& visit) override;
  BoardReader* board_reader() override { return this; }

  // BoardReader: each call is one SQL statement on a reader connection (store/README.md, "Board
  // rows in PostgreSQL"). These, load_boards, enqueue_board, board_query and serve_board are in
  // postgres_boards.cc; the rest in postgres_store.cc.
  void board_top(std::string board, std::uint64_t offset, std::uint64_t n,
                 BoardPageDone done) override;
  void board_member(std::string board, std::string member, BoardPageDone done) override;
  void board_around(std::string board, std::string member, std::uint64_t n,
                    BoardPageDone done) override;
  void board_info(std::string board, BoardPageDone done) override;

 private:
  struct BoardOp {
    enum class Kind : std::uint8_t { top, member, around, info };
    Kind kind = Kind::top;
    std::string board;
    std::string member;        // member, around
    std::uint64_t offset = 0;  // top
    std::uint64_t n = 0;       // top, around
    BoardPageDone done;
    std::chrono::steady_clock::time_point issued;
  };
  using Op = GroupCommitter::Op;

  // GroupCommitter::Engine: one group as one transaction in one pipeline.
  Status commit(std::vector<Op>& group) override;
  void note_refused(const std::string& why) override { note_error(why); }
  std::optional<GroupCommitter::Clock::time_point> idle_deadline() override;
  void idle() override;
  // Deletes the rows expired by now, at most once per kPurgeEvery (the writer, between groups
  // and while idle). A failure is only noted: the rows stay, reads skip them.
  void purge_expired_if_due();
  // A pipeline that did not commit: lost (the connection), sent_all (COMMIT was sent), error.
  Status commit_failed(detail::PgConnection& conn, bool lost, bool sent_all,
                       const std::string& error);
  // EngineStore.
  void shut_down() override;
  void add_stats(StoreStats& s) const override;

  void reader_main(detail::PgConnection& conn);
  void serve_reads(detail::PgConnection& conn, std::vector<ReadOp>& reads);
  template <class Exec>  // defined in postgres_internal.hh: serve_board uses it too
  Status run_read(detail::PgConnection& conn, Exec exec);
  void enqueue_board(BoardOp op);
  struct BoardQuery;  // postgres_boards.cc: a board read's statement and its parameters
  BoardQuery board_query(const BoardOp& op) const;
  void serve_board(detail::PgConnection& conn, BoardOp& op);
  // Reconnects `conn` if it is down and its next attempt is due; true if it is up afterwards.
  bool ensure_connected(detail::PgConnection& conn);
  void mark_lost(detail::PgConnection& conn, const std::string& why);
  // While a thread waits for work: reconnects its connection when due, or checks an idle one.
  void keep_connection(detail::PgConnection& conn);

  const std::string conninfo_;     // load_boards' own connection
  const std::string table_;        // quoted identifier
  const std::string board_table_;  // quoted identifier
  const std::size_t max_statement_bytes_;
  std::vector<std::unique_ptr<detail::PgConnection>> conns_;  // [0]: writer, rest: readers
  std::deque<BoardOp> board_queue_;  // under read_mu_; one per reader at a time, in arrival order
  std::atomic<std::uint64_t> reconnects_{0};
  std::atomic<int> down_{0};          // connections currently lost
  std::atomic<bool> abandon_{false};  // close() gave up on the server: no reconnecting
  std::vector<std::thread> readers_;
  std::chrono::steady_clock::time_point next_purge_{};  // the committer thread's
};

}  // namespace store
