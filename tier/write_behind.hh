// write_behind.hh — write-behind: a PUT or DELETE updates the cache and the dirty buffer at once
// and is answered; the flusher (flusher.hh) makes the buffer durable within --flush-interval.
//
// Invariants:
// - the dirty buffer is authoritative over the store for reads, so a dirty entry evicted from
//   the cache is never lost;
// - past --max-dirty bytes (the buffer plus reserved board rows), writes wait in FIFO order
//   (never dropped) until a flush makes room; what waits is bounded by --max-inflight, and a
//   write answered 503 at its deadline while waiting is dropped, never applied;
// - from a failed flush until one succeeds, every key write and board change answers 503 (the
//   store is failing: what it would accept could never become durable);
// - a DELETE answers 404 only if the key is in neither the cache, the buffer nor the store; the
//   store's answer decides only if no write of the key and no reset overtook the read (else the
//   buffer decides, or the store is asked again, at most kMaxStoreReads times, then 503). Of two
//   concurrent DELETEs of one key exactly one answers 204.
// Everything named _locked runs under TierCore::mu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "tier/board_rows.hh"
#include "tier/dirty_buffer.hh"
#include "tier/flusher.hh"
#include "tier/parts.hh"

namespace tier {

class WriteBehindBuffer {
 public:
  explicit WriteBehindBuffer(const Parts& parts) : p_(parts), flusher_(parts, *this) {}

  // The fast path: the answer at once when the write can be applied now (room, nobody waiting;
  // for DELETE, the cache or the buffer knows the key); nullopt otherwise.
  std::optional<KeyOutcome> try_put(std::string_view key, std::string_view value,
                                    std::uint64_t expires_at_ms);
  std::optional<KeyOutcome> try_del(std::string_view key);
  // The general path (parts.hh, write_locked): applied now, refused, or waiting for room.
  std::optional<KeyOutcome> write_locked(const KeyWrite& w, const Answer& done);

  bool waiting_for_locked(std::string_view key) const;
  bool has_waiting_locked() const { return !waiting_.empty(); }

  RowReservation reserve_row_locked(std::string_view board, std::string_view member);
  void release_row_locked(std::size_t bytes) { reserved_rows_ -= bytes; }
  void board_write_locked(const store::Write& row, std::size_t reserved);

  // Admits waiting writes in FIFO order while they fit (all of them with force), then answers
  // them outside the lock. With a failed or failing store, waiting writes are refused (503).
  void admit_and_answer(std::unique_lock<std::mutex>& lock, bool force);
  // Waiting writes answered 503 at their deadline leave the queue (and free their bodies).
  void drop_timed_out_locked();
  // A reset committed: the dirty writes made up to `version` go, and the store counts as
  // working again.
  void reset_locked(std::uint64_t version);

  DirtyBuffer& dirty() { return dirty_; }
  const DirtyBuffer& dirty() const { return dirty_; }
  Flusher& flusher() { return flusher_; }
  const Flusher& flusher() const { return flusher_; }

 private:
  struct Waiting {  // a write waiting for room under max_dirty
    Kind kind;
    std::string key;
    std::string value;
    std::uint64_t expires_at_ms = 0;
    Answer done;  // claimed when admitted; a write whose deadline answered first is dropped
  };
  bool fits_locked(std::string_view key, std::string_view value) const;
  std::optional<KeyOutcome> queue_waiting_locked(const KeyWrite& w, const Answer& done);
  void pop_waiting_locked();
  KeyOutcome apply_locked(const KeyWrite& w);
  // claimed: the caller has claimed done already (an admitted waiting write).
  std::optional<KeyOutcome> del_locked(std::string_view key, const Answer& done, bool claimed);
  bool delete_known_locked(std::string_view key) const;
  KeyOutcome delete_dirty_locked(std::string_view key);
  void read_for_delete_locked(std::string key, Answer done, bool claimed, int reads);
  KeyOutcome failing_refusal_locked(const char* what);

  const Parts& p_;
  DirtyBuffer dirty_;
  std::deque<Waiting> waiting_;
  std::size_t waiting_bytes_ = 0;
  std::size_t reserved_rows_ = 0;  // board rows admitted, not yet written
  Flusher flusher_;                // last: its thread uses everything above
};

}  // namespace tier
