// lock_policies.hh — how a shard locks: the "shared_lock reads" optimization and its baseline.
//
// A shard is instantiated with one of these types, so the choice costs nothing per operation.
#pragma once

#include <mutex>
#include <shared_mutex>

#include "cache/cache.hh"

namespace cache::detail {

// A shard's lock: its mutex, the guard a get takes and the guard the writes take.
template <LockScheme S, class M, template <class> class ReadLock>
struct LockPolicy {
  using Mutex = M;
  using ReadGuard = ReadLock<Mutex>;
  using WriteGuard = std::unique_lock<Mutex>;
  static constexpr bool kReadersShare = S == LockScheme::shared_reads;
  static constexpr LockScheme kScheme = S;
};

// Gets run concurrently under std::shared_lock; sets, deletes and resets are exclusive.
using SharedReads = LockPolicy<LockScheme::shared_reads, std::shared_mutex, std::shared_lock>;

// Baseline: one exclusive mutex for every operation.
using ExclusiveAll = LockPolicy<LockScheme::exclusive_all, std::mutex, std::unique_lock>;

}  // namespace cache::detail
