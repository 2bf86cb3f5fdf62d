// store.hh — the durable tier's contract: an asynchronous key-value store that the server puts
// behind its cache (store/README.md has the design note).
//
// The interface fits an embedded engine (RocksDB, rocksdb_store.hh) and a database reached over a
// network (PostgreSQL, postgres_store.hh) alike:
// - Every operation completes exactly once, through its callback, on a thread the store owns;
//   never inline inside the call that started it (so a caller may hold its own locks while
//   starting an operation, and must not assume the callback runs on its own thread).
// - write() is the durability point: its callback with ok means every op of the batch is durable
//   (for RocksDB: in the WAL and fdatasync'ed). Batches that arrive while a commit is syncing are
//   committed together by one commit (group commit); ops apply in the order write() was called,
//   and within a batch in vector order.
// - A failed write is never acknowledged. After a write or sync error the store is failed: it
//   takes no more writes (they complete with Code::failed at once) and says why in stats();
//   reads still work. A failed fsync is not retried: it can have dropped data silently.
//   (PostgresStore: the server owns the fsync, so nothing there is sticky. A lost connection
//   fails the ops in flight with io_error, commit outcome unknown, and the store reconnects.)
// - Reads see every write whose callback has run (read-your-acknowledged-writes).
// - Write callbacks run on one thread (RocksStore: its completer), in commit order, after their
//   commit; read callbacks run on a
//   reader thread (or, with an injected read delay, on the store's timer thread).
// Thread safety: every method may be called from any thread, concurrently.
// Ownership: the store owns its threads; close() (or the destructor) completes or fails every
// queued operation, then joins them. No callback of an operation started before close() runs
// after close() returns; operations started after it complete with Code::closed on the store's
// timer thread, which the destructor joins (so they, too, never run inline).
// Callbacks must not throw, and must not call close() or destroy the store (close() joins the
// thread the callback runs on); they may start new operations.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace store {

enum class Code : std::uint8_t {
  ok,
  not_found,  // read: the key has no value
  io_error,   // the engine reported an error for this operation (message says which)
  no_space,   // the disk is full
  // write: refused, nothing of the batch applied: the store refuses writes after an earlier
  // write/sync error (sticky: stats().failed), or this batch alone is invalid (a key out of
  // 1..250 bytes, ...: see write(); not sticky).
  failed,
  closed,  // the store was closed before the operation could run
  // The store could not take the operation now (PostgreSQL not connected): nothing of it was
  // applied, and nothing is sticky (a later operation may succeed).
  unavailable,
  // write: abandoned by its caller (Store::abandon) before its commit began: not applied.
  abandoned,
};
const char* to_string(Code c);

struct Status {
  Code code = Code::ok;
  std::string message;  // empty when ok; otherwise one line, for logs and 503 bodies
  bool ok() const { return code == Code::ok; }
};

// Expiry (TTL): a put may carry the wall-clock time at which its value expires, in
// milliseconds since the Unix epoch (0: never), so that it survives a restart. A store never
// answers an expired value: a read of it is not_found, and a write's existed counts it as
// absent. The rows themselves go later (RocksDB: a compaction filter; PostgreSQL: the writer
// deletes them about once a second).
std::uint64_t unix_now_ms();
inline bool expired(std::uint64_t expires_at_ms, std::uint64_t now_ms) {
  return expires_at_ms != 0 && expires_at_ms <= now_ms;
}
// The time a value that expires at expires_at_ms has left at now_ms: nullopt when it never
// expires, zero once it has expired.
inline std::optional<std::chrono::milliseconds> time_left(std::uint64_t expires_at_ms,
                                                          std::uint64_t now_ms) {
  if (expires_at_ms == 0) return std::nullopt;
  return std::chrono::milliseconds(expires_at_ms > now_ms ? expires_at_ms - now_ms : 0);
}

struct ReadResult {
  Status status;                    // ok (value holds the bytes), not_found, or an error
  std::string value;                // empty unless ok
  std::uint64_t expires_at_ms = 0;  // ok: when the value expires (0: never)
};

// The longest key, board name and member a store takes (Write below: 1..kMaxKeyBytes bytes).
inline constexpr std::size_t kMaxKeyBytes = 250;

// One op of a write batch. Keys and board rows live apart: a board named "x" and the key "x"
// never touch each other. Board rows are (board, member) -> (score, seq), what a leaderboard needs
// to be rebuilt in the same order (boards/board.hh: ties rank by arrival, seq).
struct Write {
  enum class Kind : std::uint8_t {
    put,           // key := value
    del,           // key removed (absent: nothing happens)
    board_set,     // the row (key = board, member) := (score, seq), inserted or replaced
    board_remove,  // the row (key = board, member) removed (absent: nothing happens)
    board_drop,    // every row of the board `key` removed
  };
  Kind kind = Kind::put;
  std::string key;    // the key, or for board_* the board name (1..250 bytes either way)
  std::string value;  // put only
  std::uint64_t expires_at_ms = 0;  // put only: when the value expires (Unix ms; 0: never)
  bool want_existed = false;  // put/del only: ask whether the key had a value just before this op
  std::string member;         // board_set, board_remove: 1..250 bytes
  double score = 0;           // board_set: finite
  std::uint64_t seq = 0;      // board_set: the member's arrival number in its board (< 2^63)

  // A board row op (board_set, board_remove, board_drop) rather than a key's put or del.
  bool is_board_op() const { return kind != Kind::put && kind != Kind::del; }

  static Write board_set_row(std::string board, std::string member, double score,
                             std::uint64_t seq) {
    Write w;
    w.kind = Kind::board_set;
    w.key = std::move(board);
    w.member = std::move(member);
    w.score = score;
    w.seq = seq;
    return w;
  }
  static Write board_remove_row(std::string board, std::string member) {
    Write w;
    w.kind = Kind::board_remove;
    w.key = std::move(board);
    w.member = std::move(member);
    return w;
  }
  static Write board_drop_rows(std::string board) {
    Write w;
    w.kind = Kind::board_drop;
    w.key = std::move(board);
    return w;
  }
};

// A board row, as load_boards() hands it out (views valid during the visit only).
struct BoardRow {
  std::string_view board;
  std::string_view member;
  double score = 0;
  std::uint64_t seq = 0;
};
using BoardVisitor = std::function<void(const BoardRow&)>;

// Board reads answered by the store itself (--board-source store): the database-only baseline
// the in-memory boards are measured against. Ranks are 1-based, highest score first, equal
// scores by seq ascending (boards/board.hh's order).
struct BoardEntry {
  std::uint64_t rank = 0;
  std::string member;
  double score = 0;
};
struct BoardPage {
  // ok; not_found with message "board not found" or "member not found"; io_error; closed.
  Status status;
  std::uint64_t members = 0;        // not filled by BoardReader (the caller keeps the count)
  std::vector<BoardEntry> entries;  // top: ranks offset+1..; around: the window; member: one
  double top_score = 0;             // info only
  double bottom_score = 0;          // info only
};
using BoardPageDone = std::function<void(BoardPage)>;

// Every call completes once through done, on a thread the store owns (never inline), like
// Store's reads, and sees every board write whose callback has run.
class BoardReader {
 public:
  virtual ~BoardReader() = default;
  // Ranks offset+1 .. offset+n (n >= 1): entries (members is not filled: counting the board per
  // page is what a top page must not cost). Past the end: no entries.
  virtual void board_top(std::string board, std::uint64_t offset, std::uint64_t n,
                         BoardPageDone done) = 0;
  // One member: entries[0] holds its rank and score (members is not filled).
  virtual void board_member(std::string board, std::string member, BoardPageDone done) = 0;
  // The members ranked rank(member)-n .. rank(member)+n, clipped at the board's ends (members is
  // not filled: a count(*) of the board per read is what it must not cost; the server keeps
  // every board's count in memory).
  virtual void board_around(std::string board, std::string member, std::uint64_t n,
                            BoardPageDone done) = 0;
  // top_score, bottom_score (no entries; members is not filled, as for board_around).
  virtual void board_info(std::string board, BoardPageDone done) = 0;
};

struct WriteResult {
  Status status;
  // existed[i]: op i's key had a value just before op i (only for ops with want_existed; false
  // otherwise). Same length as the batch when ok; empty on error.
  std::vector<bool> existed;
  // The batch handed to write(), given back once the write is settled (ok or error), so that
  // a caller can use what it wrote (e.g. put the values in its cache) without keeping a copy.
  // Empty when the write never reached a commit: closed, abandoned.
  std::vector<Write> batch;
};

using ReadDone = std::function<void(ReadResult)>;
using WriteDone = std::function<void(WriteResult)>;
// Names one write() for abandon(); 0: none.
using WriteTicket = std::uint64_t;
using ClearDone = std::function<void(Status)>;

// Counters since open; read at any time from any thread.
struct StoreStats {
  std::uint64_t reads = 0;       // keys read (each key of a batched read counts once)
  std::uint64_t writes = 0;      // ops committed (puts + deletes)
  std::uint64_t commits = 0;     // durable commits (one per group commit)
  std::uint64_t errors = 0;      // operations (read, write batch, clear) that completed with an
                                 // error other than not_found, closed ones included
  bool failed = false;           // sticky: the store takes no more writes
  std::string last_error;        // empty, or why the last error happened
  bool connected = true;         // every connection of a networked store is up (embedded: always)
  std::uint64_t reconnects = 0;  // connections re-established after a loss (networked stores)
};

class Store {
 public:
  virtual ~Store() = default;
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The URI scheme: "rocksdb", ...
  virtual const char* scheme() const = 0;

  // Completes with ok and the value, not_found, io_error, or closed.
  virtual void read(std::string key, ReadDone done) = 0;
  // Completes with ok (every op durable), io_error (an engine error), no_space, failed (sticky,
  // see above; or, the store not failed, only this batch refused, none of it applied: a key,
  // board or member not 1..250 bytes, a board score not finite, a seq of 2^63 or more, a value
  // over the engine's limit (PostgreSQL: kPostgresMaxValue)), or closed. An
  // empty batch completes ok without a commit. Returns a ticket for abandon() (0: none).
  virtual WriteTicket write(std::vector<Write> batch, WriteDone done) = 0;
  // The caller stopped waiting for the write `ticket` (its request was answered at a
  // deadline): if its commit has not begun, it is dropped, done gets Code::abandoned (never
  // inline) and what it held is freed now; once its commit has begun, nothing changes. A ticket
  // that is 0, unknown or already committed is ignored. The default ignores every ticket.
  virtual void abandon(WriteTicket ticket) { (void)ticket; }
  // Removes every key and every board row, durably, then calls done. Ordered with write():
  // writes queued before it
  // are applied before it, writes queued after it after it (a clear is an op of the group
  // commit, so it may share one commit with them). Completes like a write: ok, io_error,
  // no_space, failed or closed.
  virtual void clear(ClearDone done) = 0;

  // Calls visit for every board row, in no particular order, on the calling thread, and
  // returns when all were visited (ok) or on the first error (io_error, closed). For startup:
  // call it before any write; rows written meanwhile may or may not be seen.
  [[nodiscard]] virtual Status load_boards(const BoardVisitor& visit) = 0;

  // The store's own board reads, or nullptr when it has none (RocksStore).
  virtual BoardReader* board_reader() { return nullptr; }

  // Completes every queued operation (committing queued writes), then stops the store's
  // threads. Idempotent. Operations started after close() complete with Code::closed.
  virtual void close() = 0;

  virtual StoreStats stats() const = 0;
};

// Fault injection for tests (the server's --store-faults, the store tests). Off by default.
// Parsed from "read-delay=50ms,write-error-after=N,sync-error-after=N,no-space-after=N":
//   read-delay         every read completes no sooner than this after it was issued
//   write-error-after  commits after the first N fail with io_error (the write is refused)
//   sync-error-after   the (N+1)th WAL sync fails as an fsync error would (the store fails)
//   no-space-after     WAL appends fail with "no space" once N commits have succeeded
//   sync-delay         every WAL sync takes this duration longer (a slow disk)
// Durations take a unit: "50ms", "2s", "0.5s". Counts are non-negative integers. A commit is a
// durable write of the engine (one group commit, or a clear); counting starts once the store is
// open. sync-error-after also drops what the failed sync should have covered, as a failed fsync
// can on Linux, so a refused write is absent after a restart.
struct Faults {
  std::chrono::milliseconds read_delay{0};
  std::int64_t write_error_after = -1;  // -1: never
  std::int64_t sync_error_after = -1;
  std::int64_t no_space_after = -1;
  std::int64_t sync_hang_after = -1;        // the (N+1)th WAL sync never returns (a stuck fsync)
  std::chrono::milliseconds sync_delay{0};  // every WAL sync takes this much longer (a slow disk)
  bool any() const {
    return read_delay.count() > 0 || write_error_after >= 0 || sync_error_after >= 0 ||
           no_space_after >= 0 || sync_hang_after >= 0 || sync_delay.count() > 0;
  }
};
// Empty string: no faults. Returns false and sets error on a bad spec.
[[nodiscard]] bool parse_faults(std::string_view spec, Faults& out, std::string& error);

// The largest value one PostgreSQL row holds here: 512 MiB. A bytea holds at most 1 GB minus
// its 4-byte header, but its text form (hex, 2 characters a byte: psql, pg_dump, COPY) must fit
// the same 1 GB, so 512 MiB is the most a row can hold and still be dumped and restored.
// PostgresStore::write() refuses a put with a longer value (failed, that batch only); a
// server in front of it should cap its values (--max-value) at this.
inline constexpr std::size_t kPostgresMaxValue = std::size_t{512} << 20;

// A store URI's scheme and the rest: "rocksdb:/d" -> {"rocksdb", "/d"}, "postgres:host=h" ->
// {"postgres", "host=h"}. nullopt for an unknown scheme or an empty rest ("none" included:
// it is no store). What open_store (open_store.hh) accepts, checked without opening anything (for
// flags).
struct StoreUriParts {
  std::string_view scheme;
  std::string_view rest;
};
[[nodiscard]] std::optional<StoreUriParts> split_store_uri(std::string_view uri);

}  // namespace store
