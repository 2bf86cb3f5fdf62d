// faults.hh — the fault-injecting file system under RocksDB (internal to store/; the spec syntax
// and parse_faults are in store.hh).
//
// FaultFileSystem wraps RocksDB's real file system and tampers only with write-ahead-log files
// (NNNNNN.log), so the engine's own error handling is what the faults exercise:
// - write-error-after N: once N WAL syncs have succeeded, WAL appends fail with an IO error;
// - no-space-after N:    the same, with "no space" (what ENOSPC becomes in RocksDB);
// - sync-error-after N:  the (N+1)th WAL sync fails, and the file is cut back to what the last
//                        good sync covered (a failed fsync on Linux can drop the dirty pages:
//                        the refused write must not come back at the next open);
// - sync-hang-after N:   the (N+1)th WAL sync never returns (a stuck fsync: a dead disk);
// - sync-delay D:        every WAL sync takes D longer (a slow disk).
// With sync = true every commit ends in exactly one WAL sync, so "N syncs" is "N commits".
// Nothing is counted or injected before arm(): opening (recovery, the first WAL) stays clean.
// Thread safety: the counters are atomics; RocksDB may call in from any of its threads.
#pragma once

#include <rocksdb/file_system.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "store/store.hh"

namespace store::detail {

class FaultFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  FaultFileSystem(std::shared_ptr<rocksdb::FileSystem> target, const Faults& faults);

  const char* Name() const override { return "CrankFaultFileSystem"; }

  // Starts counting and injecting (call once the database is open).
  void arm() { armed_.store(true, std::memory_order_release); }

  // Whether the faults given need this file system at all (read-delay does not).
  static bool needed(const Faults& faults) {
    return faults.write_error_after >= 0 || faults.sync_error_after >= 0 ||
           faults.no_space_after >= 0 || faults.sync_hang_after >= 0 ||
           faults.sync_delay.count() > 0;
  }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                      const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override;

  // Called by the WAL file wrappers.
  rocksdb::IOStatus check_append() const;
  bool sync_should_fail() const;
  bool sync_should_hang() const;
  void delay_sync() const;
  void sync_succeeded();

 private:
  void wrap_if_wal(const std::string& fname, std::unique_ptr<rocksdb::FSWritableFile>* result);

  const Faults faults_;
  std::atomic<bool> armed_{false};
  std::atomic<std::int64_t> good_syncs_{0};  // WAL syncs that succeeded since arm()
};

}  // namespace store::detail
