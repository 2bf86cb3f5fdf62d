// write_through.cc — see write_through.hh.
#include "tier/write_through.hh"

#include "tier/conditional_writes.hh"

namespace tier {

std::optional<KeyOutcome> WriteThrough::admit_locked(std::size_t bytes) {
  // What waits on the store is bounded like write-behind's dirty data: a store that stops
  // answering must not make the server hold every write sent meanwhile (a request answered 503
  // at its deadline leaves its write queued in the store).
  const std::size_t max = p_.core.options.max_dirty;
  if (bytes_ > 0 && bytes_ + bytes > max) {
    return p_.core.refusal_locked("store backlog full: " + std::to_string(bytes_) +
                                  " bytes of writes wait on the store (--max-dirty " +
                                  std::to_string(max) + ")");
  }
  bytes_ += bytes;
  return std::nullopt;
}

std::optional<KeyOutcome> WriteThrough::write_locked(const KeyWrite& kw, const Answer& done) {
  const std::string_view key = kw.key;
  Write w{kw.kind, nullptr, false, dirty_size(key, kw.value) + kOpOverhead};
  if (auto full = admit_locked(w.bytes)) {  // nothing counted in
    if (!done.claim()) return std::nullopt;
    return full;
  }
  w.entry = &p_.keys.entry_locked(key);
  KeyState& state = w.entry->second;
  // A key in the cache with no write of it pending is in the store too (the cache holds only
  // committed writes and fills), so the store need not look it up: ask only about the others.
  const bool pending = state.writing > 0;
  w.want_existed = pending || !p_.core.cache.get(key, [](std::string_view) {});
  ++state.writing;
  p_.keys.bump_locked(state);
  std::unique_ptr<Record> record = take_record_locked();
  record->write = w;
  record->done = done;
  Record* const in_flight = record.release();  // back in on_done
  const store::WriteTicket ticket =
      p_.core.store->write(batch_locked(kw, w.want_existed),
                           [this, in_flight](store::WriteResult r) { on_done(in_flight, r); });
  done.set_ticket(ticket);
  return std::nullopt;
}

std::unique_ptr<WriteThrough::Record> WriteThrough::take_record_locked() {
  if (spare_records_.empty()) return std::make_unique<Record>();
  std::unique_ptr<Record> record = std::move(spare_records_.back());
  spare_records_.pop_back();
  return record;
}

// The store's answer to a write (on its completer thread, in commit order).
void WriteThrough::on_done(Record* in_flight, store::WriteResult& r) {
  std::unique_ptr<Record> record(in_flight);
  KeyOutcome o;
  DecidedList decided;  // conditional writes that waited for this one
  std::optional<Answer> done;
  {
    std::lock_guard lock(p_.core.mu);
    o = commit_locked(record->write, r, decided);
    recycle_batch_locked(r.batch);
    done = std::move(record->done);
    record->done.reset();
    if (spare_records_.size() < kSpareRecords) spare_records_.push_back(std::move(record));
  }
  (*done)(o);
  p_.conditional.answer(decided);
}

// In commit order: the cache follows the store.
KeyOutcome WriteThrough::commit_locked(const Write& w, const store::WriteResult& r,
                                       DecidedList& decided) {
  bytes_ -= w.bytes;
  // The entry stays while this write counts in `writing`: released last.
  KeyOutcome o = outcome_locked(w, r);
  KeyState& state = w.entry->second;
  --state.writing;
  p_.keys.bump_locked(state);
  if (state.writing == 0) p_.conditional.decide_parked_locked(state, decided);
  p_.keys.erase_if_clean_locked(w.entry->first);
  return o;
}

KeyOutcome WriteThrough::outcome_locked(const Write& w, const store::WriteResult& r) {
  const std::string& key = w.entry->first;
  KeyOutcome o;
  if (!r.status.ok()) {
    o.kind = KeyOutcome::Kind::error;
    o.error = "store write failed: " + r.status.message;
    if (r.status.code != store::Code::abandoned) p_.core.log_error_locked(o.error);
    if (!refused_unapplied(r.status.code)) {
      p_.keys.mark_unknown_locked(key);
      o.error += "; the outcome is unknown (the key is read from the store until it is written)";
    }
    return o;
  }
  p_.keys.clear_unknown_locked(key);
  const bool existed = !w.want_existed || (!r.existed.empty() && r.existed[0]);
  cache::Cache& cache = p_.core.cache;
  if (w.kind == Kind::put) {
    // Never leave an older value: without its value back (not the store's contract), when the
    // cache cannot take it, or when a later write of the key is in the store's hands, the key
    // leaves the cache and is read through. That later write may be applied already (one
    // group commit, its callback due after this one): a miss may have read its value, and the
    // cache must not then go back to this one. The last write of the key in flight caches its
    // value: the store holds exactly that then. A pending reset is such a later write of every
    // key (callbacks run in commit order, so its clear was submitted after this write): it may
    // be applied already, a miss may have read the emptied store, and this value must not be
    // served until the clear's callback empties the cache.
    if (r.batch.size() == 1 && w.entry->second.writing == 1 && p_.core.resets_pending == 0) {
      o.version = cache_value(cache, key, r.batch[0].value, r.batch[0].expires_at_ms);
    }
    if (o.version == 0) cache.del(key);
    o.kind = existed ? KeyOutcome::Kind::replaced : KeyOutcome::Kind::created;
  } else {
    cache.del(key);
    o.kind = existed ? KeyOutcome::Kind::deleted : KeyOutcome::Kind::absent;
  }
  return o;
}

// A one-op batch for a key write, from the spares when there is one (its strings' capacity
// reused): the key and the value are copied into it once, nothing else.
std::vector<store::Write> WriteThrough::batch_locked(const KeyWrite& kw, bool want_existed) {
  std::vector<store::Write> batch;
  if (spare_batches_.empty()) {
    batch.resize(1);
  } else {
    batch = std::move(spare_batches_.back());
    spare_batches_.pop_back();
  }
  store::Write& w = batch[0];
  w.kind = kw.kind;
  w.key.assign(kw.key);
  w.value.assign(kw.kind == Kind::put ? kw.value : std::string_view());
  w.expires_at_ms = kw.kind == Kind::put ? kw.expires_at_ms : 0;
  w.want_existed = want_existed;
  return batch;
}

// A committed batch the store handed back: kept as a spare if it is one key write of modest
// size, and there are not many spares already.
void WriteThrough::recycle_batch_locked(std::vector<store::Write>& batch) {
  constexpr std::size_t kSpareValueBytes = 4096;
  if (batch.size() != 1 || spare_batches_.size() >= kSpareBatches) return;
  const store::Write& w = batch[0];
  if (w.value.capacity() > kSpareValueBytes || !w.member.empty()) return;
  spare_batches_.push_back(std::move(batch));
}

void WriteThrough::board_write_locked(store::Write row, std::size_t bytes, Done<KeyOutcome> done) {
  TierCore& core = p_.core;
  const Answer answer = core.deadline.arm(std::move(done), core.timeout_outcome);
  std::vector<store::Write> batch;
  batch.push_back(std::move(row));
  core.store->write(std::move(batch), [this, bytes, answer](store::WriteResult r) {
    KeyOutcome o{KeyOutcome::Kind::replaced, {}};
    {
      std::lock_guard lock(p_.core.mu);
      bytes_ -= bytes;
      if (!r.status.ok()) {
        o = KeyOutcome{KeyOutcome::Kind::error, "store write failed: " + r.status.message};
        p_.core.log_error_locked(o.error);
      }
    }
    answer(o);
  });
}

}  // namespace tier
