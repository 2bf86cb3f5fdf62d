// tier.hh — the cache in front of a durable store: the tier's public API (docs/server.md, "The
// durable tier"; docs/api.md, "Failures of the store" has the contract it keeps).
//
// It binds cache/ and store/, which know nothing of each other, and owns the rules that keep
// them consistent. Each concern is a part in a file of its own, with its invariants at the top:
//   core.hh               what every part shares: cache, store, options, deadline, the mutex
//   key_table.hh          per-key state (writing, unknown, the read under way, a version)
//   read_through.hh       misses: the dirty buffer, or single-flight store reads that fill
//   write_through.hh      writes answered after their commit, the cache following the store
//   write_behind.hh       writes answered at once; dirty_buffer.hh holds them, flusher.hh
//                         makes them durable
//   conditional_writes.hh If-Match / If-None-Match, decided after every earlier write of the key
//   board_rows.hh         the leaderboards' rows (reserve, then write)
//   reset.hh              POST /reset as a barrier, all or nothing; shutdown
//   deadline.hh           --store-timeout: every request handed to the store answers once
// Expiry: a PUT's expiry time (wall clock, store.hh) goes to the store with the value; every
// answer from beyond the cache treats an expired value as absent, and the cache gets the time
// left as the item's TTL. Bounds: write-through's backlog and write-behind's dirty buffer (with
// reserved board rows) by --max-dirty; waiting writes and reads waiting on the store each by
// --max-inflight; keys of unknown outcome by --max-dirty. Past a bound a request answers 503 at
// once.
// Thread safety: every method may be called from any thread. One mutex (TierCore::mu) orders
// the parts, so the order in which ops reach the store is the order they were decided in.
// Completions (deadline.hh, Done<Outcome>) are answered on a store thread, the flusher or the
// deadline thread, never inline inside the call that started them unless said below: the
// caller posts them to its connection (server/THREADS.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "cache/cache.hh"
#include "common/preconditions.hh"
#include "store/store.hh"
#include "tier/board_rows.hh"
#include "tier/conditional_writes.hh"
#include "tier/core.hh"
#include "tier/key_table.hh"
#include "tier/options.hh"
#include "tier/parts.hh"
#include "tier/read_through.hh"
#include "tier/reset.hh"
#include "tier/results.hh"
#include "tier/write_behind.hh"
#include "tier/write_through.hh"

namespace tier {

class StoreTier {
 public:
  StoreTier(cache::Cache& cache, std::unique_ptr<store::Store> store, TierOptions options);
  ~StoreTier();
  StoreTier(const StoreTier&) = delete;
  StoreTier& operator=(const StoreTier&) = delete;

  WriteMode mode() const { return core_.options.mode; }

  // A GET/HEAD that missed the cache. Returns the answer at once when the dirty buffer holds the
  // key (write-behind); otherwise reads the store (single-flight) and calls done later.
  std::optional<KeyLookup> lookup(std::string_view key, Done<KeyLookup> done) {
    return reads_.lookup(key, std::move(done));
  }

  // Write-behind's fast path: the answer at once when the write can be applied now (room in
  // the dirty buffer, nobody waiting; for DELETE, the cache or the buffer knows the key);
  // nullopt otherwise (always, in write-through), and the caller then calls put()/del().
  // expires_at_ms: when a PUT's value expires (wall clock, store.hh "Expiry"; 0: never). It goes
  // to the store with the value, and the cache gets the time left as its TTL.
  std::optional<KeyOutcome> try_put(std::string_view key, std::string_view value,
                                    std::uint64_t expires_at_ms = 0);
  std::optional<KeyOutcome> try_del(std::string_view key);

  // PUT / DELETE, answered exactly once through done: an immediate outcome (a refusal, a
  // write-behind write applied now) inline, before the call returns; otherwise later
  // (write-through after the commit; write-behind after waiting for room, or for DELETE after
  // the store says whether the key exists) or by the deadline. The caller keeps no copy of done.
  void put(std::string_view key, std::string_view value, Done<KeyOutcome> done,
           std::uint64_t expires_at_ms = 0);
  void del(std::string_view key, Done<KeyOutcome> done);

  // A PUT (kind put) or DELETE (kind del) with If-Match / If-None-Match (conditional_writes.hh):
  // answers precondition_failed (412) or what the write answers, through done.
  void write_if(Kind kind, std::string_view key, std::string_view value,
                std::uint64_t expires_at_ms, const common::Preconditions& preconditions,
                Done<KeyOutcome> done) {
    conditional_.write_if(kind, key, value, expires_at_ms, preconditions, std::move(done));
  }

  // A board row (store::Write::Kind::board_set, board_remove, board_drop; board_rows.hh), in two
  // steps so a refused row changes nothing: reserve_row() holds the bytes the row can add
  // against --max-dirty, or says why not; then board_write() consumes the reservation, or
  // release_row() gives it back. member empty: the whole board is dropped. board_write:
  // write-through returns nullopt and calls done after the commit (replaced) or with an error
  // (503); write-behind returns KeyOutcome{replaced} at once.
  RowReservation reserve_row(std::string_view board, std::string_view member);
  void release_row(std::size_t bytes);
  std::optional<KeyOutcome> board_write(store::Write row, std::size_t reserved,
                                        Done<KeyOutcome> done);

  // Startup only, before any board_write: every board row in the store (store.hh).
  [[nodiscard]] store::Status load_boards(const store::BoardVisitor& visit) {
    return core_.store->load_boards(visit);
  }
  // The store's own board reads (--board-source store), or nullptr.
  store::BoardReader* board_reader() { return core_.store->board_reader(); }

  // POST /reset (reset.hh): empties the store, then the cache and the dirty writes made before
  // the call, then done(ok); settled(cleared) runs once the store has answered, before done:
  // the boards follow the store there.
  void reset(Done<store::Status> done, std::function<void(bool cleared)> settled = {}) {
    barrier_.reset(std::move(done), std::move(settled));
  }
  // POST /reset?scope=cache: empties only the cache (dirty writes stay pending and are flushed).
  void reset_cache() { barrier_.reset_cache(); }

  TierStats stats() const;

  // Write-behind with flush_interval 0 has no flusher thread: each call is one step of its loop
  // (admit waiting writes, or submit a flush unless one is in flight or a reset is pending),
  // without waiting for the commit; the caller orders the commits (the simulation, or a host
  // that drives its own flushing).
  void flush_step() { behind_.flusher().step(); }

  // Flushes every dirty write (write-behind), then closes the store. Idempotent. Returns the
  // number of dirty writes that could not be made durable (0 unless the store failed).
  // Bounded: a store whose close() has not returned within --store-timeout + kCloseGrace (a
  // thread stuck in a sync that never returns) is abandoned, still open: store_abandoned() says
  // so, and the process must then end without destroying anything that thread may touch.
  std::size_t shutdown();
  bool store_abandoned() const { return core_.store_abandoned.load(); }

 private:
  void write(const KeyWrite& w, Done<KeyOutcome> done);

  TierCore core_;
  const Parts parts_;
  KeyTable keys_;
  ReadThrough reads_;
  WriteThrough through_;
  WriteBehindBuffer behind_;
  ConditionalWrites conditional_;
  ResetBarrier barrier_;
};

}  // namespace tier
