// read_through.cc — see read_through.hh.
#include "tier/read_through.hh"

#include "tier/conditional_writes.hh"
#include "tier/write_behind.hh"

namespace tier {

std::optional<KeyLookup> ReadThrough::lookup(std::string_view key, Done<KeyLookup> done) {
  TierCore& core = p_.core;
  std::lock_guard lock(core.mu);
  if (core.resets_pending == 0 && !core.through()) {
    if (auto dirty = p_.behind.dirty().lookup(key)) return dirty;
  }
  const std::size_t cost = key.size() + kOpOverhead;
  if (auto full = admit_locked(cost))
    return KeyLookup{KeyLookup::Kind::error, {}, std::move(*full)};
  // Each waiter has its own deadline; the read goes on for the others (and fills the cache).
  // Its cost is released when the store answers the read it waits on, not at its deadline:
  // until then the store and the read's waiters hold what it left behind.
  LookupAnswer answer = core.deadline.arm(std::move(done), core.timeout_lookup);
  if (core.resets_pending > 0) {  // the barrier: read once the clear has completed
    parked_.push_back(Parked{std::string(key), std::move(answer), cost});
    return std::nullopt;
  }
  start_locked(std::string(key), &answer, nullptr, cost);
  return std::nullopt;
}

// A parked miss once the reset it waited for is over: what lookup() would have done.
std::optional<KeyLookup> ReadThrough::read_parked_locked(const Parked& parked) {
  if (!p_.core.through()) {
    if (auto dirty = p_.behind.dirty().lookup(parked.key)) {
      p_.core.read_bytes -= parked.cost;
      return dirty;
    }
  }
  start_locked(parked.key, &parked.answer, nullptr, parked.cost);
  return std::nullopt;
}

ReadThrough::Ready ReadThrough::unpark_locked() {
  Ready ready;
  for (Parked& p : parked_) {
    if (auto now = read_parked_locked(p)) ready.emplace_back(std::move(p.answer), *now);
  }
  parked_.clear();
  return ready;
}

std::optional<std::string> ReadThrough::admit_locked(std::size_t cost) {
  TierCore& core = p_.core;
  if (core.read_bytes.load() + cost > core.options.max_waiting) {
    return "store read backlog full: " + std::to_string(core.read_bytes.load()) +
           " bytes of reads and conditional writes wait on the store (--max-inflight " +
           std::to_string(core.options.max_waiting) + ")";
  }
  core.read_bytes += cost;
  return std::nullopt;
}

void ReadThrough::start_locked(const std::string& k, const LookupAnswer* answer,
                               std::shared_ptr<CondWrite> decision, std::size_t cost) {
  KeyState& state = p_.keys.state_locked(k);
  std::shared_ptr<Inflight> entry = state.read;
  // Single-flight joins only a read begun at the key's current version and epoch. A read begun
  // before a write of the key was submitted or answered, before another read of it answered
  // while a write was in flight (on_done), or before a reset, may have run before that write:
  // its answer is older than what this request must see (the write may have been acknowledged,
  // or read, before it arrived). It then starts a read of its own; the superseded read answers
  // only those who joined it, and cannot fill (answer_locked).
  if (entry && (entry->version != state.version || entry->epoch != p_.core.epoch)) entry.reset();
  if (!entry) {
    entry = std::make_shared<Inflight>();
    entry->version = state.version;
    entry->epoch = p_.core.epoch;
    state.read = entry;
    p_.core.store->read(k, [this, k, entry](store::ReadResult r) { on_done(k, *entry, r); });
  }
  // Single-flight: a later miss (or conditional write) waits on the read under way.
  if (answer != nullptr) entry->waiters.push_back(*answer);
  if (decision) entry->decisions.push_back(std::move(decision));
  entry->charged += cost;
}

void ReadThrough::on_done(const std::string& k, Inflight& entry, store::ReadResult& r) {
  KeyLookup result;
  std::vector<LookupAnswer> waiters;
  DecidedList decided;
  {
    std::lock_guard lock(p_.core.mu);
    // Whether nothing overtook the read (no write of the key, no reset): what it found is then
    // the key's state now, for a conditional write waiting on it.
    const bool unmoved = p_.keys.unmoved_locked(k, entry.version, entry.epoch);
    result = answer_locked(k, r, unmoved);
    if (KeyState* state = p_.keys.find_locked(k); state != nullptr) {
      // A write of the key in the store's hands may be applied at any moment, unseen by the
      // tier: another read begun since it was submitted may have run before it was applied, and
      // this one after. What this read answers is then the oldest state a later GET may see, so
      // a later miss must not join a read under way (its version moves on): it reads anew.
      if (state->writing > 0) p_.keys.bump_locked(*state);
      // A reset may have detached this read already (a later miss then started its own).
      if (state->read.get() == &entry) {
        state->read.reset();
        p_.keys.erase_if_clean_locked(k);
      }
    }
    waiters.swap(entry.waiters);
    p_.core.read_bytes -= std::exchange(entry.charged, 0);  // the store let go of the read
    std::optional<bool> exists;
    if (unmoved && result.kind != KeyLookup::Kind::error) {
      exists = result.kind == KeyLookup::Kind::found;
    }
    for (const auto& op : entry.decisions) {
      if (result.kind == KeyLookup::Kind::error) {
        decided.push_back({op, KeyOutcome{KeyOutcome::Kind::error, result.error}, false});
      } else {
        p_.conditional.decide_locked(op, exists, decided);
      }
    }
    entry.decisions.clear();
  }
  for (auto& w : waiters) w(result);
  p_.conditional.answer(decided);
}

// unmoved: nothing overtook the read (it may then fill the cache).
KeyLookup ReadThrough::answer_locked(const std::string& key, store::ReadResult& r, bool unmoved) {
  KeyLookup result;
  // Write-behind: a write made while the read was under way is newer than what the store
  // returned (after a reset the store may hold no state the tier ever showed), so it answers.
  if (auto dirty = p_.behind.dirty().lookup(key)) return *dirty;
  if (!r.status.ok() && r.status.code != store::Code::not_found) {
    result.kind = KeyLookup::Kind::error;
    result.error = "store read failed: " + r.status.message;
    return result;
  }
  // A write of the key in the store's hands may be applied already, its callback not yet run
  // (a group commit): the read may have seen it, and the cache, which follows the callbacks,
  // may still hold an older value. It leaves the cache, so no later GET goes back behind this
  // answer; the last of those writes caches its value when its callback runs. A pending reset
  // is the same: its clear may have committed before this read ran (a miss begun before the
  // reset), while the cache, emptied only by the reset's callback, still holds the key; out of
  // the cache, the next GET of it waits for the reset (lookup() parks it).
  if (const KeyState* state = p_.keys.find_locked(key);
      (state != nullptr && state->writing > 0) || p_.core.resets_pending > 0) {
    p_.core.cache.del(key);
  }
  if (r.status.code == store::Code::not_found) return result;
  if (!ttl_left(r.expires_at_ms)) return result;  // expired since the store read it
  result.kind = KeyLookup::Kind::found;
  result.value = std::make_shared<const std::string>(std::move(r.value));
  result.expires_at_ms = r.expires_at_ms;
  if (unmoved && p_.keys.may_fill_locked(key, p_.behind.dirty().contains(key))) {
    result.version = cache_value(p_.core.cache, key, *result.value, r.expires_at_ms);
    if (result.version != 0) ++p_.core.fills;
  }
  return result;
}

}  // namespace tier
