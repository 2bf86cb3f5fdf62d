// postgres_store.hh — PostgresStore, the Store over a PostgreSQL table reached with libpq
// (store.hh is the contract; store/README.md, "The PostgreSQL store", has the design).
//
// Schema: <table>(key bytea primary key, value bytea not null, updated_at timestamptz) and
// <board_table>(board bytea, member bytea, score double precision, seq bigint, primary key
// (board, member)) with an index on (board, score DESC, seq), created by open() if missing.
// Durability is PostgreSQL's: an ok write is in a committed transaction (fsync'ed WAL with the
// server's default fsync=on, synchronous_commit=on).
//
// Threads (all owned, all joined by close()); each connection belongs to one thread:
// - one committer, on the writer connection: takes every write()/clear() queued since its last
//   commit, coalesces each key and each board row to its last op (segment by segment between
//   clears) and sends the whole group as ONE pipeline: BEGIN, [SELECT ... FOR UPDATE for
//   want_existed], per segment [TRUNCATE of both tables], one DELETE of the dropped boards, one
//   multi-row upsert and one DELETE of board rows, one multi-row upsert and one DELETE of keys,
//   COMMIT, Sync: one round trip per group.
// - one completer: runs write callbacks in commit order (as RocksStore's).
// - connections-1 readers: each takes every read queued so far and serves them with one
//   `SELECT key, value ... WHERE key = ANY($1)`, and one board read (BoardSource) at a time, each
//   one SQL statement (one round trip).
// load_boards() runs on the caller's thread, over a connection of its own (binary COPY).
// - a timer thread: delayed reads (fault injection) and operations started after close().
// Connection loss is not sticky (unlike RocksStore's failed sync): the group in flight completes
// with io_error ("commit outcome unknown"), the thread reconnects with exponential backoff
// (50 ms doubling to 2 s), and while it is disconnected every op it takes completes at once with
// io_error ("postgres: not connected: ..."). stats().failed stays false; stats().connected says
// whether every connection is up. Idle connections are checked every 200 ms, so a server that
// went away is noticed before the next op is sent to it. The writer's session turns
// synchronous_commit back on if the database or role set it off.
// close() gives in-flight operations 1 s, then shuts the connections down under them (a server
// that stopped answering must not hold the process's shutdown): they fail as "outcome unknown".
// Thread safety: every public method may be called from any thread (store.hh).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/store.hh"

namespace store {

namespace detail {
class TimerThread;
class PgConnection;
}  // namespace detail

struct PostgresOptions {
  std::string conninfo;  // a libpq keyword/value string or a postgresql:// URI, passed as is
  std::string table = "kv";
  std::string board_table = "leaderboard";
  int connections = 4;                      // >= 2: one writer, the rest readers
  std::chrono::milliseconds read_delay{0};  // fault injection: see Faults
};

class PostgresStore final : public Store, public BoardSource {
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
  void read(std::string key, ReadDone done) override;
  void write(std::vector<Write> batch, WriteDone done) override;
  void clear(ClearDone done) override;
  [[nodiscard]] Status load_boards(const BoardVisitor& visit) override;
  BoardSource* board_source() override { return this; }
  void close() override;
  StoreStats stats() const override;

  // BoardSource: each call is one SQL statement on a reader connection (store/README.md, "Board
  // rows in PostgreSQL"). These, load_boards, enqueue_board and serve_board are defined in
  // postgres_boards.cc; the rest in postgres_store.cc.
  void board_top(std::string board, std::uint64_t offset, std::uint64_t n,
                 BoardPageDone done) override;
  void board_member(std::string board, std::string member, BoardPageDone done) override;
  void board_around(std::string board, std::string member, std::uint64_t n,
                    BoardPageDone done) override;
  void board_info(std::string board, BoardPageDone done) override;

  // Tests only (as RocksStore's): after committing the next group it takes, the committer waits
  // until release_committer() (or close()), so everything submitted meanwhile forms one group.
  void hold_committer_after_next_commit();
  void release_committer();

 private:
  struct ReadOp {
    std::string key;
    ReadDone done;
    std::chrono::steady_clock::time_point issued;
  };
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
  struct WriteOp {  // a write() batch, or a clear() when is_clear
    std::vector<Write> batch;
    WriteDone on_write;
    ClearDone on_clear;
    bool is_clear = false;
    std::string refused;  // non-empty: refused before the database (bad key), with this message
    Status result;        // set by the committer ...
    std::vector<bool> existed;  // ... for the completer to hand to the callback
  };

  void committer_main();
  void completer_main();
  void commit_group(std::vector<WriteOp>& group);
  void reader_main(detail::PgConnection& conn);
  void serve_reads(detail::PgConnection& conn, std::vector<ReadOp>& reads);
  template <class Exec>  // defined in postgres_internal.hh: serve_board uses it too
  Status run_read(detail::PgConnection& conn, Exec exec);
  void enqueue_board(BoardOp op);
  void serve_board(detail::PgConnection& conn, BoardOp& op);
  void complete_write(WriteOp& op, Status status, std::vector<bool> existed);
  void enqueue_write(WriteOp op);
  void complete_closed(WriteOp op);
  void count_error();
  void note_error(const std::string& why);
  // Reconnects `conn` if it is down and its next attempt is due; true if it is up afterwards.
  bool ensure_connected(detail::PgConnection& conn);
  void mark_lost(detail::PgConnection& conn, const std::string& why);

  const std::chrono::milliseconds read_delay_;
  const std::string conninfo_;                                // load_boards' own connection
  const std::string table_;                                   // quoted identifier
  const std::string board_table_;                             // quoted identifier
  std::vector<std::unique_ptr<detail::PgConnection>> conns_;  // [0]: writer, rest: readers
  std::unique_ptr<detail::TimerThread> timer_;

  std::mutex write_mu_;
  std::condition_variable write_cv_;
  std::vector<WriteOp> write_queue_;
  bool write_stopping_ = false;
  std::uint64_t groups_taken_ = 0;      // by the committer, under write_mu_
  std::uint64_t hold_after_group_ = 0;  // hold_committer_after_next_commit(); 0: none

  std::mutex complete_mu_;
  std::condition_variable complete_cv_;
  std::vector<std::vector<WriteOp>> completed_;
  bool complete_stopping_ = false;

  std::mutex read_mu_;
  std::condition_variable read_cv_;
  std::vector<ReadOp> read_queue_;
  std::deque<BoardOp> board_queue_;  // one per reader at a time, in arrival order
  bool read_stopping_ = false;

  std::mutex close_mu_;  // serializes close(); held for its whole duration
  bool closed_ = false;

  std::atomic<std::uint64_t> reads_{0};
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> reconnects_{0};
  std::atomic<int> down_{0};  // connections currently lost
  mutable std::mutex error_mu_;
  std::string last_error_;

  std::atomic<bool> abandon_{false};  // close() gave up on the server: no reconnecting
  std::thread completer_;             // last: threads start once every member above exists
  std::thread committer_;
  std::vector<std::thread> readers_;
};

}  // namespace store
