// reset.cc — see reset.hh; also StoreTier::shutdown, the barrier's last use.
#include "tier/reset.hh"

#include "tier/key_table.hh"
#include "tier/read_through.hh"
#include "tier/tier.hh"
#include "tier/write_behind.hh"

namespace tier {

void ResetBarrier::reset(Done<store::Status> done, std::function<void(bool)> settled) {
  TierCore& core = p_.core;
  auto answer = core.deadline.arm(std::move(done), core.reset_timeout);
  std::lock_guard lock(core.mu);
  ++core.resets_pending;
  // Dirty writes up to `version` were made before the reset; the flusher keeps them back until
  // the clear has completed.
  const std::uint64_t version = p_.behind.dirty().version();
  core.store->clear([this, version, answer, settled = std::move(settled)](store::Status s) {
    on_clear(version, s);
    if (settled) settled(s.ok());
    answer(s);
  });
}

// A clear refused outright (a failed or closed store) changed nothing. Any other error may
// have emptied the store anyway (a lost connection after COMMIT, a failed fsync whose record a
// restart replays).
void ResetBarrier::on_clear(std::uint64_t version, store::Status& s) {
  TierCore& core = p_.core;
  ReadThrough::Ready ready;
  {
    std::lock_guard lock(core.mu);
    --core.resets_pending;
    if (s.ok()) {
      apply_locked(version);
    } else if (refused_unapplied(s.code)) {
      s.message = "reset failed, nothing was emptied: " + s.message;
    } else {
      core.cache.reset();
      ++core.epoch;  // no read under way fills
      p_.keys.all_unknown_locked();
      s.message =
          "reset failed, its outcome is unknown (the store may have been emptied; no "
          "dirty write or board was dropped, and keys are read from the store): " +
          s.message;
    }
    if (core.resets_pending == 0) ready = p_.reads.unpark_locked();
  }
  resets_done_.notify_all();
  p_.behind.flusher().wake();
  for (auto& [answer, lookup] : ready) answer(lookup);
}

// The clear committed: what was written before it goes from memory too. Runs in commit order
// (a clear completes like a write), so a write-through write committed after the clear updates
// the cache after this. What dirty writes remain were made after the reset: they go back into
// the cache lazily (reads consult the dirty buffer first).
void ResetBarrier::apply_locked(std::uint64_t version) {
  ++p_.core.epoch;  // no read under way fills
  p_.keys.reset_locked();
  p_.behind.reset_locked(version);
  p_.core.cache.reset();
}

void ResetBarrier::reset_cache() {
  std::lock_guard lock(p_.core.mu);
  p_.core.cache.reset();
}

bool ResetBarrier::wait_settled_locked(std::unique_lock<std::mutex>& lock,
                                       std::chrono::milliseconds timeout) {
  return resets_done_.wait_for(lock, timeout, [this] { return p_.core.resets_pending == 0; });
}

std::size_t StoreTier::shutdown() {
  std::unique_lock lock(core_.mu);
  if (core_.closed) return 0;
  core_.stopping = true;
  core_.shutting_down.store(true);
  lock.unlock();
  behind_.flusher().stop();
  lock.lock();
  std::size_t lost = 0;
  if (!core_.through()) {
    behind_.admit_and_answer(lock, true);
    // A pending reset's clear goes first: what was written before it must not follow it.
    if (barrier_.wait_settled_locked(lock, core_.options.store_timeout)) {
      behind_.flusher().final_flush_locked(lock);
    }
    lost = behind_.dirty().items();
  }
  core_.closed = true;
  lock.unlock();
  core_.close_store_bounded();
  return lost;
}

}  // namespace tier
