// core.hh — what every part of the tier shares (tier.hh draws the whole): the cache and the
// store it binds, the options, the deadline, the one mutex that orders them, the reset epoch,
// the counters, and the small rules every part applies (a value's time left, which store errors
// leave a write unapplied, what a queued operation is counted for).
//
// Invariants (every part relies on them):
// - mu orders every decision and every submission to the store: the order ops reach the store
//   is the order they were decided in. Store calls made under mu never call back inline
//   (store.hh), so there is no re-entry.
// - epoch is bumped when a reset (or a reset of unknown outcome) voids the reads under way: a
//   read begun at another epoch never fills the cache nor decides a conditional write.
// - resets_pending > 0 is the barrier: misses park (read_through), conditional writes answer
//   503, the flusher holds back dirty writes made before the clear.
// - read_bytes counts what waits on the store for reads (misses and conditional writes), bounded
//   by --max-inflight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/cache.hh"
#include "store/store.hh"
#include "tier/deadline.hh"
#include "tier/options.hh"
#include "tier/results.hh"

namespace tier {

using Kind = store::Write::Kind;
// A request hands the tier its completion (deadline.hh: Done<Outcome>), answered once on a store
// thread, the flusher or the deadline thread, never inline inside the call that started it,
// except where tier.hh says so. Armed, the tier passes it around as an Answer.
using Answer = StoreDeadline::Answer<KeyOutcome>;
using LookupAnswer = StoreDeadline::Answer<KeyLookup>;

// A key write as it travels through the tier: what a PUT or DELETE asks of the store.
struct KeyWrite {
  Kind kind;
  std::string_view key;
  std::string_view value{};         // put only
  std::uint64_t expires_at_ms = 0;  // put only
};

// Conditional writes decided under mu, answered once it is released (conditional_writes.hh).
struct Decided;
using DecidedList = std::vector<Decided>;

// Bytes a queued operation is counted for beyond its key and value (its bookkeeping).
inline constexpr std::size_t kOpOverhead = 64;
// What close() gets beyond --store-timeout before the store is abandoned (shutdown()).
inline constexpr std::chrono::milliseconds kCloseGrace{5000};
// How many store reads one conditional write or write-behind DELETE may make before it answers
// 503 (each read whose key moved meanwhile is followed by another).
inline constexpr int kMaxStoreReads = 3;

inline std::size_t dirty_size(std::string_view key, std::string_view value) {
  return key.size() + value.size();
}
inline bool stored(cache::SetResult s) {
  return s == cache::SetResult::created || s == cache::SetResult::replaced;
}
// The store refused the op before applying any of it, so its outcome is known: not applied.
// Any other error (a lost connection after COMMIT, a failed fsync) may have applied it.
bool refused_unapplied(store::Code c);
// The cache's TTL for a value that expires at expires_at_ms (0: never, a zero TTL), or nullopt
// once it has expired.
std::optional<std::chrono::milliseconds> ttl_left(std::uint64_t expires_at_ms);
// Puts a value the store holds (or will) into the cache with the time it has left; an expired
// one is not cached. The cache item's new version (its ETag), or 0 when the cache does not hold
// it.
std::uint64_t cache_value(cache::Cache& cache, std::string_view key, std::string_view value,
                          std::uint64_t expires_at_ms);

// Maps keyed by std::string that a std::string_view can look up without a copy.
struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view k) const noexcept {
    return std::hash<std::string_view>{}(k);
  }
};
template <class T>
using KeyMap = std::unordered_map<std::string, T, KeyHash, std::equal_to<>>;

class TierCore {
 public:
  TierCore(cache::Cache& cache, std::unique_ptr<store::Store> store, TierOptions options);
  ~TierCore();
  TierCore(const TierCore&) = delete;
  TierCore& operator=(const TierCore&) = delete;

  bool through() const { return options.mode == WriteMode::through; }
  // A write refused before it reached the store (counted in write_errors).
  KeyOutcome refusal_locked(std::string why);
  // One line on stderr per distinct error, not one per failed request.
  void log_error_locked(const std::string& message);
  bool store_failed_locked() const { return store->stats().failed; }
  // close() joins the store's threads, and one stuck in a sync never returns: the close runs on
  // a thread of its own, waited for up to --store-timeout + kCloseGrace; past it the store is
  // abandoned, open (store_abandoned), and the process ends without it (main.cc).
  void close_store_bounded();

  cache::Cache& cache;
  std::unique_ptr<store::Store> store;
  const TierOptions options;
  // What a request the deadline answers gets, built once (deadline keeps them by reference).
  const KeyLookup timeout_lookup;
  const KeyOutcome timeout_outcome;
  const store::Status reset_timeout;
  StoreDeadline deadline;  // --store-timeout

  mutable std::mutex mu;
  // Under mu:
  std::uint64_t epoch = 0;
  std::uint32_t resets_pending = 0;  // clears submitted, not yet completed
  std::uint64_t fills = 0;
  std::uint64_t write_errors = 0;
  bool stopping = false;
  bool closed = false;
  // Without mu:
  std::atomic<bool> shutting_down{false};  // stopping, readable without mu (the flusher)
  // close() did not return in time: store is leaked, never destroyed (a thread is inside it).
  std::atomic<bool> store_abandoned{false};
  // What waits on the store for reads: key + kOpOverhead per miss, released when the store
  // answers the read it waits on (not at its deadline: the store holds the read until then);
  // key + body + kOpOverhead per conditional write, from write_if until it is decided.
  std::atomic<std::size_t> read_bytes{0};

 private:
  std::string last_logged_error_;
};

}  // namespace tier
