// store_tier.cc — see store_tier.hh.
#include "server/store_tier.hh"

#include <future>
#include <iostream>

namespace server {

using Kind = store::Write::Kind;

namespace {

std::size_t dirty_size(std::string_view key, std::string_view value) {
  return key.size() + value.size();
}

// A dirty board row's key (store_tier.hh): [board length][board][member], one string so one
// hash map holds every board's rows.
std::string row_key(std::string_view board, std::string_view member) {
  std::string k;
  k.reserve(1 + board.size() + member.size());
  k.push_back(static_cast<char>(board.size()));  // 1..250
  k.append(board);
  k.append(member);
  return k;
}

std::pair<std::string, std::string> split_row_key(std::string_view key) {
  const std::size_t n = static_cast<unsigned char>(key[0]);
  return {std::string(key.substr(1, n)), std::string(key.substr(1 + n))};
}

std::size_t row_size(std::string_view key) {
  return key.size() + sizeof(double) + sizeof(std::uint64_t);
}

bool stored(cache::SetResult s) {
  return s == cache::SetResult::created || s == cache::SetResult::replaced;
}

std::string timeout_text(std::chrono::milliseconds timeout) {
  return "store timeout: no answer from the store within --store-timeout (" +
         std::to_string(timeout.count()) + "ms)";
}

StoreTier::Lookup timeout_lookup(std::chrono::milliseconds timeout) {
  StoreTier::Lookup l;
  l.kind = StoreTier::Lookup::Kind::error;
  l.error = timeout_text(timeout);
  return l;
}

}  // namespace

StoreTier::StoreTier(cache::Cache& cache, std::unique_ptr<store::Store> store, TierOptions options)
    : cache_(cache), store_(std::move(store)), options_(options), deadline_(options.store_timeout) {
  if (options_.mode == WriteMode::behind) flusher_ = std::thread([this] { flusher_main(); });
}

StoreTier::~StoreTier() {
  shutdown();
}

// --- reads --------------------------------------------------------------------------------------

std::optional<StoreTier::Lookup> StoreTier::lookup(std::string_view key, LookupDone done) {
  std::lock_guard lock(mu_);
  if (options_.mode == WriteMode::behind) {
    if (auto it = dirty_.find(key); it != dirty_.end()) {
      if (it->second.tombstone) return Lookup{};
      return Lookup{Lookup::Kind::found, std::make_shared<const std::string>(it->second.value), {}};
    }
  }
  // Each waiter has its own deadline; the read goes on for the others (and fills the cache).
  LookupDone answer =
      deadline_.arm<Lookup>(std::move(done), timeout_lookup(options_.store_timeout));
  std::string k(key);
  auto [it, inserted] = inflight_.try_emplace(k);
  if (!inserted) {
    it->second->waiters.push_back(std::move(answer));
    return std::nullopt;
  }
  auto entry = std::make_shared<Inflight>();
  entry->waiters.push_back(std::move(answer));
  entry->void_fill = pending_writes_.contains(k);
  it->second = entry;
  store_->read(k, [this, k, entry](store::ReadResult r) {
    Lookup result;
    std::vector<LookupDone> waiters;
    {
      std::lock_guard lock(mu_);
      if (auto it = inflight_.find(k); it != inflight_.end() && it->second == entry) {
        inflight_.erase(it);
      }
      result = on_read_locked(k, r, *entry);
      waiters.swap(entry->waiters);
    }
    for (auto& w : waiters) w(result);
  });
  return std::nullopt;
}

StoreTier::Lookup StoreTier::on_read_locked(const std::string& key, store::ReadResult& r,
                                            const Inflight& entry) {
  Lookup result;
  if (r.status.code == store::Code::not_found) return result;
  if (!r.status.ok()) {
    result.kind = Lookup::Kind::error;
    result.error = "store read failed: " + r.status.message;
    return result;
  }
  result.kind = Lookup::Kind::found;
  result.value = std::make_shared<const std::string>(std::move(r.value));
  // A fill never overwrites a newer write: none was submitted since the read began, none is
  // still uncommitted, and the dirty buffer (newer than the store) does not hold the key.
  if (!entry.void_fill && !pending_writes_.contains(key) && !dirty_.contains(key)) {
    if (stored(cache_.set(key, *result.value))) ++fills_;
  }
  return result;
}

void StoreTier::void_fills_locked(std::string_view key) {
  if (auto it = inflight_.find(key); it != inflight_.end()) it->second->void_fill = true;
}

// --- writes -------------------------------------------------------------------------------------

std::optional<StoreTier::Outcome> StoreTier::try_put(std::string_view key, std::string_view value) {
  if (options_.mode != WriteMode::behind) return std::nullopt;
  std::lock_guard lock(mu_);
  if (!waiting_.empty() || !fits_locked(key, value)) return std::nullopt;
  return apply_dirty_locked(Kind::put, key, value);
}

std::optional<StoreTier::Outcome> StoreTier::try_del(std::string_view key) {
  if (options_.mode != WriteMode::behind) return std::nullopt;
  std::lock_guard lock(mu_);
  if (!waiting_.empty() || !fits_locked(key, {})) return std::nullopt;
  if (auto it = dirty_.find(key); it != dirty_.end()) {
    if (it->second.tombstone) return Outcome{Outcome::Kind::absent, {}};
    return apply_dirty_locked(Kind::del, key, {});
  }
  if (cache_.del(key)) return apply_dirty_locked(Kind::del, key, {});
  return std::nullopt;
}

// A write that may wait on the store is answered by its commit or, at --store-timeout, by a 503
// saying the outcome is unknown; an outcome known at once settles the deadline instead.
std::optional<StoreTier::Outcome> StoreTier::put(std::string_view key, std::string_view value,
                                                 WriteDone done) {
  return write(Kind::put, key, value, std::move(done));
}

std::optional<StoreTier::Outcome> StoreTier::del(std::string_view key, WriteDone done) {
  return write(Kind::del, key, {}, std::move(done));
}

std::optional<StoreTier::Outcome> StoreTier::write(Kind kind, std::string_view key,
                                                   std::string_view value, WriteDone done) {
  const Answer answer = deadline_.arm<Outcome>(std::move(done), timeout_outcome());
  std::lock_guard lock(mu_);
  std::optional<Outcome> now;
  if (options_.mode == WriteMode::through) {
    now = submit_through_locked(kind, key, value, answer);
  } else {
    now = behind_locked(kind, key, value, answer);
  }
  return now && answer.settle() ? now : std::nullopt;
}

// Write-through: the commit may be under way when the deadline answers, so the write may still
// take effect. Write-behind waits on the store only for room in the dirty buffer or for the
// read a DELETE makes, and a write whose deadline answered is then dropped, not applied.
StoreTier::Outcome StoreTier::timeout_outcome() const {
  return Outcome{Outcome::Kind::error,
                 timeout_text(options_.store_timeout) + (options_.mode == WriteMode::through
                                                             ? "; the write may still take effect"
                                                             : "; the write was not applied")};
}

// What waits on the store is bounded like write-behind's dirty data: a store that stops
// answering must not make the server hold every write sent meanwhile (a request answered 503 at
// its deadline leaves its write queued in the store). Counts the bytes in, or refuses.
std::optional<StoreTier::Outcome> StoreTier::admit_through_locked(std::size_t bytes) {
  if (through_bytes_ > 0 && through_bytes_ + bytes > options_.max_dirty) {
    ++write_errors_;
    return Outcome{Outcome::Kind::error, "store backlog full: " + std::to_string(through_bytes_) +
                                             " bytes of writes wait on the store (--max-dirty " +
                                             std::to_string(options_.max_dirty) + ")"};
  }
  through_bytes_ += bytes;
  return std::nullopt;
}

// --- board rows ---------------------------------------------------------------------------------

std::optional<StoreTier::Outcome> StoreTier::board_write(store::Write row, WriteDone done) {
  std::lock_guard lock(mu_);
  if (options_.mode == WriteMode::behind) {
    // Like a key write with room in the buffer, accepted even if the store has failed: it stays
    // dirty (and is counted as lost at shutdown) rather than refused.
    board_behind_locked(row);
    return Outcome{Outcome::Kind::replaced, {}};
  }
  // Write-through: bounded like key writes, answered by the commit or at --store-timeout.
  const std::size_t bytes = row.key.size() + row.member.size() + 16;
  if (auto full = admit_through_locked(bytes)) return full;
  const Answer answer = deadline_.arm<Outcome>(std::move(done), timeout_outcome());
  std::vector<store::Write> batch;
  batch.push_back(std::move(row));
  store_->write(std::move(batch), [this, bytes, answer](store::WriteResult r) {
    Outcome o{Outcome::Kind::replaced, {}};
    {
      std::lock_guard lock(mu_);
      through_bytes_ -= bytes;
      if (!r.status.ok()) {
        o = Outcome{Outcome::Kind::error, "store write failed: " + r.status.message};
        log_error_locked(o.error);
      }
    }
    answer(o);
  });
  return std::nullopt;
}

void StoreTier::board_behind_locked(const store::Write& row) {
  if (nothing_dirty_locked()) dirty_since_ = std::chrono::steady_clock::now();
  const std::uint64_t version = ++dirty_version_;
  if (row.kind == Kind::board_drop) {
    // The drop supersedes every dirty row of the board (a scan: drops are rare).
    const std::string prefix = row_key(row.key, {});
    for (auto it = dirty_rows_.begin(); it != dirty_rows_.end();) {
      if (it->first.starts_with(prefix)) {  // the length byte makes the prefix the board's
        dirty_bytes_ -= row_size(it->first);
        it = dirty_rows_.erase(it);
      } else {
        ++it;
      }
    }
    auto [it, inserted] = dirty_drops_.try_emplace(row.key, version);
    if (inserted) dirty_bytes_ += row.key.size();
    it->second = version;
    return;
  }
  std::string key = row_key(row.key, row.member);
  const std::size_t size = row_size(key);
  auto [it, inserted] = dirty_rows_.try_emplace(std::move(key));
  if (inserted) dirty_bytes_ += size;
  DirtyRow& d = it->second;
  d.tombstone = row.kind == Kind::board_remove;
  d.score = row.score;
  d.seq = row.seq;
  d.version = version;
}

// Write-through: the store decides (existed) and the cache follows once the commit succeeded.
// Every cache entry came from a committed write or a fill, so the store alone says whether a
// key existed.
std::optional<StoreTier::Outcome> StoreTier::submit_through_locked(Kind kind, std::string_view key,
                                                                   std::string_view value,
                                                                   WriteDone done) {
  const std::size_t bytes = dirty_size(key, value);
  if (auto full = admit_through_locked(bytes)) return full;
  std::string k(key);
  void_fills_locked(k);
  // A key in the cache with no write of it pending is in the store too (the cache holds only
  // committed writes and fills), so the store need not look it up: ask only about the others.
  const bool pending = pending_writes_.contains(k);
  const bool want_existed = pending || !cache_.get(k, [](std::string_view) {});
  ++pending_writes_[k];
  std::shared_ptr<const std::string> v;
  if (kind == Kind::put) v = std::make_shared<const std::string>(value);
  std::vector<store::Write> batch(1);
  batch[0].kind = kind;
  batch[0].key = k;
  if (v) batch[0].value = *v;
  batch[0].want_existed = want_existed;
  store_->write(std::move(batch), [this, k = std::move(k), epoch = epoch_, kind, v, want_existed,
                                   bytes, done = std::move(done)](store::WriteResult r) {
    Outcome o;
    {
      std::lock_guard lock(mu_);
      through_bytes_ -= bytes;
      if (auto it = pending_writes_.find(k); it != pending_writes_.end() && --it->second == 0) {
        pending_writes_.erase(it);
      }
      if (r.status.ok()) {
        const bool existed = !want_existed || (!r.existed.empty() && r.existed[0]);
        // Applied in commit order (the store runs write callbacks in commit order); a reset
        // since the submission voids the cache update (the store was cleared after it).
        if (epoch == epoch_) {
          if (kind == Kind::put) {
            if (!stored(cache_.set(k, *v))) cache_.del(k);  // never leave an older value cached
          } else {
            cache_.del(k);
          }
        }
        if (kind == Kind::put) {
          o.kind = existed ? Outcome::Kind::replaced : Outcome::Kind::created;
        } else {
          o.kind = existed ? Outcome::Kind::deleted : Outcome::Kind::absent;
        }
      } else {
        o.kind = Outcome::Kind::error;
        o.error = "store write failed: " + r.status.message;
        log_error_locked(o.error);
      }
    }
    done(o);
  });
  return std::nullopt;
}

// Write-behind: into the cache and the dirty buffer at once when there is room and nobody is
// waiting (FIFO), else queued for the flusher to admit.
std::optional<StoreTier::Outcome> StoreTier::behind_locked(Kind kind, std::string_view key,
                                                           std::string_view value,
                                                           const Answer& done) {
  if (waiting_.empty() && fits_locked(key, value)) {
    return kind == Kind::put ? apply_dirty_locked(Kind::put, key, value)
                             : del_behind_locked(key, done, false);
  }
  if (store_failed_locked()) {
    ++write_errors_;
    return Outcome{Outcome::Kind::error,
                   "dirty buffer full and the store failed: " + store_->stats().last_error};
  }
  waiting_.push_back(Waiting{kind, std::string(key), std::string(value), done});
  flusher_wake_.notify_one();
  return std::nullopt;
}

bool StoreTier::fits_locked(std::string_view key, std::string_view value) const {
  std::size_t freed = 0;
  if (auto it = dirty_.find(key); it != dirty_.end()) {
    freed = dirty_size(key, it->second.value);
  }
  const std::size_t need = dirty_size(key, value);
  return dirty_bytes_ - freed + need <= options_.max_dirty;
}

bool StoreTier::store_failed_locked() const {
  return store_->stats().failed;
}

StoreTier::Outcome StoreTier::apply_dirty_locked(Kind kind, std::string_view key,
                                                 std::string_view value) {
  std::string k(key);
  void_fills_locked(k);
  if (nothing_dirty_locked()) dirty_since_ = std::chrono::steady_clock::now();
  auto [it, inserted] = dirty_.try_emplace(k);
  Dirty& d = it->second;
  const bool had_value = !inserted && !d.tombstone;
  if (!inserted) dirty_bytes_ -= dirty_size(k, d.value);
  d.tombstone = kind == Kind::del;
  d.value.assign(d.tombstone ? std::string_view() : value);
  d.version = ++dirty_version_;
  dirty_bytes_ += dirty_size(k, d.value);
  Outcome o;
  if (kind == Kind::del) {
    cache_.del(k);
    o.kind = Outcome::Kind::deleted;
    return o;
  }
  // The dirty buffer holds the write whatever the cache does with it, so it is never lost to
  // eviction (or to a cache that refuses it): reads consult the buffer before the store.
  const cache::SetResult set = cache_.set(k, value);
  if (!stored(set)) cache_.del(k);
  o.kind = (had_value || set == cache::SetResult::replaced) ? Outcome::Kind::replaced
                                                            : Outcome::Kind::created;
  return o;
}

// A write-behind DELETE answers 404 only if the key is in neither the cache, the dirty buffer
// nor the store; the store is asked only when the first two do not know.
std::optional<StoreTier::Outcome> StoreTier::del_behind_locked(std::string_view key,
                                                               const Answer& done, bool claimed) {
  std::string k(key);
  if (auto it = dirty_.find(k); it != dirty_.end()) {
    if (it->second.tombstone) return Outcome{Outcome::Kind::absent, {}};
    return apply_dirty_locked(Kind::del, key, {});
  }
  if (cache_.del(k)) return apply_dirty_locked(Kind::del, key, {});
  store_->read(k, [this, k, done, claimed](store::ReadResult r) {
    Outcome o;
    {
      std::lock_guard lock(mu_);
      if (!claimed && !done.claim()) return;  // answered 503 at its deadline: not applied
      if (r.status.ok()) {
        o = apply_dirty_locked(Kind::del, k, {});
      } else if (r.status.code == store::Code::not_found) {
        o.kind = Outcome::Kind::absent;
      } else {
        o.kind = Outcome::Kind::error;
        o.error = "store read failed: " + r.status.message;
      }
    }
    done.deliver(o);
  });
  return std::nullopt;
}

// One line on stderr per distinct error, not one per failed request.
void StoreTier::log_error_locked(const std::string& message) {
  if (message == last_logged_error_) return;
  last_logged_error_ = message;
  std::cerr << "cache_server: " << message << std::endl;
}

// --- reset --------------------------------------------------------------------------------------

void StoreTier::reset(ResetDone done) {
  std::lock_guard lock(mu_);
  ++epoch_;
  for (auto& [key, entry] : inflight_) entry->void_fill = true;
  inflight_.clear();  // later misses start fresh reads, ordered after the clear below
  dirty_.clear();
  dirty_rows_.clear();
  dirty_drops_.clear();
  dirty_bytes_ = 0;
  cache_.reset();
  // Under mu_: every write submitted before this point is committed before the clear, and
  // every later one after it (store.hh ordering).
  auto answer = deadline_.arm<store::Status>(
      std::move(done),
      store::Status{store::Code::io_error,
                    timeout_text(options_.store_timeout) + "; the reset may still take effect"});
  store_->clear([answer](store::Status s) { answer(s); });
}

void StoreTier::reset_cache() {
  std::lock_guard lock(mu_);
  cache_.reset();
}

// --- write-behind flusher -----------------------------------------------------------------------

void StoreTier::flusher_main() {
  std::unique_lock lock(mu_);
  // A write waits at most one period for the next flush, plus the commit: a quarter of the
  // interval leaves the rest as slack for a late wake-up on a loaded machine and a slow fsync.
  const auto period = std::max(options_.flush_interval / 4, std::chrono::milliseconds(1));
  while (!stopping_) {
    // The next flush is due one period after the oldest write still dirty, not one period after
    // the last flush ended: when flushes are slow (a loaded machine, a slow commit), a write
    // made during one then waits for at most the rest of a period, not a whole one more.
    const auto due =
        nothing_dirty_locked() ? std::chrono::steady_clock::now() + period : dirty_since_ + period;
    flusher_wake_.wait_until(lock, due, [this] {
      return stopping_ || !waiting_.empty() || dirty_bytes_ >= options_.max_dirty / 2;
    });
    if (stopping_) break;
    drop_timed_out_waiting_locked();
    if (!nothing_dirty_locked()) {
      // A failed flush (the store failed, or a transient error) is retried after a full
      // period, not at once: the dirty data is kept either way.
      if (!flush_once(lock)) flusher_wake_.wait_for(lock, period, [this] { return stopping_; });
    } else if (!waiting_.empty()) {
      admit_and_answer(lock, false);
    }
  }
}

// Waiting writes answered 503 at their deadline leave the queue (and free their bodies) within
// a flusher period, not when room appears.
void StoreTier::drop_timed_out_waiting_locked() {
  std::erase_if(waiting_, [](const Waiting& w) { return w.done.answered(); });
}

bool StoreTier::flush_once(std::unique_lock<std::mutex>& lock, bool bounded) {
  const auto snapshot_at = std::chrono::steady_clock::now();
  std::vector<store::Write> batch;
  std::vector<std::pair<std::string, std::uint64_t>> versions, row_versions, drop_versions;
  batch.reserve(dirty_.size() + dirty_drops_.size() + dirty_rows_.size());
  versions.reserve(dirty_.size());
  for (const auto& [key, d] : dirty_) {
    store::Write w;
    w.kind = d.tombstone ? Kind::del : Kind::put;
    w.key = key;
    w.value = d.value;
    batch.push_back(std::move(w));
    versions.emplace_back(key, d.version);
  }
  // Drops before rows: a row still dirty after its board's drop was written after the drop.
  for (const auto& [board, version] : dirty_drops_) {
    batch.push_back(store::Write::board_drop_rows(board));
    drop_versions.emplace_back(board, version);
  }
  for (const auto& [key, row] : dirty_rows_) {
    const auto [board, member] = split_row_key(key);
    batch.push_back(row.tombstone ? store::Write::board_remove_row(board, member)
                                  : store::Write::board_set_row(board, member, row.score, row.seq));
    row_versions.emplace_back(key, row.version);
  }
  std::promise<store::WriteResult> committed;
  auto result = committed.get_future();
  store_->write(std::move(batch),
                [&committed](store::WriteResult r) { committed.set_value(std::move(r)); });
  lock.unlock();
  // A store that does not answer must not hold the process's exit: once shutdown has begun,
  // the flush gets --store-timeout, then the store is closed, which fails the commit in flight.
  auto started = std::chrono::steady_clock::now();
  bool was_shutting_down = bounded;
  while (result.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) {
    if (!was_shutting_down && shutting_down_.load()) {
      was_shutting_down = true;
      started = std::chrono::steady_clock::now();
    }
    if (was_shutting_down && std::chrono::steady_clock::now() - started > options_.store_timeout) {
      store_->close();
      break;
    }
  }
  const store::WriteResult r = result.get();
  lock.lock();
  if (r.status.ok()) {
    for (const auto& [key, version] : versions) {
      auto it = dirty_.find(key);
      if (it != dirty_.end() && it->second.version == version) {  // not rewritten meanwhile
        dirty_bytes_ -= dirty_size(key, it->second.value);
        dirty_.erase(it);
      }
    }
    for (const auto& [key, version] : row_versions) {
      auto it = dirty_rows_.find(key);
      if (it != dirty_rows_.end() && it->second.version == version) {
        dirty_bytes_ -= row_size(key);
        dirty_rows_.erase(it);
      }
    }
    for (const auto& [board, version] : drop_versions) {
      auto it = dirty_drops_.find(board);
      if (it != dirty_drops_.end() && it->second == version) {
        dirty_bytes_ -= board.size();
        dirty_drops_.erase(it);
      }
    }
    // What is left was written after the snapshot.
    if (!nothing_dirty_locked()) dirty_since_ = std::max(dirty_since_, snapshot_at);
  } else {
    log_error_locked("write-behind flush failed, dirty writes kept: " + r.status.message);
  }
  admit_and_answer(lock, false);
  return r.status.ok();
}

// Admits waiting writes in FIFO order while they fit (all of them with force), then answers
// them outside the lock. With a failed store, waiting writes are refused (503), not kept.
void StoreTier::admit_and_answer(std::unique_lock<std::mutex>& lock, bool force) {
  std::vector<std::pair<Answer, Outcome>> ready;
  const bool failed = store_failed_locked();
  while (!waiting_.empty()) {
    Waiting& w = waiting_.front();
    if (failed && !force) {
      if (w.done.claim()) {
        ++write_errors_;
        ready.emplace_back(
            w.done, Outcome{Outcome::Kind::error, "dirty buffer full and the store failed: " +
                                                      store_->stats().last_error});
      }
    } else if (force || fits_locked(w.key, w.value)) {
      if (!w.done.claim()) {
        // Answered 503 at its deadline: dropped, never applied.
      } else if (w.kind == Kind::put) {
        ready.emplace_back(w.done, apply_dirty_locked(Kind::put, w.key, w.value));
      } else if (auto o = del_behind_locked(w.key, w.done, true)) {
        ready.emplace_back(w.done, *o);
      }
    } else {
      break;
    }
    waiting_.pop_front();
  }
  if (ready.empty()) return;
  lock.unlock();
  for (auto& [answer, outcome] : ready) answer.deliver(outcome);
  lock.lock();
}

std::size_t StoreTier::shutdown() {
  std::unique_lock lock(mu_);
  if (closed_) return 0;
  stopping_ = true;
  shutting_down_.store(true);
  lock.unlock();
  flusher_wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  lock.lock();
  std::size_t lost = 0;
  if (options_.mode == WriteMode::behind) {
    admit_and_answer(lock, true);
    // Bounded: a store that does not answer must not hold the process's exit.
    if (!nothing_dirty_locked()) flush_once(lock, true);
    lost = dirty_.size() + dirty_rows_.size() + dirty_drops_.size();
  }
  closed_ = true;
  lock.unlock();
  store_->close();
  return lost;
}

TierStats StoreTier::stats() const {
  TierStats t;
  t.scheme = store_->scheme();
  t.store = store_->stats();
  std::lock_guard lock(mu_);
  t.dirty_bytes = dirty_bytes_;
  t.dirty_items = dirty_.size() + dirty_rows_.size() + dirty_drops_.size();
  t.readthrough_fills = fills_;
  t.write_errors = write_errors_;
  return t;
}

}  // namespace server
