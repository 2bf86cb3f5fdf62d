// rocksdb_store.hh — RocksStore, the Store over an embedded RocksDB (store.hh is the contract;
// store/README.md explains the design and the options).
//
// Threads (all owned, all joined by close()):
// - one committer: takes every write()/clear() queued since its last commit, checks them, turns
//   them into ONE rocksdb::WriteBatch in arrival order and commits it with one synced Write
//   (WAL append + fdatasync), then hands the group to the completer and takes the next one.
//   Idle, a lone write is committed at once; under load the group grows by itself while the
//   previous sync runs.
//   It is the only thread that writes the database, so the pre-write lookups that answer
//   `want_existed` see exactly the state the batch applies to.
// - one completer: runs the callbacks of committed groups in commit order (group after group,
//   op after op), so the next commit's sync overlaps them rather than waiting for them.
// - kReaders readers: each takes every read queued so far and serves them with one MultiGet.
// - a timer thread: delayed reads (fault injection) and operations started after close().
// Board rows live in their own column family, "boards" (created on first open), keyed by
// [board length: 1 byte][board][member] so that a board's rows are one key range (board_drop is
// one DeleteRange); the value is the score's IEEE-754 bits then the seq, 8 bytes each,
// little-endian.
// Sticky failure: a commit that fails (IO error, failed sync, no space) fails its whole group,
// marks the store failed (stats().failed, last_error) and every later write/clear completes
// with Code::failed without touching the disk. The sync is never retried. Reads keep working.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/store.hh"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Env;
class FileSystem;
}  // namespace rocksdb

namespace store {

namespace detail {
class TimerThread;
}

struct RocksOptions {
  std::string path;                                  // the database directory (created)
  std::chrono::milliseconds read_delay{0};           // fault injection: see Faults
  std::shared_ptr<rocksdb::FileSystem> file_system;  // null: RocksDB's default (POSIX)
};

class RocksStore final : public Store {
 public:
  static constexpr int kReaders = 2;

  // Opens (creating the directory and its parents if missing) or returns nullptr and a
  // one-line error: the directory cannot be made, the database is locked by another process,
  // it is corrupt, ...
  [[nodiscard]] static std::unique_ptr<RocksStore> open(const RocksOptions& options,
                                                        std::string& error);
  struct OpenKey {  // only open() can construct (it opens the database first)
   private:
    friend class RocksStore;
    OpenKey() = default;
  };
  RocksStore(OpenKey, const RocksOptions& options, std::unique_ptr<rocksdb::Env> env,
             std::unique_ptr<rocksdb::DB> db, rocksdb::ColumnFamilyHandle* boards);
  ~RocksStore() override;

  const char* scheme() const override { return "rocksdb"; }
  void read(std::string key, ReadDone done) override;
  void write(std::vector<Write> batch, WriteDone done) override;
  void clear(ClearDone done) override;
  [[nodiscard]] Status load_boards(const BoardVisitor& visit) override;
  void close() override;
  StoreStats stats() const override;

  // Tests only (a seam, like the fault injection): after committing the next group it takes (the
  // one holding the next write submitted) the committer waits until release_committer() (or
  // close()), so everything submitted meanwhile forms one group.
  void hold_committer_after_next_commit();
  void release_committer();

 private:
  struct ReadOp {
    std::string key;
    ReadDone done;
    std::chrono::steady_clock::time_point issued;
  };
  struct WriteOp {  // a write() batch, or a clear() when is_clear
    std::vector<Write> batch;
    WriteDone on_write;
    ClearDone on_clear;
    bool is_clear = false;
    std::string refused;        // non-empty: refused before the engine (bad key), with this message
    Status result;              // set by the committer (complete_write) ...
    std::vector<bool> existed;  // ... for the completer to hand to the callback
  };

  void committer_main();
  void completer_main();
  void commit_group(std::vector<WriteOp>& group);
  void reader_main();
  void serve_reads(std::vector<ReadOp>& reads);
  void complete_write(WriteOp& op, Status status, std::vector<bool> existed);
  void enqueue_write(WriteOp op);
  void complete_closed(WriteOp op);
  void count_error();
  void set_failed(const std::string& why);

  const std::chrono::milliseconds read_delay_;
  std::unique_ptr<rocksdb::Env> env_;  // outlives db_ (declared before it)
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* boards_;  // the "boards" column family; owned, destroyed by close()
  std::unique_ptr<detail::TimerThread> timer_;

  std::mutex write_mu_;
  std::condition_variable write_cv_;
  std::vector<WriteOp> write_queue_;
  bool write_stopping_ = false;
  std::uint64_t groups_taken_ = 0;      // by the committer, under write_mu_
  std::uint64_t hold_after_group_ = 0;  // hold_committer_after_next_commit(); 0: none

  std::mutex complete_mu_;
  std::condition_variable complete_cv_;
  std::vector<std::vector<WriteOp>> completed_;  // committed groups, callbacks not yet run
  bool complete_stopping_ = false;

  std::mutex read_mu_;
  std::condition_variable read_cv_;
  std::vector<ReadOp> read_queue_;
  bool read_stopping_ = false;

  std::mutex close_mu_;  // serializes close(); held for its whole duration
  bool closed_ = false;

  std::atomic<std::uint64_t> reads_{0};
  std::atomic<std::uint64_t> writes_{0};
  std::atomic<std::uint64_t> commits_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<bool> failed_{false};  // written only by the committer
  mutable std::mutex error_mu_;
  std::string last_error_;

  std::thread completer_;  // last: threads start once every member above exists
  std::thread committer_;
  std::vector<std::thread> readers_;
};

}  // namespace store
