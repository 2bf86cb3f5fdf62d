// store_tier.cc — see store_tier.hh.
#include "server/store_tier.hh"

#include <algorithm>

#include <future>

#include <iostream>
#include <utility>

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

// The store refused the op before applying any of it, so its outcome is known: not applied.
// Any other error (a lost connection after COMMIT, a failed fsync) may have applied it.
bool refused_unapplied(store::Code c) {
  return c == store::Code::failed || c == store::Code::closed || c == store::Code::unavailable ||
         c == store::Code::abandoned;
}

// The cache's TTL for a value that expires at expires_at_ms (0: never, a zero TTL), or nullopt
// once it has expired.
std::optional<std::chrono::milliseconds> ttl_left(std::uint64_t expires_at_ms) {
  const auto left = store::time_left(expires_at_ms, store::unix_now_ms());
  if (!left) return std::chrono::milliseconds(0);
  if (left->count() == 0) return std::nullopt;
  return left;
}

// Puts a value the store holds (or will) into the cache with the time it has left; an expired
// one is not cached. The cache item's new version (its ETag), or 0 when the cache does not hold
// it.
std::uint64_t cache_value(cache::Cache& cache, std::string_view key, std::string_view value,
                          std::uint64_t expires_at_ms) {
  const auto ttl = ttl_left(expires_at_ms);
  if (!ttl) return 0;
  cache::WriteOptions options;
  options.ttl = *ttl;
  const cache::Written w = cache.set(key, value, options);
  return stored(w.result) ? w.version : 0;
}

StoreTier::Lookup timeout_lookup(std::chrono::milliseconds timeout) {
  StoreTier::Lookup l;
  l.kind = StoreTier::Lookup::Kind::error;
  l.error = timeout_text(timeout);
  return l;
}

}  // namespace

StoreTier::StoreTier(cache::Cache& cache, std::unique_ptr<store::Store> store, TierOptions options)
    : cache_(cache),
      store_(std::move(store)),
      options_(options),
      timeout_lookup_(timeout_lookup(options.store_timeout)),
      timeout_outcome_(timeout_outcome()),
      reset_timeout_(reset_timeout_status()),
      deadline_(options.store_timeout, [this](std::uint64_t ticket) { store_->abandon(ticket); }) {
  if (options_.mode == WriteMode::behind && options_.flush_interval.count() > 0) {
    flusher_ = std::thread([this] { flusher_main(); });
  }
}

StoreTier::~StoreTier() {
  shutdown();
  if (store_abandoned_.load()) (void)store_.release();  // its closer thread may still be inside
}

// A conditional write waiting for its decision (write_if, below).
struct StoreTier::CondWrite {
  Kind kind;
  std::string key, value;
  std::uint64_t expires_at_ms = 0;
  Preconditions preconditions;
  // The request's answer under its own deadline, armed at write_if with hand_back (an outcome
  // settled when the write is applied is delivered through it): the decision, the store read it
  // may make and the write once applied all run within one --store-timeout.
  Answer done;
  int reads = 0;  // store reads made for it (kMaxConditionReads)
  // Its key and body (+ kOpOverhead), counted in StoreTier::read_bytes_ from write_if until it
  // is decided or dropped: while it waits on the store (parked behind a commit, or on an
  // existence read) its body stays here, also after its deadline answered 503.
  std::size_t charged = 0;
  KeyWrite write() const { return {kind, key, value, expires_at_ms}; }
};

// --- reads --------------------------------------------------------------------------------------

std::optional<StoreTier::Lookup> StoreTier::lookup(std::string_view key, LookupDone done) {
  std::lock_guard lock(mu_);
  if (resets_pending_ == 0 && options_.mode == WriteMode::behind) {
    if (auto it = dirty_.find(key); it != dirty_.end()) return dirty_lookup(it->second);
  }
  const std::size_t cost = key.size() + kOpOverhead;
  if (auto full = admit_read_locked(cost)) return Lookup{Lookup::Kind::error, {}, std::move(*full)};
  // Each waiter has its own deadline; the read goes on for the others (and fills the cache).
  // Its cost is released when the store answers the read it waits on, not at its deadline:
  // until then the store and the read's waiters hold what it left behind.
  LookupDone answer = deadline_.arm<Lookup>(std::move(done), timeout_lookup_);
  if (resets_pending_ > 0) {  // the barrier: read once the clear has completed
    parked_reads_.push_back(ParkedRead{std::string(key), std::move(answer), cost});
    return std::nullopt;
  }
  start_read_locked(std::string(key), &answer, nullptr, cost);
  return std::nullopt;
}

// A parked miss once the reset it waited for is over: what lookup() would have done.
std::optional<StoreTier::Lookup> StoreTier::read_locked(const ParkedRead& parked) {
  if (options_.mode == WriteMode::behind) {
    if (auto it = dirty_.find(parked.key); it != dirty_.end()) {
      read_bytes_ -= parked.cost;
      return dirty_lookup(it->second);
    }
  }
  start_read_locked(parked.key, &parked.answer, nullptr, parked.cost);
  return std::nullopt;
}

std::optional<std::string> StoreTier::admit_read_locked(std::size_t cost) {
  if (read_bytes_.load() + cost > options_.max_waiting) {
    return "store read backlog full: " + std::to_string(read_bytes_.load()) +
           " bytes of reads and conditional writes wait on the store (--max-inflight " +
           std::to_string(options_.max_waiting) + ")";
  }
  read_bytes_ += cost;
  return std::nullopt;
}

void StoreTier::start_read_locked(const std::string& k, const LookupDone* answer,
                                  std::shared_ptr<CondWrite> decision, std::size_t cost) {
  KeyState& state = key_state_locked(k);
  std::shared_ptr<Inflight> entry = state.read;
  // Single-flight joins only a read begun at the key's current version and epoch. A read begun
  // before a write of the key was submitted, applied or answered (or before a reset) may have
  // run before that write: its answer is older than what this request must see (the write may
  // have been acknowledged before it arrived). It then starts a read of its own; the superseded
  // read answers only those who joined it, and cannot fill (on_read_locked).
  if (entry && (entry->version != state.version || entry->epoch != epoch_)) entry.reset();
  if (!entry) {
    entry = std::make_shared<Inflight>();
    entry->version = state.version;
    entry->epoch = epoch_;
    state.read = entry;
    store_->read(k, [this, k, entry](store::ReadResult r) { on_read_done(k, *entry, r); });
  }
  // Single-flight: a later miss (or conditional write) waits on the read under way.
  if (answer != nullptr) entry->waiters.push_back(*answer);
  if (decision) entry->decisions.push_back(std::move(decision));
  entry->charged += cost;
}

void StoreTier::on_read_done(const std::string& k, Inflight& entry, store::ReadResult& r) {
  Lookup result;
  std::vector<LookupDone> waiters;
  DecidedList decided;
  {
    std::lock_guard lock(mu_);
    // Whether nothing overtook the read (no write of the key, no reset): what it found is then
    // the key's state now, for a conditional write waiting on it.
    const auto it = keys_.find(k);
    const bool unmoved =
        entry.epoch == epoch_ && it != keys_.end() && it->second.version == entry.version;
    result = on_read_locked(k, r, entry);
    // A reset may have detached this read already (a later miss then started its own).
    if (it != keys_.end() && it->second.read.get() == &entry) {
      it->second.read.reset();
      erase_if_clean_locked(k);
    }
    waiters.swap(entry.waiters);
    read_bytes_ -= std::exchange(entry.charged, 0);  // the store let go of the read
    std::optional<bool> exists;
    if (unmoved && result.kind != Lookup::Kind::error) exists = result.kind == Lookup::Kind::found;
    for (const auto& op : entry.decisions) {
      if (result.kind == Lookup::Kind::error) {
        decided.push_back({op, Outcome{Outcome::Kind::error, result.error}, false});
      } else {
        decide_locked(op, exists, decided);
      }
    }
    entry.decisions.clear();
  }
  for (auto& w : waiters) w(result);
  answer_decided(decided);
}

StoreTier::Lookup StoreTier::on_read_locked(const std::string& key, store::ReadResult& r,
                                            const Inflight& entry) {
  Lookup result;
  // Write-behind: a write made while the read was under way is newer than what the store
  // returned (after a reset the store may hold no state the tier ever showed), so it answers.
  if (auto it = dirty_.find(key); it != dirty_.end()) return dirty_lookup(it->second);
  if (!r.status.ok() && r.status.code != store::Code::not_found) {
    result.kind = Lookup::Kind::error;
    result.error = "store read failed: " + r.status.message;
    return result;
  }
  // A write of the key in the store's hands may be applied already, its callback not yet run
  // (a group commit): the read may have seen it, and the cache, which follows the callbacks,
  // may still hold an older value. It leaves the cache, so no later GET goes back behind this
  // answer; the last of those writes caches its value when its callback runs.
  if (const auto it = keys_.find(key); it != keys_.end() && it->second.writing > 0) {
    cache_.del(key);
  }
  if (r.status.code == store::Code::not_found) return result;
  if (!ttl_left(r.expires_at_ms)) return result;  // expired since the store read it
  result.kind = Lookup::Kind::found;
  result.value = std::make_shared<const std::string>(std::move(r.value));
  result.expires_at_ms = r.expires_at_ms;
  const auto it = keys_.find(key);
  const bool unmoved =
      entry.epoch == epoch_ && it != keys_.end() && it->second.version == entry.version;
  if (unmoved && may_fill_locked(key)) {
    result.version = cache_value(cache_, key, *result.value, r.expires_at_ms);
    if (result.version != 0) ++fills_;
  }
  return result;
}

// A dirty key's answer: its value, or absent (deleted, or expired: the flush still writes it
// with its expiry, and the store drops it).
StoreTier::Lookup StoreTier::dirty_lookup(const Dirty& d) {
  if (d.tombstone || !ttl_left(d.expires_at_ms)) return Lookup{};
  return Lookup{
      Lookup::Kind::found, std::make_shared<const std::string>(d.value), {}, d.expires_at_ms};
}

// A fill never overwrites a newer write: none is still uncommitted, the dirty buffer (newer
// than the store) does not hold the key, and the store is not in doubt about it (a write of
// unknown outcome may still appear there, e.g. after PostgreSQL restarts).
bool StoreTier::may_fill_locked(const std::string& key) const {
  if (all_unknown_ || dirty_.contains(key)) return false;
  const auto it = keys_.find(key);
  return it == keys_.end() || (it->second.writing == 0 && !it->second.unknown);
}

void StoreTier::moved_locked(std::string_view key) {
  if (auto it = keys_.find(key); it != keys_.end()) bump_locked(it->second);
}

void StoreTier::erase_if_clean_locked(std::string_view key) {
  if (auto it = keys_.find(key); it != keys_.end() && it->second.clean()) {
    // Kept, a few, for the next keys to enter (insert_key_locked): no allocation per write.
    if (spare_keys_.size() < kSpareKeys) {
      spare_keys_.push_back(keys_.extract(it));
    } else {
      keys_.erase(it);
    }
  }
}

// A key entering keys_ clean, in a spare entry when there is one (its key string's capacity
// reused).
// Its version is fresh (key_clock_): a read begun under an earlier entry of the key, forgotten
// since, can never take it for the state it began under.
StoreTier::KeyMap<StoreTier::KeyState>::iterator StoreTier::insert_key_locked(
    std::string_view key) {
  KeyMap<KeyState>::iterator it;
  if (spare_keys_.empty()) {
    it = keys_.emplace(std::string(key), KeyState{}).first;
  } else {
    auto node = std::move(spare_keys_.back());
    spare_keys_.pop_back();
    node.key().assign(key);
    node.mapped() = KeyState{};
    it = keys_.insert(std::move(node)).position;
  }
  bump_locked(it->second);
  return it;
}

StoreTier::KeyState& StoreTier::key_state_locked(std::string_view key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) it = insert_key_locked(key);
  return it->second;
}

// A one-op batch for a write-through key write, from the spares when there is one (its
// strings' capacity reused): the key and the value are copied into it once, nothing else.
std::vector<store::Write> StoreTier::batch_locked(const KeyWrite& kw, bool want_existed) {
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
void StoreTier::recycle_batch_locked(std::vector<store::Write>& batch) {
  constexpr std::size_t kSpareValueBytes = 4096;
  if (batch.size() != 1 || spare_batches_.size() >= kSpareBatches) return;
  const store::Write& w = batch[0];
  if (w.value.capacity() > kSpareValueBytes || !w.member.empty()) return;
  spare_batches_.push_back(std::move(batch));
}

// The key leaves the cache and is read through until a later write of it commits: the store
// alone knows whether the write landed. Bounded by max_dirty bytes; past it, no key is filled
// until a reset (every miss reads the store).
void StoreTier::mark_unknown_locked(const std::string& key) {
  cache_.del(key);
  moved_locked(key);
  if (all_unknown_) return;
  if (auto it = keys_.find(key); it != keys_.end() && it->second.unknown) return;
  if (unknown_bytes_ + key.size() + kOpOverhead > options_.max_dirty) {
    all_unknown_ = true;
    for (auto& [k, state] : keys_) state.unknown = false;
    std::erase_if(keys_, [](const auto& e) { return e.second.clean(); });
    unknown_bytes_ = 0;
    return;
  }
  key_state_locked(key).unknown = true;
  unknown_bytes_ += key.size() + kOpOverhead;
}

void StoreTier::clear_unknown_locked(const std::string& key) {
  if (unknown_bytes_ == 0) return;
  if (auto it = keys_.find(key); it != keys_.end() && it->second.unknown) {
    unknown_bytes_ -= key.size() + kOpOverhead;
    it->second.unknown = false;
    if (it->second.clean()) keys_.erase(it);
  }
}

// --- writes -------------------------------------------------------------------------------------

std::optional<StoreTier::Outcome> StoreTier::try_put(std::string_view key, std::string_view value,
                                                     std::uint64_t expires_at_ms) {
  if (options_.mode != WriteMode::behind) return std::nullopt;
  std::lock_guard lock(mu_);
  if (flush_failing_) return std::nullopt;
  if (!waiting_.empty() || !fits_locked(key, value)) return std::nullopt;
  return apply_dirty_locked({Kind::put, key, value, expires_at_ms});
}

std::optional<StoreTier::Outcome> StoreTier::try_del(std::string_view key) {
  if (options_.mode != WriteMode::behind) return std::nullopt;
  std::lock_guard lock(mu_);
  if (flush_failing_) return std::nullopt;
  if (!waiting_.empty() || !fits_locked(key, {})) return std::nullopt;
  if (auto it = dirty_.find(key); it != dirty_.end()) {
    if (dirty_lookup(it->second).kind == Lookup::Kind::absent) {
      return Outcome{Outcome::Kind::absent, {}};
    }
    return apply_dirty_locked({Kind::del, key});
  }
  if (cache_.del(key)) return apply_dirty_locked({Kind::del, key});
  return std::nullopt;
}

// A write that may wait on the store is answered by its commit or, at --store-timeout, by a 503
// saying the outcome is unknown; an outcome known at once settles the deadline instead.
std::optional<StoreTier::Outcome> StoreTier::put(std::string_view key, std::string_view value,
                                                 WriteDone done, std::uint64_t expires_at_ms) {
  return write({Kind::put, key, value, expires_at_ms}, std::move(done));
}

std::optional<StoreTier::Outcome> StoreTier::del(std::string_view key, WriteDone done) {
  return write({Kind::del, key}, std::move(done));
}

// write() answering an immediate outcome through done too (here, once mu_ is released): the
// caller hands done over and keeps no copy (a copy of a std::function that holds a lambda is
// an allocation).
void StoreTier::write_via(const KeyWrite& w, WriteDone done) {
  const Answer answer = deadline_.arm<Outcome>(std::move(done), timeout_outcome_, true);
  std::optional<Outcome> now;
  {
    std::lock_guard lock(mu_);
    if (answer.answered()) return;
    now = options_.mode == WriteMode::through ? submit_through_locked(w, answer)
                                              : behind_locked(w, answer);
  }
  if (now) answer.deliver(*now);
}

void StoreTier::put_via(std::string_view key, std::string_view value, WriteDone done,
                        std::uint64_t expires_at_ms) {
  write_via({Kind::put, key, value, expires_at_ms}, std::move(done));
}

void StoreTier::del_via(std::string_view key, WriteDone done) {
  write_via({Kind::del, key}, std::move(done));
}

// --- conditional writes (write_if) ---------------------------------------------------------------

std::optional<StoreTier::Outcome> StoreTier::write_if(Kind kind, std::string_view key,
                                                      std::string_view value,
                                                      std::uint64_t expires_at_ms,
                                                      const Preconditions& preconditions,
                                                      WriteDone done) {
  DecidedList decided;
  std::optional<Outcome> refused;
  {
    std::lock_guard lock(mu_);
    // Its body may wait on the store (behind a commit of the key, or on an existence read):
    // bounded with the reads by --max-inflight, refused at once past it.
    const std::size_t cost = dirty_size(key, value) + kOpOverhead;
    if (auto full = admit_read_locked(cost)) {
      refused = refusal(std::move(*full));
    } else {
      auto op = std::make_shared<CondWrite>(
          CondWrite{kind, std::string(key), std::string(value), expires_at_ms, preconditions,
                    deadline_.arm<Outcome>(std::move(done), timeout_outcome_, /*hand_back=*/true)});
      op->charged = cost;
      decide_locked(op, std::nullopt, decided);
    }
  }
  if (refused) done(*refused);
  answer_decided(decided);
  return std::nullopt;
}

// The decision, made where the key's state is settled (see write_if in the header).
void StoreTier::decide_locked(const std::shared_ptr<CondWrite>& op,
                              std::optional<bool> exists_in_store, DecidedList& decided) {
  if (op->done.answered()) {  // answered 503 at its deadline: dropped, never applied
    release_locked(*op);
    return;
  }
  const auto answer = [&](Outcome::Kind kind, std::string why = {}) {
    decided.push_back({op, Outcome{kind, std::move(why)}, false});
  };
  const std::string& key = op->key;
  const auto it = keys_.find(key);
  if (resets_pending_ > 0) {
    return answer(Outcome::Kind::error,
                  "a reset is pending; conditional writes are refused "
                  "until it completes (retry)");
  }
  if (all_unknown_ || (it != keys_.end() && it->second.unknown)) {
    return answer(Outcome::Kind::error,
                  "the key's state is unknown (an earlier write of it has an unknown outcome); "
                  "a conditional write cannot be decided until it is written unconditionally");
  }
  if (it != keys_.end() && it->second.writing > 0) {  // decided once the store has answered
    it->second.parked.push_back(op);
    return;
  }
  if (options_.mode == WriteMode::behind &&
      std::any_of(waiting_.begin(), waiting_.end(),
                  [&](const Waiting& w) { return w.key == key; })) {
    return answer(Outcome::Kind::error,
                  "a write of this key waits for room in the dirty buffer; retry");
  }
  const Preconditions& pre = op->preconditions;
  std::optional<bool> allowed;
  std::uint64_t version = 0;
  if (cache_.get_item(key, [&](const cache::Item& item) { version = item.version; })) {
    allowed = pre.allow(&version);
  } else if (auto d = dirty_.find(key); d != dirty_.end()) {
    const bool exists = dirty_lookup(d->second).kind == Lookup::Kind::found;
    allowed = pre.allow(exists ? &Preconditions::kUnknowable : nullptr);
  } else if (!pre.needs_existence()) {
    allowed = pre.allow(nullptr);
  } else if (exists_in_store) {
    allowed = pre.allow(*exists_in_store ? &Preconditions::kUnknowable : nullptr);
  }
  if (!allowed) {  // only the store knows whether the key exists
    if (++op->reads > kMaxConditionReads) {
      return answer(Outcome::Kind::error,
                    "the key kept changing while a conditional write "
                    "looked it up in the store; retry");
    }
    return start_read_locked(key, nullptr, op);  // its charge covers the read
  }
  if (!*allowed) return answer(Outcome::Kind::precondition_failed);
  apply_decided_locked(op, decided);
}

// The condition holds: the write goes the way an unconditional one goes, now, under the same
// hold of mu_, and under the request's own deadline: at one --store-timeout from the request's
// arrival it answers 503, the write possibly still taking effect (write-through, the commit under
// way) or dropped unapplied (write-behind, still waiting for room), as for an unconditional
// write. An outcome known at once has been settled: it is delivered through done.
void StoreTier::apply_decided_locked(const std::shared_ptr<CondWrite>& op, DecidedList& decided) {
  release_locked(*op);  // the write goes on as an unconditional one, under its bounds
  std::optional<Outcome> now = options_.mode == WriteMode::through
                                   ? submit_through_locked(op->write(), op->done)
                                   : behind_locked(op->write(), op->done);
  if (now) decided.push_back({op, std::move(*now), true});
}

void StoreTier::release_locked(CondWrite& op) {
  read_bytes_ -= std::exchange(op.charged, 0);
}

void StoreTier::answer_decided(DecidedList& decided) {
  for (Decided& d : decided) {
    d.op->value = {};  // the answer needs no body
    read_bytes_ -= std::exchange(d.op->charged, 0);
    if (d.settled) {
      d.op->done.deliver(d.outcome);
    } else {
      d.op->done(d.outcome);
    }
  }
  decided.clear();
}

// Every immediate outcome below is settled (the deadline's claim taken) before the write is
// applied: a write the deadline answered first — it may have waited that long for mu_ behind a
// long flush or reset — is dropped, never applied after its 503.
std::optional<StoreTier::Outcome> StoreTier::write(const KeyWrite& w, WriteDone done) {
  const Answer answer = deadline_.arm<Outcome>(std::move(done), timeout_outcome_);
  std::lock_guard lock(mu_);
  if (answer.answered()) return std::nullopt;
  if (options_.mode == WriteMode::through) return submit_through_locked(w, answer);
  return behind_locked(w, answer);
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

store::Status StoreTier::reset_timeout_status() const {
  return store::Status{store::Code::io_error,
                       timeout_text(options_.store_timeout) + "; the reset may still take effect"};
}

StoreTier::Outcome StoreTier::refusal(std::string why) {
  ++write_errors_;
  return Outcome{Outcome::Kind::error, std::move(why)};
}

// What waits on the store is bounded like write-behind's dirty data: a store that stops
// answering must not make the server hold every write sent meanwhile (a request answered 503 at
// its deadline leaves its write queued in the store). Counts the bytes in, or refuses.
std::optional<StoreTier::Outcome> StoreTier::admit_through_locked(std::size_t bytes) {
  if (through_bytes_ > 0 && through_bytes_ + bytes > options_.max_dirty) {
    return refusal("store backlog full: " + std::to_string(through_bytes_) +
                   " bytes of writes wait on the store (--max-dirty " +
                   std::to_string(options_.max_dirty) + ")");
  }
  through_bytes_ += bytes;
  return std::nullopt;
}

// Write-through: the store decides (existed) and the cache follows once the commit succeeded.
// Every cache entry came from a committed write or a fill, so the store alone says whether a
// key existed.
std::optional<StoreTier::Outcome> StoreTier::submit_through_locked(const KeyWrite& kw,
                                                                   const Answer& done) {
  const std::string_view key = kw.key;
  ThroughWrite w{kw.kind, nullptr, false, dirty_size(key, kw.value) + kOpOverhead};
  if (auto full = admit_through_locked(w.bytes)) {  // nothing counted in
    if (!done.settle()) return std::nullopt;
    return full;
  }
  // A key in the cache with no write of it pending is in the store too (the cache holds only
  // committed writes and fills), so the store need not look it up: ask only about the others.
  auto it = keys_.find(key);
  if (it == keys_.end()) it = insert_key_locked(key);
  w.entry = &*it;
  KeyState& state = w.entry->second;
  const bool pending = state.writing > 0;
  w.want_existed = pending || !cache_.get(key, [](std::string_view) {});
  ++state.writing;
  bump_locked(state);
  std::unique_ptr<ThroughRecord> record = take_record_locked();
  record->write = w;
  record->done = done;
  ThroughRecord* const in_flight = record.release();  // back in on_through_done
  const store::WriteTicket ticket =
      store_->write(batch_locked(kw, w.want_existed),
                    [this, in_flight](store::WriteResult r) { on_through_done(in_flight, r); });
  done.set_ticket(ticket);
  return std::nullopt;
}

std::unique_ptr<StoreTier::ThroughRecord> StoreTier::take_record_locked() {
  if (spare_records_.empty()) return std::make_unique<ThroughRecord>();
  std::unique_ptr<ThroughRecord> record = std::move(spare_records_.back());
  spare_records_.pop_back();
  return record;
}

// The store's answer to a write-through write (on its completer thread, in commit order).
void StoreTier::on_through_done(ThroughRecord* in_flight, store::WriteResult& r) {
  std::unique_ptr<ThroughRecord> record(in_flight);
  Outcome o;
  DecidedList decided;  // conditional writes that waited for this one
  std::optional<Answer> done;
  {
    std::lock_guard lock(mu_);
    o = on_through_commit_locked(record->write, r);
    recycle_batch_locked(r.batch);
    done = std::move(record->done);
    record->done.reset();
    if (spare_records_.size() < kSpareRecords) spare_records_.push_back(std::move(record));
    decided.swap(decided_);
  }
  (*done)(o);
  answer_decided(decided);
}

// In commit order (the store runs write callbacks in commit order): the cache follows the
// store. A failed commit's outcome is unknown (a lost connection or a failed fsync can have
// applied it), so the key leaves the cache and reads go to the store until a later write of it
// commits.
StoreTier::Outcome StoreTier::on_through_commit_locked(const ThroughWrite& w,
                                                       const store::WriteResult& r) {
  through_bytes_ -= w.bytes;
  // The entry stays while this write counts in `writing`: released last.
  Outcome o = through_outcome_locked(w, r);
  KeyState& state = w.entry->second;
  --state.writing;
  bump_locked(state);
  if (state.writing == 0 && !state.parked.empty()) {  // the key is settled: decide them in order
    std::vector<std::shared_ptr<CondWrite>> parked;
    parked.swap(state.parked);
    for (std::size_t i = 0; i < parked.size(); ++i) {
      decide_locked(parked[i], std::nullopt, decided_);
      // A decision that submitted a write parks the rest behind it again, in order.
      if (state.writing > 0) {
        state.parked.insert(state.parked.end(), parked.begin() + i + 1, parked.end());
        break;
      }
    }
  }
  erase_if_clean_locked(w.entry->first);
  return o;
}

StoreTier::Outcome StoreTier::through_outcome_locked(const ThroughWrite& w,
                                                     const store::WriteResult& r) {
  const std::string& key = w.entry->first;
  Outcome o;
  if (!r.status.ok()) {
    o.kind = Outcome::Kind::error;
    o.error = "store write failed: " + r.status.message;
    if (r.status.code != store::Code::abandoned) log_error_locked(o.error);
    if (!refused_unapplied(r.status.code)) {
      mark_unknown_locked(key);
      o.error += "; the outcome is unknown (the key is read from the store until it is written)";
    }
    return o;
  }
  clear_unknown_locked(key);
  const bool existed = !w.want_existed || (!r.existed.empty() && r.existed[0]);
  if (w.kind == Kind::put) {
    // Never leave an older value: without its value back (not the store's contract), when the
    // cache cannot take it, or when a later write of the key is in the store's hands, the key
    // leaves the cache and is read through. That later write may be applied already (one
    // group commit, its callback due after this one): a miss may have read its value, and the
    // cache must not then go back to this one. The last write of the key in flight caches its
    // value: the store holds exactly that then.
    if (r.batch.size() == 1 && w.entry->second.writing == 1) {
      o.version = cache_value(cache_, key, r.batch[0].value, r.batch[0].expires_at_ms);
    }
    if (o.version == 0) cache_.del(key);
    o.kind = existed ? Outcome::Kind::replaced : Outcome::Kind::created;
  } else {
    cache_.del(key);
    o.kind = existed ? Outcome::Kind::deleted : Outcome::Kind::absent;
  }
  return o;
}

// Write-behind: into the cache and the dirty buffer at once when there is room and nobody is
// waiting (FIFO), else queued for the flusher to admit. A failing store refuses every write.
std::optional<StoreTier::Outcome> StoreTier::behind_locked(const KeyWrite& w, const Answer& done) {
  if (flush_failing_) {
    if (!done.settle()) return std::nullopt;
    return refusal("the store is failing (" + flush_error_ +
                   "); write-behind refuses writes until a flush succeeds");
  }
  if (waiting_.empty() && fits_locked(w.key, w.value)) {
    if (w.kind == Kind::del) return del_behind_locked(w.key, done, false);
    if (!done.settle()) return std::nullopt;
    return apply_dirty_locked(w);
  }
  return queue_waiting_locked(w, done);
}

// Waits for room in FIFO order, bounded like the dirty buffer: a store
// that does not answer must not make the server hold every write sent meanwhile.
std::optional<StoreTier::Outcome> StoreTier::queue_waiting_locked(const KeyWrite& w,
                                                                  const Answer& done) {
  if (store_failed_locked()) {
    if (!done.settle()) return std::nullopt;
    return refusal("dirty buffer full and the store failed: " + store_->stats().last_error);
  }
  // Writes answered 503 at their deadline leave the queue now, not when room appears.
  while (!waiting_.empty() && waiting_.front().done.answered()) pop_waiting_locked();
  const std::size_t bytes = dirty_size(w.key, w.value) + kOpOverhead;
  if (waiting_bytes_ > 0 && waiting_bytes_ + bytes > options_.max_waiting) {
    if (!done.settle()) return std::nullopt;
    return refusal("write queue full: " + std::to_string(waiting_bytes_) +
                   " bytes of writes wait for the dirty buffer (--max-inflight " +
                   std::to_string(options_.max_waiting) + ")");
  }
  waiting_.push_back(
      Waiting{w.kind, std::string(w.key), std::string(w.value), w.expires_at_ms, done});
  waiting_bytes_ += bytes;
  flusher_wake_.notify_one();
  return std::nullopt;
}

void StoreTier::pop_waiting_locked() {
  const Waiting& w = waiting_.front();
  waiting_bytes_ -= dirty_size(w.key, w.value) + kOpOverhead;
  waiting_.pop_front();
}

bool StoreTier::fits_locked(std::string_view key, std::string_view value) const {
  std::size_t freed = 0;
  if (auto it = dirty_.find(key); it != dirty_.end()) {
    freed = dirty_size(key, it->second.value);
  }
  const std::size_t need = dirty_size(key, value);
  return dirty_bytes_ + reserved_rows_ - freed + need <= options_.max_dirty;
}

bool StoreTier::store_failed_locked() const {
  return store_->stats().failed;
}

StoreTier::Outcome StoreTier::apply_dirty_locked(const KeyWrite& w) {
  const Kind kind = w.kind;
  const std::string_view value = w.value;
  std::string k(w.key);
  moved_locked(k);
  if (nothing_dirty_locked()) dirty_since_ = std::chrono::steady_clock::now();
  auto [it, inserted] = dirty_.try_emplace(k);
  Dirty& d = it->second;
  const bool had_value = !inserted && dirty_lookup(d).kind == Lookup::Kind::found;
  if (!inserted) dirty_bytes_ -= dirty_size(k, d.value);
  d.tombstone = kind == Kind::del;
  d.value.assign(d.tombstone ? std::string_view() : value);
  d.expires_at_ms = d.tombstone ? 0 : w.expires_at_ms;
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
  // (A write that waited for room past its expiry is not cached at all.)
  std::optional<cache::SetResult> set;
  if (const auto ttl = ttl_left(w.expires_at_ms)) {
    cache::WriteOptions options;
    options.ttl = *ttl;
    const cache::Written written = cache_.set(k, value, options);
    set = written.result;
    if (stored(written.result)) o.version = written.version;
  }
  if (!set || !stored(*set)) cache_.del(k);
  o.kind = (had_value || set == cache::SetResult::replaced) ? Outcome::Kind::replaced
                                                            : Outcome::Kind::created;
  return o;
}

// A write-behind DELETE answers 404 only if the key is in neither the cache, the dirty buffer
// nor the store; the store is asked only when the first two do not know.
std::optional<StoreTier::Outcome> StoreTier::del_behind_locked(std::string_view key,
                                                               const Answer& done, bool claimed) {
  if (delete_known_locked(key)) {
    if (!claimed && !done.settle()) return std::nullopt;
    return delete_dirty_locked(key);
  }
  if (!claimed && done.answered()) return std::nullopt;
  read_for_delete_locked(std::string(key), done, claimed, 1);
  return std::nullopt;
}

// Whether the dirty buffer or the cache knows if the key exists.
bool StoreTier::delete_known_locked(std::string_view key) const {
  return dirty_.contains(key) || cache_.get(key, [](std::string_view) {});
}

// A DELETE of a key the dirty buffer or the cache knows: a dirty tombstone answers 404, so of
// two concurrent DELETEs of one key exactly one answers 204.
StoreTier::Outcome StoreTier::delete_dirty_locked(std::string_view key) {
  if (auto it = dirty_.find(key);
      it != dirty_.end() && dirty_lookup(it->second).kind == Lookup::Kind::absent) {
    return Outcome{Outcome::Kind::absent, {}};
  }
  return apply_dirty_locked({Kind::del, key});
}

// Asks the store whether the key exists. The answer decides only if no write of the key and no
// reset overtook the read (its KeyState's version and the epoch are unchanged; the entry is
// kept while the read is out, deletes_reading); otherwise what the tier knows now decides, or
// the store is asked again (at most kMaxConditionReads times, then 503).
void StoreTier::read_for_delete_locked(std::string k, Answer done, bool claimed, int reads) {
  KeyState& state = key_state_locked(k);
  ++state.deletes_reading;
  const std::uint64_t version = state.version, epoch = epoch_;
  store_->read(k, [this, k, done, claimed, reads, version, epoch](store::ReadResult r) {
    Outcome o;
    {
      std::lock_guard lock(mu_);
      bool unmoved = false;
      if (auto it = keys_.find(k); it != keys_.end()) {
        --it->second.deletes_reading;
        unmoved = it->second.version == version && epoch_ == epoch;
        erase_if_clean_locked(k);
      }
      if (!claimed && done.answered()) return;  // answered 503 at its deadline: not applied
      if (!unmoved) {
        if (delete_known_locked(k)) {
          if (!claimed && !done.claim()) return;
          o = delete_dirty_locked(k);
        } else if (reads < kMaxConditionReads) {
          return read_for_delete_locked(k, done, claimed, reads + 1);
        } else if (!claimed && !done.claim()) {
          return;
        } else {
          o = Outcome{Outcome::Kind::error,
                      "the key kept changing while a DELETE looked it up in the store; retry"};
        }
      } else if (!claimed && !done.claim()) {
        return;
      } else if (r.status.ok() && ttl_left(r.expires_at_ms)) {
        o = apply_dirty_locked({Kind::del, k});
      } else if (r.status.ok() || r.status.code == store::Code::not_found) {
        o.kind = Outcome::Kind::absent;
      } else {
        o.kind = Outcome::Kind::error;
        o.error = "store read failed: " + r.status.message;
      }
    }
    done.deliver(o);
  });
}

// One line on stderr per distinct error, not one per failed request.
void StoreTier::log_error_locked(const std::string& message) {
  if (message == last_logged_error_) return;
  last_logged_error_ = message;
  std::cerr << "cache_server: " << message << std::endl;
}

// --- board rows ---------------------------------------------------------------------------------

StoreTier::RowReservation StoreTier::reserve_row(std::string_view board, std::string_view member) {
  std::lock_guard lock(mu_);
  if (options_.mode == WriteMode::through) {
    const std::size_t bytes = row_size(row_key(board, member)) + kOpOverhead;
    if (auto full = admit_through_locked(bytes)) return {0, std::move(full)};
    return {bytes, std::nullopt};
  }
  if (flush_failing_) {
    return {0, refusal("the store is failing (" + flush_error_ +
                       "); write-behind refuses board changes until a flush succeeds")};
  }
  // What the row can add to the dirty buffer (board_behind_locked): nothing if it is there.
  std::size_t bytes = 0;
  if (member.empty()) {
    if (!dirty_drops_.contains(board)) bytes = board.size();
  } else if (std::string key = row_key(board, member); !dirty_rows_.contains(key)) {
    bytes = row_size(key);
  }
  if (bytes > 0 && dirty_bytes_ + reserved_rows_ + bytes > options_.max_dirty) {
    // A board change cannot wait for room as a key write does (it holds the board's lock).
    return {0,
            refusal("dirty buffer full: " + std::to_string(dirty_bytes_) +
                    " bytes wait to be flushed (--max-dirty " + std::to_string(options_.max_dirty) +
                    "); board changes are refused until a flush makes room")};
  }
  reserved_rows_ += bytes;
  return {bytes, std::nullopt};
}

void StoreTier::release_row(std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (options_.mode == WriteMode::through) {
    through_bytes_ -= bytes;
  } else {
    reserved_rows_ -= bytes;
  }
}

std::optional<StoreTier::Outcome> StoreTier::board_write(store::Write row, std::size_t reserved,
                                                         WriteDone done) {
  std::lock_guard lock(mu_);
  if (options_.mode == WriteMode::behind) {
    reserved_rows_ -= reserved;
    board_behind_locked(row);
    return Outcome{Outcome::Kind::replaced, {}};
  }
  return board_through_locked(std::move(row), reserved, std::move(done));
}

// Write-through: counted in the backlog by reserve_row, answered by the commit or at
// --store-timeout.
std::optional<StoreTier::Outcome> StoreTier::board_through_locked(store::Write row,
                                                                  std::size_t bytes,
                                                                  WriteDone done) {
  const Answer answer = deadline_.arm<Outcome>(std::move(done), timeout_outcome_);
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

// --- reset --------------------------------------------------------------------------------------

void StoreTier::reset(ResetDone done, std::function<void(bool)> settled) {
  auto answer = deadline_.arm<store::Status>(std::move(done), reset_timeout_);
  std::lock_guard lock(mu_);
  ++resets_pending_;
  // Under mu_: every write submitted before this point is committed before the clear, and
  // every later one after it (store.hh ordering). Dirty writes up to `version` were made
  // before the reset; the flusher keeps them back until the clear has completed.
  const std::uint64_t version = dirty_version_;
  store_->clear([this, version, answer, settled = std::move(settled)](store::Status s) {
    on_clear(version, s);
    if (settled) settled(s.ok());
    answer(s);
  });
}

// A clear refused outright (a failed or closed store) changed nothing. Any other error may
// have emptied the store anyway (a lost connection after COMMIT, a failed fsync whose record a
// restart replays): nothing in memory is dropped (no dirty write, no board), but the cache stops
// serving what the store may no longer hold, and no key is filled until a reset succeeds.
void StoreTier::on_clear(std::uint64_t version, store::Status& s) {
  Ready ready;
  {
    std::lock_guard lock(mu_);
    --resets_pending_;
    if (s.ok()) {
      apply_reset_locked(version);
    } else if (refused_unapplied(s.code)) {
      s.message = "reset failed, nothing was emptied: " + s.message;
    } else {
      cache_.reset();
      ++epoch_;  // no read under way fills
      all_unknown_ = true;
      s.message =
          "reset failed, its outcome is unknown (the store may have been emptied; no "
          "dirty write or board was dropped, and keys are read from the store): " +
          s.message;
    }
    if (resets_pending_ == 0) ready = unpark_reads_locked();
  }
  resets_done_.notify_all();
  flusher_wake_.notify_one();
  for (auto& [answer, lookup] : ready) answer(lookup);
}

// The clear committed: what was written before it goes from memory too. Runs in commit order
// (a clear completes like a write), so a write-through write committed after the clear updates
// the cache after this.
void StoreTier::apply_reset_locked(std::uint64_t version) {
  ++epoch_;  // no read under way fills
  for (auto& [key, state] : keys_) {
    state.read.reset();  // later misses start fresh reads, ordered after the clear
    state.unknown = false;
  }
  std::erase_if(keys_, [](const auto& e) { return e.second.clean(); });
  std::erase_if(dirty_, [&](const auto& e) {
    if (e.second.version > version) return false;
    dirty_bytes_ -= dirty_size(e.first, e.second.value);
    return true;
  });
  std::erase_if(dirty_rows_, [&](const auto& e) {
    if (e.second.version > version) return false;
    dirty_bytes_ -= row_size(e.first);
    return true;
  });
  std::erase_if(dirty_drops_, [&](const auto& e) {
    if (e.second > version) return false;
    dirty_bytes_ -= e.first.size();
    return true;
  });
  unknown_bytes_ = 0;
  all_unknown_ = false;
  flush_failing_ = false;  // the store just committed
  cache_.reset();
  // What dirty writes remain were made after the reset: they go back into the cache lazily
  // (reads consult the dirty buffer first).
}

StoreTier::Ready StoreTier::unpark_reads_locked() {
  Ready ready;
  for (ParkedRead& p : parked_reads_) {
    if (auto now = read_locked(p)) ready.emplace_back(std::move(p.answer), *now);
  }
  parked_reads_.clear();
  return ready;
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
    if (resets_pending_ > 0) {
      // Dirty writes made before a pending reset must not reach the store after its clear.
      flusher_wake_.wait(lock, [this] { return stopping_ || resets_pending_ == 0; });
    } else if (!nothing_dirty_locked()) {
      // A failed flush (the store failed, or a transient error) is retried after a full
      // period, not at once: the dirty data is kept either way.
      if (!flush_once(lock)) flusher_wake_.wait_for(lock, period, [this] { return stopping_; });
      if (stopping_) break;
    } else if (!waiting_.empty()) {
      admit_and_answer(lock, false);
    }
  }
}

// Waiting writes answered 503 at their deadline leave the queue (and free their bodies) within
// a flusher period, not when room appears.
void StoreTier::drop_timed_out_waiting_locked() {
  std::erase_if(waiting_, [this](const Waiting& w) {
    if (!w.done.answered()) return false;
    waiting_bytes_ -= dirty_size(w.key, w.value) + kOpOverhead;
    return true;
  });
}

// What one flush commits, and the versions that tell which dirty entries it made durable.
struct StoreTier::FlushSnapshot {
  std::vector<store::Write> batch;
  std::vector<std::pair<std::string, std::uint64_t>> keys, rows, drops;
};

StoreTier::FlushSnapshot StoreTier::snapshot_dirty_locked() const {
  FlushSnapshot f;
  f.batch.reserve(dirty_.size() + dirty_drops_.size() + dirty_rows_.size());
  f.keys.reserve(dirty_.size());
  for (const auto& [key, d] : dirty_) {
    store::Write w;
    w.kind = d.tombstone ? Kind::del : Kind::put;
    w.key = key;
    w.value = d.value;
    w.expires_at_ms = d.expires_at_ms;
    f.batch.push_back(std::move(w));
    f.keys.emplace_back(key, d.version);
  }
  // Drops before rows: a row still dirty after its board's drop was written after the drop.
  for (const auto& [board, version] : dirty_drops_) {
    f.batch.push_back(store::Write::board_drop_rows(board));
    f.drops.emplace_back(board, version);
  }
  for (const auto& [key, row] : dirty_rows_) {
    const auto [board, member] = split_row_key(key);
    f.batch.push_back(row.tombstone
                          ? store::Write::board_remove_row(board, member)
                          : store::Write::board_set_row(board, member, row.score, row.seq));
    f.rows.emplace_back(key, row.version);
  }
  return f;
}

// The flush committed: the entries not rewritten meanwhile are clean.
void StoreTier::forget_flushed_locked(const FlushSnapshot& f) {
  for (const auto& [key, version] : f.keys) {
    auto it = dirty_.find(key);
    if (it != dirty_.end() && it->second.version == version) {
      dirty_bytes_ -= dirty_size(key, it->second.value);
      dirty_.erase(it);
    }
  }
  for (const auto& [key, version] : f.rows) {
    auto it = dirty_rows_.find(key);
    if (it != dirty_rows_.end() && it->second.version == version) {
      dirty_bytes_ -= row_size(key);
      dirty_rows_.erase(it);
    }
  }
  for (const auto& [board, version] : f.drops) {
    auto it = dirty_drops_.find(board);
    if (it != dirty_drops_.end() && it->second == version) {
      dirty_bytes_ -= board.size();
      dirty_drops_.erase(it);
    }
  }
}

// Submits one flush of the dirty buffer (at most one is in flight); its commit's callback, on
// the store's completer thread, finishes it (on_flushed).
void StoreTier::start_flush_locked() {
  flush_in_flight_ = true;
  ++flushes_started_;
  auto f = std::make_shared<FlushSnapshot>(snapshot_dirty_locked());
  std::vector<store::Write> batch = std::move(f->batch);
  store_->write(std::move(batch),
                [this, f, at = std::chrono::steady_clock::now()](store::WriteResult r) {
                  std::unique_lock lock(mu_);
                  on_flushed_locked(*f, at, r);
                  admit_and_answer(lock, false);
                });
}

void StoreTier::on_flushed_locked(const FlushSnapshot& f,
                                  std::chrono::steady_clock::time_point snapshot_at,
                                  const store::WriteResult& r) {
  if (r.status.ok()) {
    forget_flushed_locked(f);
    // What is left was written after the snapshot.
    if (!nothing_dirty_locked()) dirty_since_ = std::max(dirty_since_, snapshot_at);
    flush_failing_ = false;
  } else {
    // From now on key writes answer 503 until a flush succeeds: what the store refuses now
    // could never become durable.
    flush_failing_ = true;
    flush_error_ = r.status.message;
    flush_error_code_ = r.status.code;
    log_error_locked("write-behind flush failed, dirty writes kept: " + r.status.message);
  }
  flush_in_flight_ = false;
  ++flushes_done_;
  flushed_.notify_all();
}

// One flush, waited for (the flusher thread, shutdown): true if it committed.
bool StoreTier::flush_once(std::unique_lock<std::mutex>& lock, bool bounded) {
  if (flush_in_flight_) wait_flushed(lock, flushes_started_, bounded);
  if (store_abandoned_.load()) return false;
  start_flush_locked();
  const std::uint64_t mine = flushes_started_;
  wait_flushed(lock, mine, bounded);
  return flushes_done_ >= mine && !flush_failing_;
}

// Waits for flush number n to finish. A store that does not answer must not hold the process's
// exit: once shutdown has begun, the flush gets --store-timeout, then the store is closed, which
// fails the commit in flight.
void StoreTier::wait_flushed(std::unique_lock<std::mutex>& lock, std::uint64_t n, bool bounded) {
  auto started = std::chrono::steady_clock::now();
  bool was_shutting_down = bounded;
  while (flushes_done_ < n) {
    flushed_.wait_for(lock, std::chrono::milliseconds(20));
    if (!was_shutting_down && shutting_down_.load()) {
      was_shutting_down = true;
      started = std::chrono::steady_clock::now();
    }
    if (flushes_done_ < n && was_shutting_down &&
        std::chrono::steady_clock::now() - started > options_.store_timeout) {
      lock.unlock();
      close_store_bounded();  // completes the commit in flight (failed), which takes mu_
      lock.lock();
      if (store_abandoned_.load()) return;  // it never will: a sync is stuck
      flushed_.wait(lock, [&] { return flushes_done_ >= n; });
    }
  }
}

// A tier without a flusher thread (flush_interval 0: the simulation drives it): one step of
// the flusher loop, without waiting.
void StoreTier::flush_step() {
  std::unique_lock lock(mu_);
  drop_timed_out_waiting_locked();
  if (resets_pending_ > 0 || flush_in_flight_) return;
  if (!nothing_dirty_locked()) {
    start_flush_locked();
  } else if (!waiting_.empty()) {
    admit_and_answer(lock, false);
  }
}

// Admits waiting writes in FIFO order while they fit (all of them with force), then answers
// them outside the lock. With a failed or failing store, waiting writes are refused (503), not
// kept.
void StoreTier::admit_and_answer(std::unique_lock<std::mutex>& lock, bool force) {
  std::vector<std::pair<Answer, Outcome>> ready;
  const bool failed = flush_failing_ || store_failed_locked();
  while (!waiting_.empty()) {
    Waiting& w = waiting_.front();
    if (failed && !force) {
      if (w.done.claim()) {
        ready.emplace_back(w.done,
                           refusal("dirty buffer full and the store failed: " +
                                   (flush_failing_ ? flush_error_ : store_->stats().last_error)));
      }
    } else if (force || fits_locked(w.key, w.value)) {
      if (!w.done.claim()) {
        // Answered 503 at its deadline: dropped, never applied.
      } else if (w.kind == Kind::put) {
        ready.emplace_back(w.done,
                           apply_dirty_locked({Kind::put, w.key, w.value, w.expires_at_ms}));
      } else if (auto o = del_behind_locked(w.key, w.done, true)) {
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
    // A pending reset's clear goes first: what was written before it must not follow it.
    const bool settled = resets_done_.wait_for(lock, options_.store_timeout,
                                               [this] { return resets_pending_ == 0; });
    if (settled) final_flush_locked(lock);
    lost = dirty_.size() + dirty_rows_.size() + dirty_drops_.size();
  }
  closed_ = true;
  lock.unlock();
  close_store_bounded();
  return lost;
}

// close() joins the store's threads, and one stuck in a sync (a dead disk, a hung network file
// system) never returns: the close runs on a thread of its own, waited for up to
// --store-timeout + kCloseGrace. Past it the store is abandoned, open, and the process ends without
// it (main.cc). A write-through write in the stuck commit was never acknowledged; write-behind's
// dirty writes in it were, and shutdown() counts them as not made durable.
void StoreTier::close_store_bounded() {
  if (store_abandoned_.load()) return;
  auto closed = std::make_shared<std::promise<void>>();
  std::future<void> done = closed->get_future();
  std::thread closer([store = store_.get(), closed] {
    store->close();
    closed->set_value();
  });
  // close() drains what is queued (PostgreSQL's watchdog aborts a hung connection after 1 s;
  // delayed reads of the read-delay fault run out): it gets --store-timeout plus that grace.
  const auto limit = options_.store_timeout + kCloseGrace;
  if (done.wait_for(limit) == std::future_status::ready) {
    closer.join();
    return;
  }
  closer.detach();
  store_abandoned_.store(true);
  std::cerr << "cache_server: the store did not close within --store-timeout + 5 s ("
            << limit.count()
            << "ms): a sync never returned; exiting without it (its commit's writes may or may "
               "not be durable)\n";
}

// Shutdown's last flush. A store that fails it may be reconnecting (PostgreSQL restarted): it
// is tried again for up to --store-timeout. Bounded: a store that does not answer must not hold
// the process's exit (flush_once closes the store past --store-timeout).
void StoreTier::final_flush_locked(std::unique_lock<std::mutex>& lock) {
  const auto until = std::chrono::steady_clock::now() + options_.store_timeout;
  // Only a store that may come back is waited for: not a failed or closed one.
  while (!nothing_dirty_locked() && !flush_once(lock, true) &&
         std::chrono::steady_clock::now() < until &&
         (flush_error_code_ == store::Code::unavailable ||
          flush_error_code_ == store::Code::io_error) &&
         !store_failed_locked() && !store_abandoned_.load()) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lock.lock();
  }
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
  if (flush_failing_) {  // write-behind refuses writes: the store counts as failed meanwhile
    t.store.failed = true;
    if (t.store.last_error.empty()) t.store.last_error = flush_error_;
  }
  return t;
}

}  // namespace server
