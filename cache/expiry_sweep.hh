// expiry_sweep.hh — the driver both shard kinds (shard.hh, s3fifo.hh) run for one step of their
// expiry sweep: how many slots this step covers is read under the lock, then they are swept a
// chunk at a time, the exclusive lock taken per chunk so no reader waits long (a few µs).
#pragma once

#include <cstddef>

namespace cache::detail {

inline constexpr std::size_t kSweepChunk = 4096;  // slots per hold of the lock

// `slots_locked()`: the slots this step covers (0: nothing can expire); `sweep_locked(n)`: sweeps
// the next n slots and returns how many items it freed. Both run under the exclusive lock.
template <class Lock, class Mutex, class Slots, class Sweep>
std::size_t sweep_step(Mutex& mutex, const Slots& slots_locked, const Sweep& sweep_locked) {
  std::size_t todo;
  {
    typename Lock::WriteGuard lock(mutex);
    todo = slots_locked();
  }
  std::size_t freed = 0;
  while (todo > 0) {
    const std::size_t n = todo < kSweepChunk ? todo : kSweepChunk;
    typename Lock::WriteGuard lock(mutex);
    freed += sweep_locked(n);
    todo -= n;
  }
  return freed;
}

}  // namespace cache::detail
