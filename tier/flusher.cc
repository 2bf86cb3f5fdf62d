// flusher.cc — see flusher.hh.
#include "tier/flusher.hh"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "tier/write_behind.hh"

namespace tier {

void Flusher::start() {
  if (p_.core.options.flush_interval.count() > 0) thread_ = std::thread([this] { main(); });
}

void Flusher::stop() {
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Flusher::main() {
  TierCore& core = p_.core;
  const DirtyBuffer& dirty = buffer_.dirty();
  std::unique_lock lock(core.mu);
  // A write waits at most one period for the next flush, plus the commit: a quarter of the
  // interval leaves the rest as slack for a late wake-up on a loaded machine and a slow fsync.
  const auto period = std::max(core.options.flush_interval / 4, std::chrono::milliseconds(1));
  while (!core.stopping) {
    // The next flush is due one period after the oldest write still dirty, not one period after
    // the last flush ended: when flushes are slow (a loaded machine, a slow commit), a write
    // made during one then waits for at most the rest of a period, not a whole one more.
    const auto due =
        dirty.empty() ? std::chrono::steady_clock::now() + period : dirty.since() + period;
    wake_.wait_until(lock, due, [&] {
      return core.stopping || buffer_.has_waiting_locked() ||
             dirty.bytes() >= core.options.max_dirty / 2;
    });
    if (core.stopping) break;
    buffer_.drop_timed_out_locked();
    if (core.resets_pending > 0) {
      // Dirty writes made before a pending reset must not reach the store after its clear.
      wake_.wait(lock, [&] { return core.stopping || core.resets_pending == 0; });
    } else if (!dirty.empty()) {
      // A failed flush (the store failed, or a transient error) is retried after a full
      // period, not at once: the dirty data is kept either way.
      if (!flush_once(lock)) wake_.wait_for(lock, period, [&] { return core.stopping; });
      if (core.stopping) break;
    } else if (buffer_.has_waiting_locked()) {
      buffer_.admit_and_answer(lock, false);
    }
  }
}

void Flusher::step() {
  std::unique_lock lock(p_.core.mu);
  buffer_.drop_timed_out_locked();
  if (p_.core.resets_pending > 0 || in_flight_) return;
  if (!buffer_.dirty().empty()) {
    start_flush_locked();
  } else if (buffer_.has_waiting_locked()) {
    buffer_.admit_and_answer(lock, false);
  }
}

// Submits one flush of the dirty buffer; its commit's callback, on the store's completer
// thread, finishes it.
void Flusher::start_flush_locked() {
  in_flight_ = true;
  ++started_;
  auto f = std::make_shared<DirtyBuffer::Snapshot>(buffer_.dirty().snapshot());
  std::vector<store::Write> batch = std::move(f->batch);
  p_.core.store->write(std::move(batch), [this, f, at = std::chrono::steady_clock::now()](
                                             store::WriteResult r) {
    std::unique_lock lock(p_.core.mu);
    if (r.status.ok()) {
      buffer_.dirty().forget(*f, at);
      failing_ = false;
    } else {
      // From now on key writes answer 503 until a flush succeeds: what the store refuses
      // now could never become durable.
      failing_ = true;
      error_ = r.status.message;
      error_code_ = r.status.code;
      p_.core.log_error_locked("write-behind flush failed, dirty writes kept: " + r.status.message);
    }
    in_flight_ = false;
    ++done_;
    flushed_.notify_all();
    buffer_.admit_and_answer(lock, false);
  });
}

bool Flusher::flush_once(std::unique_lock<std::mutex>& lock, bool bounded) {
  if (in_flight_) wait_flushed(lock, started_, bounded);
  if (p_.core.store_abandoned.load()) return false;
  start_flush_locked();
  const std::uint64_t mine = started_;
  wait_flushed(lock, mine, bounded);
  return done_ >= mine && !failing_;
}

// Waits for flush number n to finish.
void Flusher::wait_flushed(std::unique_lock<std::mutex>& lock, std::uint64_t n, bool bounded) {
  TierCore& core = p_.core;
  auto started = std::chrono::steady_clock::now();
  bool was_shutting_down = bounded;
  while (done_ < n) {
    flushed_.wait_for(lock, std::chrono::milliseconds(20));
    if (!was_shutting_down && core.shutting_down.load()) {
      was_shutting_down = true;
      started = std::chrono::steady_clock::now();
    }
    if (done_ < n && was_shutting_down &&
        std::chrono::steady_clock::now() - started > core.options.store_timeout) {
      lock.unlock();
      core.close_store_bounded();  // completes the commit in flight (failed), which takes mu
      lock.lock();
      if (core.store_abandoned.load()) return;  // it never will: a sync is stuck
      flushed_.wait(lock, [&] { return done_ >= n; });
    }
  }
}

// A store that fails it may be reconnecting (PostgreSQL restarted): it is tried again for up to
// --store-timeout. Only a store that may come back is waited for: not a failed or closed one.
void Flusher::final_flush_locked(std::unique_lock<std::mutex>& lock) {
  TierCore& core = p_.core;
  const auto until = std::chrono::steady_clock::now() + core.options.store_timeout;
  while (!buffer_.dirty().empty() && !flush_once(lock, true) &&
         std::chrono::steady_clock::now() < until &&
         (error_code_ == store::Code::unavailable || error_code_ == store::Code::io_error) &&
         !core.store_failed_locked() && !core.store_abandoned.load()) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lock.lock();
  }
}

}  // namespace tier
