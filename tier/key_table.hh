// key_table.hh — the state of every key in flight: the one record that writes, read fills and
// resets consult (per-key state and the single-flight table).
//
// A key absent from the table (and from write-behind's dirty buffer) is clean: nothing of it is
// pending, and the cache, if it holds the key, holds what the store holds.
//   clean ──write submitted──► writing (n > 0) ──commit──► clean
//                                             └──outcome unknown──► unknown ──a write of it
//                                                commits, or a reset──► clean
//   write-behind: clean ──write──► dirty(v) in the dirty buffer ──flushed at v──► clean
//                 (rewritten during its flush: dirty(v'), flushed later)
// Independently, a store read may be under way (single-flight, read_through.hh). Its fill enters
// the cache only if the key's version and the reset epoch are what they were when the read began
// (no write was submitted, applied or completed meanwhile, no reset voided it) and the key is
// neither writing, unknown nor dirty.
// Invariants:
// - versions come from one clock: a key forgotten and entered again never repeats a version, so
//   a read begun under an earlier entry can never take the new one for the state it began under;
// - an entry stays while anything of it is pending (clean() is false): a write-through write
//   names its entry by pointer until its commit's callback;
// - unknown keys are bounded by --max-dirty (kOpOverhead each); past it every key counts as
//   unknown (all_unknown) until a reset.
// Everything here runs under TierCore::mu.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tier/core.hh"

namespace tier {

struct CondWrite;  // conditional_writes.hh

struct Inflight {  // one store read and the misses waiting on it
  std::vector<LookupAnswer> waiters;
  std::vector<std::shared_ptr<CondWrite>> decisions;  // conditional writes waiting on the read
  std::size_t charged = 0;    // its misses' costs, in read_bytes until the store answers
  std::uint64_t version = 0;  // the key's KeyState::version when the read began
  std::uint64_t epoch = 0;    // TierCore::epoch when the read began
};

struct KeyState {
  std::uint32_t writing = 0;       // write-through: submitted, not yet answered by the store
  bool unknown = false;            // the last write's outcome is unknown (in unknown bytes)
  std::shared_ptr<Inflight> read;  // the store read under way, if any
  // Bumped by every write submitted, applied or completed, from the table's clock.
  std::uint64_t version = 0;
  // Conditional writes waiting for `writing` to reach 0 (write_if), decided then in order.
  std::vector<std::shared_ptr<CondWrite>> parked;
  // Write-behind: DELETEs asking the store whether the key exists (read_for_delete_locked);
  // the entry, and so its version, stays while they are out.
  std::uint32_t deletes_reading = 0;
  bool clean() const {
    return writing == 0 && !unknown && !read && parked.empty() && deletes_reading == 0;
  }
};

class KeyTable {
 public:
  using Entry = std::pair<const std::string, KeyState>;

  explicit KeyTable(TierCore& core) : core_(core) {}

  KeyState* find_locked(std::string_view key);
  // Finds the key's entry, or enters it clean with a fresh version (in a spare entry when
  // there is one: no allocation per write).
  Entry& entry_locked(std::string_view key);
  KeyState& state_locked(std::string_view key) { return entry_locked(key).second; }
  void bump_locked(KeyState& state) { state.version = ++clock_; }
  // A write of the key was submitted, applied or completed: a read under way may not fill.
  void moved_locked(std::string_view key);
  void erase_if_clean_locked(std::string_view key);  // forgets a key back to clean
  // Whether nothing overtook a read begun at (version, epoch): no write of the key, no reset.
  bool unmoved_locked(std::string_view key, std::uint64_t version, std::uint64_t epoch);
  // A fill never overwrites a newer write: none is still uncommitted, the dirty buffer does not
  // hold the key (dirty), and the store is not in doubt about it.
  bool may_fill_locked(std::string_view key, bool dirty);
  bool unknown_locked(std::string_view key);
  // The key leaves the cache and is read through until a later write of it commits.
  void mark_unknown_locked(const std::string& key);
  void clear_unknown_locked(const std::string& key);
  // A reset of unknown outcome: no key is filled until a reset succeeds.
  void all_unknown_locked() { all_unknown_ = true; }
  // A reset committed: reads under way are detached, nothing is unknown, clean entries go.
  void reset_locked();

 private:
  Entry& insert_locked(std::string_view key);

  static constexpr std::size_t kSpareKeys = 1024;

  TierCore& core_;
  KeyMap<KeyState> keys_;
  std::uint64_t clock_ = 0;                              // KeyState::version's source
  std::vector<KeyMap<KeyState>::node_type> spare_keys_;  // insert_locked
  std::size_t unknown_bytes_ = 0;                        // unknown keys, kOpOverhead each
  bool all_unknown_ = false;  // unknown keys outgrew max_dirty: no key is filled until a reset
};

}  // namespace tier
