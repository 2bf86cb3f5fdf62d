// conditional_writes.cc — see conditional_writes.hh.
#include "tier/conditional_writes.hh"

#include <utility>
#include <vector>

#include "tier/read_through.hh"
#include "tier/write_behind.hh"

namespace tier {

namespace {
// Gives back what a conditional write was admitted for (its key and body in read_bytes): once
// it is decided, dropped or answered.
void release_charge(TierCore& core, CondWrite& op) {
  core.read_bytes -= std::exchange(op.charged, 0);
}
}  // namespace

void ConditionalWrites::write_if(Kind kind, std::string_view key, std::string_view value,
                                 std::uint64_t expires_at_ms, const Preconditions& preconditions,
                                 Done<KeyOutcome> done) {
  TierCore& core = p_.core;
  DecidedList decided;
  std::optional<KeyOutcome> refused;
  {
    std::lock_guard lock(core.mu);
    // Its body may wait on the store (behind a commit of the key, or on an existence read):
    // bounded with the reads by --max-inflight, refused at once past it.
    const std::size_t cost = dirty_size(key, value) + kOpOverhead;
    if (auto full = p_.reads.admit_locked(cost)) {
      refused = core.refusal_locked(std::move(*full));
    } else {
      auto op = std::make_shared<CondWrite>(
          CondWrite{kind, std::string(key), std::string(value), expires_at_ms, preconditions,
                    core.deadline.arm(done, core.timeout_outcome)});
      op->charged = cost;
      decide_locked(op, std::nullopt, decided);
    }
  }
  if (refused) done->answer(*refused);
  answer(decided);
}

// The decision, made where the key's state is settled (see the header).
void ConditionalWrites::decide_locked(const std::shared_ptr<CondWrite>& op,
                                      std::optional<bool> exists_in_store, DecidedList& decided) {
  if (op->done.answered()) {  // answered 503 at its deadline: dropped, never applied
    release_charge(p_.core, *op);
    return;
  }
  const auto answer = [&](KeyOutcome::Kind kind, std::string why = {}) {
    decided.push_back({op, KeyOutcome{kind, std::move(why)}, false});
  };
  const std::string& key = op->key;
  if (p_.core.resets_pending > 0) {
    return answer(KeyOutcome::Kind::error,
                  "a reset is pending; conditional writes are refused "
                  "until it completes (retry)");
  }
  if (p_.keys.unknown_locked(key)) {
    return answer(KeyOutcome::Kind::error,
                  "the key's state is unknown (an earlier write of it has an unknown outcome); "
                  "a conditional write cannot be decided until it is written unconditionally");
  }
  if (KeyState* state = p_.keys.find_locked(key); state != nullptr && state->writing > 0) {
    state->parked.push_back(op);  // decided once the store has answered
    return;
  }
  if (!p_.core.through() && p_.behind.waiting_for_locked(key)) {
    return answer(KeyOutcome::Kind::error,
                  "a write of this key waits for room in the dirty buffer; retry");
  }
  const Preconditions& pre = op->preconditions;
  std::optional<bool> allowed;
  std::uint64_t version = 0;
  if (p_.core.cache.get_item(key, [&](const cache::Item& item) { version = item.version; })) {
    allowed = pre.allow(&version);
  } else if (auto dirty = p_.behind.dirty().lookup(key)) {
    const bool exists = dirty->kind == KeyLookup::Kind::found;
    allowed = pre.allow(exists ? &Preconditions::kUnknowable : nullptr);
  } else if (!pre.needs_existence()) {
    allowed = pre.allow(nullptr);
  } else if (exists_in_store) {
    allowed = pre.allow(*exists_in_store ? &Preconditions::kUnknowable : nullptr);
  }
  if (!allowed) {  // only the store knows whether the key exists
    if (++op->reads > kMaxStoreReads) {
      return answer(KeyOutcome::Kind::error,
                    "the key kept changing while a conditional write "
                    "looked it up in the store; retry");
    }
    return p_.reads.start_locked(key, nullptr, op);  // its charge covers the read
  }
  if (!*allowed) return answer(KeyOutcome::Kind::precondition_failed);
  apply_locked(op, decided);
}

void ConditionalWrites::decide_parked_locked(KeyState& state, DecidedList& decided) {
  if (state.parked.empty()) return;
  std::vector<std::shared_ptr<CondWrite>> parked;
  parked.swap(state.parked);
  for (std::size_t i = 0; i < parked.size(); ++i) {
    decide_locked(parked[i], std::nullopt, decided);
    // A decision that submitted a write parks the rest behind it again, in order.
    if (state.writing > 0) {
      state.parked.insert(state.parked.end(), parked.begin() + i + 1, parked.end());
      break;
    }
  }
}

// The condition holds: the write goes the way an unconditional one goes, now, under the same
// hold of mu, and under the request's own deadline: at one --store-timeout from the request's
// arrival it answers 503, the write possibly still taking effect (write-through, the commit under
// way) or dropped unapplied (write-behind, still waiting for room), as for an unconditional
// write. An outcome known at once has been settled: it is delivered through done.
void ConditionalWrites::apply_locked(const std::shared_ptr<CondWrite>& op, DecidedList& decided) {
  // Its charge is given back: the write goes on as an unconditional one, under its bounds.
  release_charge(p_.core, *op);
  if (std::optional<KeyOutcome> now = write_locked(p_, op->write(), op->done)) {
    decided.push_back({op, std::move(*now), true});
  }
}

void ConditionalWrites::answer(DecidedList& decided) {
  for (Decided& d : decided) {
    d.op->value = {};  // the answer needs no body
    release_charge(p_.core, *d.op);
    if (d.settled) {
      d.op->done.deliver(d.outcome);
    } else {
      d.op->done(d.outcome);
    }
  }
  decided.clear();
}

}  // namespace tier
