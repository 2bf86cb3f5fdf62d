// lock_policies.hh — how a shard locks: the "shared_lock reads" optimization and its baseline.
//
// A shard is instantiated with one of these types, so the choice costs nothing per operation.
#pragma once

#include <mutex>
#include <shared_mutex>

#include "cache/cache.hh"

namespace cache::detail {

// Gets run concurrently under std::shared_lock; sets, deletes and resets are exclusive.
struct SharedReads {
  using Mutex = std::shared_mutex;
  using ReadGuard = std::shared_lock<Mutex>;
  using WriteGuard = std::unique_lock<Mutex>;
  static constexpr bool kReadersShare = true;
  static constexpr LockScheme kScheme = LockScheme::shared_reads;
};

// Baseline: one exclusive mutex for every operation.
struct ExclusiveAll {
  using Mutex = std::mutex;
  using ReadGuard = std::unique_lock<Mutex>;
  using WriteGuard = std::unique_lock<Mutex>;
  static constexpr bool kReadersShare = false;
  static constexpr LockScheme kScheme = LockScheme::exclusive_all;
};

}  // namespace cache::detail
