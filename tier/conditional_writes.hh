// conditional_writes.hh — a PUT or DELETE with If-Match / If-None-Match (docs/api.md, "With a
// store"): decided under mu against the key's state once every earlier write of it has been
// answered by the store, then applied as the unconditional write is, in the same hold of mu.
// - a write of the key in the store's hands (write-through): it parks on the key's state and is
//   decided when that write's answer comes (decide_parked_locked), in order;
// - cached: the cache's version decides (the ETag a client holds names it);
// - not cached: the key has no version a client can know, so If-Match answers 412; a "*"
//   asks whether it exists: the dirty buffer (write-behind) or, failing that, the store (one
//   read; the decision is made when it returns, if nothing moved meanwhile; at most
//   kMaxStoreReads reads, then 503);
// - the key's state unknown, a reset pending, or a write of the key waiting for room in the
//   dirty buffer: 503 (retry).
// Invariants: a conditional write is decided under its own deadline, armed at write_if; one the
// deadline answered first is dropped, never applied. Its body counts in read_bytes (with the
// reads, --max-inflight) from write_if until it is decided.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/preconditions.hh"
#include "tier/key_table.hh"
#include "tier/parts.hh"

namespace tier {

using common::Preconditions;

// A conditional write waiting for its decision.
struct CondWrite {
  Kind kind;
  std::string key, value;
  std::uint64_t expires_at_ms = 0;
  Preconditions preconditions;
  // The request's answer under its own deadline, armed at write_if (an outcome settled when the
  // write is applied is delivered through it): the decision, the store read it
  // may make and the write once applied all run within one --store-timeout.
  Answer done;
  int reads = 0;  // store reads made for it (kMaxStoreReads)
  // Its key and body (+ kOpOverhead), counted in read_bytes from write_if until it is decided
  // or dropped: while it waits on the store its body stays here, also after its deadline.
  std::size_t charged = 0;
  KeyWrite write() const { return {kind, key, value, expires_at_ms}; }
};

// A decision made under mu, answered once it is released: settled (applied with an outcome known
// at once, the answer taken from the deadline: delivered) or not (412 or 503: through the
// deadline's answer, unless it answered first).
struct Decided {
  std::shared_ptr<CondWrite> op;
  KeyOutcome outcome;
  bool settled = false;
};

class ConditionalWrites {
 public:
  explicit ConditionalWrites(const Parts& parts) : p_(parts) {}

  // Answers precondition_failed (412) or what the write answers, always through done (never
  // inline: after the call returns at the earliest, except a refusal at once).
  void write_if(Kind kind, std::string_view key, std::string_view value,
                std::uint64_t expires_at_ms, const Preconditions& preconditions,
                Done<KeyOutcome> done);
  // exists_in_store: what a store read that nothing overtook says (nullopt: no such read).
  void decide_locked(const std::shared_ptr<CondWrite>& op, std::optional<bool> exists_in_store,
                     DecidedList& decided);
  // The key's last write in the store's hands was answered: its parked writes are decided in
  // order (one that submits a write parks the rest behind it again).
  void decide_parked_locked(KeyState& state, DecidedList& decided);
  // Outside mu: the decisions' answers.
  void answer(DecidedList& decided);

 private:
  void apply_locked(const std::shared_ptr<CondWrite>& op, DecidedList& decided);

  const Parts& p_;
};

}  // namespace tier
