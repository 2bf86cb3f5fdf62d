// rocksdb_store.hh — RocksStore, the Store over an embedded RocksDB (store.hh is the contract;
// store/README.md explains the design and the options).
//
// Threads (all owned, all joined by close()); what is not RocksDB's is EngineStore's
// (engine_store.hh):
// - the GroupCommitter's two (group_committer.hh), this store supplying commit():
//   one committer: takes every write()/clear() queued since its last commit, checks them, turns
//   them into ONE rocksdb::WriteBatch in arrival order and commits it with one synced Write
//   (WAL append + fdatasync), then hands the group to the completer and takes the next one.
//   Idle, a lone write is committed at once; under load the group grows by itself while the
//   previous sync runs.
//   It is the only thread that writes the database, so the pre-write lookups that answer
//   `want_existed` see exactly the state the batch applies to.
//   one completer: runs the callbacks of committed groups in commit order (group after group,
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
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/engine_store.hh"
#include "store/store.hh"

namespace rocksdb {
class ColumnFamilyHandle;
class WriteBatch;
class DB;
class Env;
class FileSystem;
}  // namespace rocksdb

namespace store {

struct RocksOptions {
  std::string path;                                  // the database directory (created)
  std::chrono::milliseconds read_delay{0};           // fault injection: see Faults
  std::shared_ptr<rocksdb::FileSystem> file_system;  // null: RocksDB's default (POSIX)
};

class RocksStore final : public detail::EngineStore {
 public:
  static constexpr int kReaders = 2;
  // One op of the group as build_batch() orders it: its write and its place in the group.
  struct Ordered {
    const Write* write;
    std::size_t arrival;
  };

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
  [[nodiscard]] Status load_boards(const BoardVisitor& visit) override;

 private:
  using Op = GroupCommitter::Op;

  // GroupCommitter::Engine: one group as one WriteBatch and one synced Write.
  Status commit(std::vector<Op>& group) override;
  void note_refused(const std::string& why) override;
  void committer_started() override;
  Status look_up_existed(const std::vector<std::string_view>& keys,
                         std::unordered_map<std::string_view, bool>& in_db);
  std::uint64_t build_batch(const std::vector<Op>& group, rocksdb::WriteBatch& wb);
  Status write_batch(rocksdb::WriteBatch& wb, std::uint64_t ops);
  // EngineStore.
  void shut_down() override;
  void add_stats(StoreStats& s) const override;

  void reader_main();
  void serve_reads(std::vector<ReadOp>& reads);
  void note_unless_failed(const std::string& why);
  void set_failed(const std::string& why);

  std::unique_ptr<rocksdb::Env> env_;  // outlives db_ (declared before it)
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* boards_;  // the "boards" column family; owned, destroyed by close()
  std::atomic<bool> failed_{false};      // written only by the committer
  // The committer's alone, kept across groups (their buffers' capacity with them): the group's
  // WriteBatch and its ops in the order build_batch() adds them.
  std::unique_ptr<rocksdb::WriteBatch> batch_;
  std::vector<Ordered> segment_;
  std::vector<std::thread> readers_;
};

}  // namespace store
