// read_through.hh — a GET/HEAD that missed the cache: answered by the dirty buffer
// (write-behind), or by one store read per key at a time (single-flight), which fills the cache
// when nothing moved meanwhile.
//
// Invariants:
// - a miss joins a store read only if that read began at the key's current version and epoch
//   (key_table.hh); otherwise it starts a read of its own, and the superseded read answers only
//   those who joined it, and cannot fill;
// - a read that completes while writes of the key are in the store's hands evicts the key (a
//   group commit may be applied before its callbacks run: no later hit goes back behind what
//   this read saw);
// - the dirty buffer is authoritative over the store (also for a read that returns after a
//   write was made);
// - a miss arriving while a reset is pending waits for it (parked), then reads;
// - what waits is bounded by --max-inflight (TierCore::read_bytes), with conditional writes.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tier/key_table.hh"
#include "tier/parts.hh"

namespace tier {

class ReadThrough {
 public:
  using Ready = std::vector<std::pair<LookupAnswer, KeyLookup>>;  // answers to give outside mu

  explicit ReadThrough(const Parts& parts) : p_(parts) {}

  // The answer at once when the dirty buffer holds the key (or the backlog is full); otherwise
  // reads the store (single-flight) and calls done later, or at the deadline.
  std::optional<KeyLookup> lookup(std::string_view key, Done<KeyLookup> done);
  // Counts a store read of `cost` bytes into read_bytes, or says why it cannot wait (the
  // backlog is at --max-inflight). Misses and conditional writes share the bound.
  std::optional<std::string> admit_locked(std::size_t cost);
  // A store read of the key (single-flight), for a miss (answer) or a conditional write
  // (decision) or both. cost: what the request was admitted for, released with the read.
  void start_locked(const std::string& key, const LookupAnswer* answer,
                    std::shared_ptr<CondWrite> decision = nullptr, std::size_t cost = 0);
  // The reset barrier is over: the parked misses read now (or are answered by the dirty buffer).
  Ready unpark_locked();

 private:
  struct Parked {  // a miss that arrived while a reset was pending
    std::string key;
    LookupAnswer answer;
    std::size_t cost = 0;  // in read_bytes
  };
  std::optional<KeyLookup> read_parked_locked(const Parked& parked);
  void on_done(const std::string& key, Inflight& entry, store::ReadResult& r);
  KeyLookup answer_locked(const std::string& key, store::ReadResult& r, bool unmoved);

  const Parts& p_;
  std::vector<Parked> parked_;
};

}  // namespace tier
