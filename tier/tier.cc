// tier.cc — see tier.hh: the parts wired together, and the entry points that are one part's
// call or the mode's choice between two.
#include "tier/tier.hh"

namespace tier {

StoreTier::StoreTier(cache::Cache& cache, std::unique_ptr<store::Store> store, TierOptions options)
    : core_(cache, std::move(store), options),
      parts_{core_, keys_, reads_, through_, behind_, conditional_, barrier_},
      keys_(core_),
      reads_(parts_),
      through_(parts_),
      behind_(parts_),
      conditional_(parts_),
      barrier_(parts_) {
  if (!core_.through()) behind_.flusher().start();
}

StoreTier::~StoreTier() {
  shutdown();
}

std::optional<KeyOutcome> write_locked(const Parts& parts, const KeyWrite& w, const Answer& done) {
  return parts.core.through() ? parts.through.write_locked(w, done)
                              : parts.behind.write_locked(w, done);
}

std::optional<KeyOutcome> StoreTier::try_put(std::string_view key, std::string_view value,
                                             std::uint64_t expires_at_ms) {
  if (core_.through()) return std::nullopt;
  return behind_.try_put(key, value, expires_at_ms);
}

std::optional<KeyOutcome> StoreTier::try_del(std::string_view key) {
  if (core_.through()) return std::nullopt;
  return behind_.try_del(key);
}

void StoreTier::put(std::string_view key, std::string_view value, Done<KeyOutcome> done,
                    std::uint64_t expires_at_ms) {
  write({Kind::put, key, value, expires_at_ms}, std::move(done));
}

void StoreTier::del(std::string_view key, Done<KeyOutcome> done) {
  write({Kind::del, key}, std::move(done));
}

// Every immediate outcome is settled (the deadline's claim taken) before the write is applied:
// a write the deadline answered first (it may have waited that long for mu behind a long flush
// or reset) is dropped, never applied after its 503. An immediate outcome is answered through
// done once mu is released.
void StoreTier::write(const KeyWrite& w, Done<KeyOutcome> done) {
  const Answer answer = core_.deadline.arm(std::move(done), core_.timeout_outcome);
  std::optional<KeyOutcome> now;
  {
    std::lock_guard lock(core_.mu);
    if (answer.answered()) return;
    now = write_locked(parts_, w, answer);
  }
  if (now) answer.deliver(*now);
}

TierStats StoreTier::stats() const {
  TierStats t;
  t.scheme = core_.store->scheme();
  t.store = core_.store->stats();
  std::lock_guard lock(core_.mu);
  t.dirty_bytes = behind_.dirty().bytes();
  t.dirty_items = behind_.dirty().items();
  t.readthrough_fills = core_.fills;
  t.write_errors = core_.write_errors;
  if (behind_.flusher().failing_locked()) {  // write-behind refuses writes: the store counts as
    t.store.failed = true;                   // failed meanwhile
    if (t.store.last_error.empty()) t.store.last_error = behind_.flusher().error_locked();
  }
  return t;
}

}  // namespace tier
