// parts.hh — how the tier's parts reach one another. StoreTier (tier.hh) owns one of each and
// hands every part this table of references at construction; a part keeps it and calls the
// others through it, always under the one mutex (TierCore::mu) where a name ends in _locked.
#pragma once

#include <optional>

#include "tier/core.hh"

namespace tier {

class KeyTable;           // key_table.hh: per-key state
class ReadThrough;        // read_through.hh: misses, single-flight store reads
class WriteThrough;       // write_through.hh: writes answered after their commit
class WriteBehindBuffer;  // write_behind.hh: the dirty buffer, waiting writes, the flusher
class ConditionalWrites;  // conditional_writes.hh: If-Match / If-None-Match
class ResetBarrier;       // reset.hh: POST /reset as a barrier

struct Parts {
  TierCore& core;
  KeyTable& keys;
  ReadThrough& reads;
  WriteThrough& through;
  WriteBehindBuffer& behind;
  ConditionalWrites& conditional;
  ResetBarrier& barrier;
};

// The one place the write mode decides where a key write goes: submitted to the store
// (write-through) or into the dirty buffer (write-behind). An immediate outcome (a refusal, or
// a write-behind write applied now) is returned with `done` settled; nullopt: done is answered
// later (or was answered already by its deadline).
std::optional<KeyOutcome> write_locked(const Parts& parts, const KeyWrite& w, const Answer& done);

}  // namespace tier
