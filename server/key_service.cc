// key_service.cc — see key_service.hh. Each call: the memory-only answer, or the tier's (now
// when it can, else later with the ordering its kind of wait needs).
#include "server/key_service.hh"

namespace server {

void KeyService::lookup(std::string_view key, Reply<KeyLookup>& reply) {
  if (tier_ == nullptr) return reply.now(KeyLookup{});  // the cache is all there is
  const Deliver<KeyLookup> deliver = reply.later(DeferKind::read);
  if (auto now = tier_->lookup(key, deliver)) deliver(*now);
}

void KeyService::put(std::string_view key, std::string_view value, Reply<KeyOutcome>& reply) {
  if (tier_ == nullptr) return reply.now(put_memory(key, value));
  if (auto now = tier_->try_put(key, value)) return reply.now(std::move(*now));
  const Deliver<KeyOutcome> deliver = reply.later(DeferKind::write);
  if (auto now = tier_->put(key, value, deliver)) deliver(*now);
}

void KeyService::del(std::string_view key, Reply<KeyOutcome>& reply) {
  if (tier_ == nullptr) {
    return reply.now(cache_.del(key) ? KeyOutcome{KeyOutcome::Kind::deleted, {}}
                                     : KeyOutcome{KeyOutcome::Kind::absent, {}});
  }
  if (auto now = tier_->try_del(key)) return reply.now(std::move(*now));
  // Write-behind asks the store whether an unknown key exists first: a read and a write.
  const Deliver<KeyOutcome> deliver =
      reply.later(tier_->mode() == WriteMode::behind ? DeferKind::barrier : DeferKind::write);
  if (auto now = tier_->del(key, deliver)) deliver(*now);
}

void KeyService::reset(ResetScope scope, Reply<store::Status>& reply) {
  if (scope == ResetScope::cache) {
    if (tier_ != nullptr) {
      tier_->reset_cache();  // the boards stay, in memory and in the store
    } else {
      cache_.reset();
    }
    return reply.now(store::Status{});
  }
  if (tier_ == nullptr) {
    boards_.clear();
    cache_.reset();
    return reply.now(store::Status{});
  }
  const Deliver<store::Status> deliver = reply.later(DeferKind::barrier);
  // All or nothing: the boards refuse changes from the clear's submission until the store has
  // answered, then are emptied only if it committed (a failed reset keeps them).
  boards_.freeze(
      [&] { tier_->reset(deliver, [&boards = boards_](bool cleared) { boards.thaw(cleared); }); });
}

KeyOutcome KeyService::put_memory(std::string_view key, std::string_view value) {
  using K = KeyOutcome::Kind;
  switch (cache_.set(key, value)) {
    case cache::SetResult::created:
      return {K::created, {}};
    case cache::SetResult::replaced:
      return {K::replaced, {}};
    case cache::SetResult::too_big:
      return {K::too_big, {}};
    case cache::SetResult::no_space:
      return {K::no_space, {}};
    case cache::SetResult::bad_key:
      break;
  }
  return {K::bad_key, {}};
}

}  // namespace server
