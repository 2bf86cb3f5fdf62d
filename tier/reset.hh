// reset.hh — POST /reset as a barrier, all or nothing: the store's clear is submitted in order
// with writes; the cache, the dirty writes made before it and the single-flight table are
// emptied only when the clear has committed, and a failed clear changes nothing.
// Invariants:
// - every write submitted before reset() commits before the clear, every later one after it
//   (submitted under mu, store.hh ordering);
// - misses that arrive while a reset is pending wait for it (read_through.hh parks them), so no
//   read started before the clear commits can fill or answer after the 204; the flusher does
//   not flush writes made before a pending reset;
// - a clear of unknown outcome (any error but a refusal) drops nothing from memory, but the
//   cache stops serving what the store may no longer hold, and no key is filled until a reset
//   succeeds.
// Shutdown (StoreTier::shutdown, in reset.cc too) waits for a pending reset before its last
// flush: what was written before the clear must not follow it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "tier/parts.hh"

namespace tier {

class ResetBarrier {
 public:
  explicit ResetBarrier(const Parts& parts) : p_(parts) {}

  // Empties the store (durably), then the cache and the dirty writes made before the call, then
  // done(ok); a failed clear changes nothing: done gets the error. settled(cleared) runs once
  // the store has answered (also after the deadline answered done), before done.
  void reset(Done<store::Status> done, std::function<void(bool cleared)> settled);
  // Empties only the cache (dirty writes stay pending and are flushed).
  void reset_cache();
  // Shutdown: waits (up to timeout) for the pending resets; false if one is still pending.
  bool wait_settled_locked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout);

 private:
  void on_clear(std::uint64_t version, store::Status& s);
  void apply_locked(std::uint64_t version);

  const Parts& p_;
  std::condition_variable resets_done_;
};

}  // namespace tier
