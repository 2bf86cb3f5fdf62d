// write_through.hh — write-through: a PUT or DELETE is submitted to the store (group commit);
// when its commit succeeds the cache is updated, in commit order (store write callbacks run in
// commit order, on one thread), and only then is the request answered.
//
// Invariants:
// - every cache entry came from a committed write or a fill, so the store alone says whether a
//   key existed (want_existed), and a key cached with no write pending need not be asked about;
// - a failed commit answers 503 and its outcome counts as unknown (a lost connection or a
//   failed fsync can have applied it): the key leaves the cache and is not filled again until a
//   later write of it commits, or a reset (key_table.hh);
// - of several writes of a key in flight (one group commit may apply them all before their
//   callbacks run), only the last caches its value; the others evict the key, so no hit goes
//   back behind what a miss read;
// - the backlog (bytes submitted and not yet answered, kOpOverhead each; board rows from their
//   reservation) is bounded by --max-dirty: past it a write answers 503 at once;
// - the steady state allocates nothing of its own per write: a write's record and its batch
//   come from spares (the store hands each batch back with its result), bounded.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "tier/key_table.hh"
#include "tier/parts.hh"

namespace tier {

class WriteThrough {
 public:
  explicit WriteThrough(const Parts& parts) : p_(parts) {}

  // An immediate refusal (the backlog bound), or nullopt: submitted, done is called later.
  std::optional<KeyOutcome> write_locked(const KeyWrite& kw, const Answer& done);
  // The backlog bound: bytes counted in (nullopt), or the refusal.
  std::optional<KeyOutcome> admit_locked(std::size_t bytes);
  void release_locked(std::size_t bytes) { bytes_ -= bytes; }
  // A board row, counted in the backlog by its reservation: answered by the commit (replaced)
  // or at --store-timeout.
  void board_write_locked(store::Write row, std::size_t bytes, Done<KeyOutcome> done);

 private:
  // A write in the store's hands. Its key is its table entry's (kept there while writing > 0),
  // its value the batch's (the store hands the batch back with the result).
  struct Write {
    Kind kind;
    KeyTable::Entry* entry;
    bool want_existed = false;
    std::size_t bytes = 0;  // counted in bytes_
  };
  // The store's callback names it by a raw pointer (the callback is two pointers, which
  // std::function keeps without allocating) and takes it back when it runs (the store runs
  // every callback exactly once); it then becomes a spare for a later write.
  struct Record {
    Write write;
    std::optional<Answer> done;
  };

  std::unique_ptr<Record> take_record_locked();
  void on_done(Record* record, store::WriteResult& r);
  KeyOutcome commit_locked(const Write& w, const store::WriteResult& r, DecidedList& decided);
  KeyOutcome outcome_locked(const Write& w, const store::WriteResult& r);
  std::vector<store::Write> batch_locked(const KeyWrite& kw, bool want_existed);
  void recycle_batch_locked(std::vector<store::Write>& batch);

  static constexpr std::size_t kSpareBatches = 1024;
  static constexpr std::size_t kSpareRecords = 1024;

  const Parts& p_;
  std::size_t bytes_ = 0;  // submitted to the store, not yet answered
  std::vector<std::vector<store::Write>> spare_batches_;  // batch_locked
  std::vector<std::unique_ptr<Record>> spare_records_;    // take_record_locked
};

}  // namespace tier
