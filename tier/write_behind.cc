// write_behind.cc — see write_behind.hh.
#include "tier/write_behind.hh"

#include <algorithm>
#include <utility>
#include <vector>

#include "tier/key_table.hh"

namespace tier {

std::optional<KeyOutcome> WriteBehindBuffer::try_put(std::string_view key, std::string_view value,
                                                     std::uint64_t expires_at_ms) {
  std::lock_guard lock(p_.core.mu);
  if (flusher_.failing_locked()) return std::nullopt;
  if (!waiting_.empty() || !fits_locked(key, value)) return std::nullopt;
  return apply_locked({Kind::put, key, value, expires_at_ms});
}

std::optional<KeyOutcome> WriteBehindBuffer::try_del(std::string_view key) {
  std::lock_guard lock(p_.core.mu);
  if (flusher_.failing_locked()) return std::nullopt;
  if (!waiting_.empty() || !fits_locked(key, {})) return std::nullopt;
  if (auto dirty = dirty_.lookup(key)) {
    if (dirty->kind == KeyLookup::Kind::absent) return KeyOutcome{KeyOutcome::Kind::absent, {}};
    return apply_locked({Kind::del, key});
  }
  if (p_.core.cache.del(key)) return apply_locked({Kind::del, key});
  return std::nullopt;
}

// Into the cache and the dirty buffer at once when there is room and nobody is waiting (FIFO),
// else queued for the flusher to admit. A failing store refuses every write.
std::optional<KeyOutcome> WriteBehindBuffer::write_locked(const KeyWrite& w, const Answer& done) {
  if (flusher_.failing_locked()) {
    if (!done.claim()) return std::nullopt;
    return failing_refusal_locked("writes");
  }
  if (waiting_.empty() && fits_locked(w.key, w.value)) {
    if (w.kind == Kind::del) return del_locked(w.key, done, false);
    if (!done.claim()) return std::nullopt;
    return apply_locked(w);
  }
  return queue_waiting_locked(w, done);
}

KeyOutcome WriteBehindBuffer::failing_refusal_locked(const char* what) {
  return p_.core.refusal_locked("the store is failing (" + flusher_.error_locked() +
                                "); write-behind refuses " + what + " until a flush succeeds");
}

bool WriteBehindBuffer::waiting_for_locked(std::string_view key) const {
  return std::any_of(waiting_.begin(), waiting_.end(),
                     [&](const Waiting& w) { return w.key == key; });
}

bool WriteBehindBuffer::fits_locked(std::string_view key, std::string_view value) const {
  return dirty_.fits(key, value, reserved_rows_, p_.core.options.max_dirty);
}

// Waits for room in FIFO order, bounded like the dirty buffer: a store that does not answer
// must not make the server hold every write sent meanwhile.
std::optional<KeyOutcome> WriteBehindBuffer::queue_waiting_locked(const KeyWrite& w,
                                                                  const Answer& done) {
  TierCore& core = p_.core;
  if (core.store_failed_locked()) {
    if (!done.claim()) return std::nullopt;
    return core.refusal_locked("dirty buffer full and the store failed: " +
                               core.store->stats().last_error);
  }
  // Writes answered 503 at their deadline leave the queue now, not when room appears.
  while (!waiting_.empty() && waiting_.front().done.answered()) pop_waiting_locked();
  const std::size_t bytes = dirty_size(w.key, w.value) + kOpOverhead;
  if (waiting_bytes_ > 0 && waiting_bytes_ + bytes > core.options.max_waiting) {
    if (!done.claim()) return std::nullopt;
    return core.refusal_locked("write queue full: " + std::to_string(waiting_bytes_) +
                               " bytes of writes wait for the dirty buffer (--max-inflight " +
                               std::to_string(core.options.max_waiting) + ")");
  }
  waiting_.push_back(
      Waiting{w.kind, std::string(w.key), std::string(w.value), w.expires_at_ms, done});
  waiting_bytes_ += bytes;
  flusher_.wake();
  return std::nullopt;
}

void WriteBehindBuffer::pop_waiting_locked() {
  const Waiting& w = waiting_.front();
  waiting_bytes_ -= dirty_size(w.key, w.value) + kOpOverhead;
  waiting_.pop_front();
}

void WriteBehindBuffer::drop_timed_out_locked() {
  std::erase_if(waiting_, [this](const Waiting& w) {
    if (!w.done.answered()) return false;
    waiting_bytes_ -= dirty_size(w.key, w.value) + kOpOverhead;
    return true;
  });
}

KeyOutcome WriteBehindBuffer::apply_locked(const KeyWrite& w) {
  p_.keys.moved_locked(w.key);
  const bool had_value = dirty_.write(w);
  cache::Cache& cache = p_.core.cache;
  KeyOutcome o;
  if (w.kind == Kind::del) {
    cache.del(w.key);
    o.kind = KeyOutcome::Kind::deleted;
    return o;
  }
  // The dirty buffer holds the write whatever the cache does with it, so it is never lost to
  // eviction (or to a cache that refuses it): reads consult the buffer before the store.
  // (A write that waited for room past its expiry is not cached at all.)
  std::optional<cache::SetResult> set;
  if (const auto ttl = ttl_left(w.expires_at_ms)) {
    cache::WriteOptions options;
    options.ttl = *ttl;
    const cache::Written written = cache.set(w.key, w.value, options);
    set = written.result;
    if (stored(written.result)) o.version = written.version;
  }
  if (!set || !stored(*set)) cache.del(w.key);
  o.kind = (had_value || set == cache::SetResult::replaced) ? KeyOutcome::Kind::replaced
                                                            : KeyOutcome::Kind::created;
  return o;
}

// The store is asked only when the cache and the buffer do not know the key.
std::optional<KeyOutcome> WriteBehindBuffer::del_locked(std::string_view key, const Answer& done,
                                                        bool claimed) {
  if (delete_known_locked(key)) {
    if (!claimed && !done.claim()) return std::nullopt;
    return delete_dirty_locked(key);
  }
  if (!claimed && done.answered()) return std::nullopt;
  read_for_delete_locked(std::string(key), done, claimed, 1);
  return std::nullopt;
}

bool WriteBehindBuffer::delete_known_locked(std::string_view key) const {
  return dirty_.contains(key) || p_.core.cache.get(key, [](std::string_view) {});
}

// A DELETE of a key the buffer or the cache knows: a dirty tombstone answers 404, so of two
// concurrent DELETEs of one key exactly one answers 204.
KeyOutcome WriteBehindBuffer::delete_dirty_locked(std::string_view key) {
  if (auto dirty = dirty_.lookup(key); dirty && dirty->kind == KeyLookup::Kind::absent) {
    return KeyOutcome{KeyOutcome::Kind::absent, {}};
  }
  return apply_locked({Kind::del, key});
}

// Asks the store whether the key exists; the key's entry is kept while the read is out
// (deletes_reading), so its version tells whether anything overtook the read.
void WriteBehindBuffer::read_for_delete_locked(std::string k, Answer done, bool claimed,
                                               int reads) {
  KeyState& state = p_.keys.state_locked(k);
  ++state.deletes_reading;
  const std::uint64_t version = state.version, epoch = p_.core.epoch;
  p_.core.store->read(k, [this, k, done, claimed, reads, version, epoch](store::ReadResult r) {
    KeyOutcome o;
    {
      std::lock_guard lock(p_.core.mu);
      bool unmoved = false;
      if (KeyState* s = p_.keys.find_locked(k); s != nullptr) {
        --s->deletes_reading;
        unmoved = p_.keys.unmoved_locked(k, version, epoch);
        p_.keys.erase_if_clean_locked(k);
      }
      if (!claimed && done.answered()) return;  // answered 503 at its deadline: not applied
      if (!unmoved) {
        if (delete_known_locked(k)) {
          if (!claimed && !done.claim()) return;
          o = delete_dirty_locked(k);
        } else if (reads < kMaxStoreReads) {
          return read_for_delete_locked(k, done, claimed, reads + 1);
        } else if (!claimed && !done.claim()) {
          return;
        } else {
          o = KeyOutcome{KeyOutcome::Kind::error,
                         "the key kept changing while a DELETE looked it up in the store; retry"};
        }
      } else if (!claimed && !done.claim()) {
        return;
      } else if (r.status.ok() && ttl_left(r.expires_at_ms)) {
        o = apply_locked({Kind::del, k});
      } else if (r.status.ok() || r.status.code == store::Code::not_found) {
        o.kind = KeyOutcome::Kind::absent;
      } else {
        o.kind = KeyOutcome::Kind::error;
        o.error = "store read failed: " + r.status.message;
      }
    }
    done.deliver(o);
  });
}

RowReservation WriteBehindBuffer::reserve_row_locked(std::string_view board,
                                                     std::string_view member) {
  if (flusher_.failing_locked()) return {0, failing_refusal_locked("board changes")};
  // What the row can add to the dirty buffer: nothing if it is there.
  const std::size_t bytes = dirty_.row_growth(board, member);
  const std::size_t max = p_.core.options.max_dirty;
  if (bytes > 0 && dirty_.bytes() + reserved_rows_ + bytes > max) {
    // A board change cannot wait for room as a key write does (it holds the board's lock).
    return {0,
            p_.core.refusal_locked("dirty buffer full: " + std::to_string(dirty_.bytes()) +
                                   " bytes wait to be flushed (--max-dirty " + std::to_string(max) +
                                   "); board changes are refused until a flush makes room")};
  }
  reserved_rows_ += bytes;
  return {bytes, std::nullopt};
}

void WriteBehindBuffer::board_write_locked(const store::Write& row, std::size_t reserved) {
  reserved_rows_ -= reserved;
  dirty_.write_row(row);
}

void WriteBehindBuffer::admit_and_answer(std::unique_lock<std::mutex>& lock, bool force) {
  TierCore& core = p_.core;
  std::vector<std::pair<Answer, KeyOutcome>> ready;
  const bool failed = flusher_.failing_locked() || core.store_failed_locked();
  while (!waiting_.empty()) {
    Waiting& w = waiting_.front();
    if (failed && !force) {
      if (w.done.claim()) {
        const std::string why =
            flusher_.failing_locked() ? flusher_.error_locked() : core.store->stats().last_error;
        ready.emplace_back(w.done,
                           core.refusal_locked("dirty buffer full and the store failed: " + why));
      }
    } else if (force || fits_locked(w.key, w.value)) {
      if (!w.done.claim()) {
        // Answered 503 at its deadline: dropped, never applied.
      } else if (w.kind == Kind::put) {
        ready.emplace_back(w.done, apply_locked({Kind::put, w.key, w.value, w.expires_at_ms}));
      } else if (auto o = del_locked(w.key, w.done, true)) {
        ready.emplace_back(w.done, *o);
      }
    } else {
      break;
    }
    pop_waiting_locked();
  }
  if (ready.empty()) return;
  lock.unlock();
  for (auto& [answer, outcome] : ready) answer.deliver(outcome);
  lock.lock();
}

void WriteBehindBuffer::reset_locked(std::uint64_t version) {
  dirty_.erase_up_to(version);
  flusher_.clear_failing_locked();  // the store just committed
}

}  // namespace tier
