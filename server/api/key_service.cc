// key_service.cc — see key_service.hh. Each call: the memory-only answer, or the tier's (now
// when it can, else later with the ordering its kind of wait needs).
#include "server/api/key_service.hh"

#include "server/api/reply.hh"
#include "server/config.hh"
#include "store/store.hh"
#include "tier/tier.hh"

namespace server {

void KeyService::lookup(std::string_view key, Reply<KeyLookup>& reply) {
  if (tier_ == nullptr) return reply.now(KeyLookup{});  // the cache is all there is
  const Later<KeyLookup> later = reply.later(DeferKind::read);
  if (auto now = tier_->lookup(key, later.completion())) later(*now);
}

namespace {
// A TTL as the wall-clock time the store keeps (store.hh, "Expiry"); 0: none.
std::uint64_t expires_at_ms(std::chrono::milliseconds ttl) {
  if (ttl.count() == 0) return 0;
  return store::unix_now_ms() + static_cast<std::uint64_t>(ttl.count());
}
}  // namespace

void KeyService::put(std::string_view key, std::string_view value, const WriteSpec& spec,
                     Reply<KeyOutcome>& reply) {
  if (tier_ == nullptr) return reply.now(put_memory(key, value, spec));
  const std::uint64_t expires = expires_at_ms(spec.ttl);
  if (spec.preconditions != nullptr) {
    // It may read the store first (whether the key exists): a read and a write.
    tier_->write_if(store::Write::Kind::put, key, value, expires, *spec.preconditions,
                    reply.later(DeferKind::barrier).completion());
    return;
  }
  if (auto now = tier_->try_put(key, value, expires)) return reply.now(std::move(*now));
  tier_->put(key, value, reply.later(DeferKind::write).completion(), expires);
}

void KeyService::del(std::string_view key, const Preconditions* preconditions,
                     Reply<KeyOutcome>& reply) {
  using K = KeyOutcome::Kind;
  if (tier_ == nullptr) {
    if (preconditions == nullptr) return reply.now({cache_.del(key) ? K::deleted : K::absent, {}});
    const auto allow = [preconditions](const std::uint64_t* v) { return preconditions->allow(v); };
    const cache::Condition condition = allow;
    switch (cache_.del(key, condition)) {
      case cache::DelResult::deleted:
        return reply.now({K::deleted, {}});
      case cache::DelResult::absent:
        return reply.now({K::absent, {}});
      case cache::DelResult::precondition_failed:
        break;
    }
    return reply.now({K::precondition_failed, {}});
  }
  if (preconditions != nullptr) {
    // It may read the store first (whether the key exists): a read and a write.
    tier_->write_if(store::Write::Kind::del, key, {}, 0, *preconditions,
                    reply.later(DeferKind::barrier).completion());
    return;
  }
  if (auto now = tier_->try_del(key)) return reply.now(std::move(*now));
  // Write-behind asks the store whether an unknown key exists first: a read and a write.
  const DeferKind kind = tier_->mode() == WriteMode::behind ? DeferKind::barrier : DeferKind::write;
  tier_->del(key, reply.later(kind).completion());
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
  const Later<store::Status> later = reply.later(DeferKind::barrier);
  // All or nothing: the boards refuse changes from the clear's submission until the store has
  // answered, then are emptied only if it committed (a failed reset keeps them).
  boards_.freeze([&] {
    tier_->reset(later.completion(), [&boards = boards_](bool cleared) { boards.thaw(cleared); });
  });
}

KeyOutcome KeyService::put_memory(std::string_view key, std::string_view value,
                                  const WriteSpec& spec) {
  using K = KeyOutcome::Kind;
  cache::WriteOptions options;
  options.ttl = spec.ttl;
  const Preconditions* pre = spec.preconditions;
  const auto allow = [pre](const std::uint64_t* v) { return pre->allow(v); };
  const cache::Condition condition = allow;  // a FunctionRef: the lambda is named first
  if (pre != nullptr) options.condition = &condition;
  const cache::Written w = cache_.set(key, value, options);
  switch (w.result) {
    case cache::SetResult::created:
      return {K::created, {}, w.version};
    case cache::SetResult::replaced:
      return {K::replaced, {}, w.version};
    case cache::SetResult::too_big:
      return {K::too_big, {}};
    case cache::SetResult::no_space:
      return {K::no_space, {}};
    case cache::SetResult::precondition_failed:
      return {K::precondition_failed, {}};
    case cache::SetResult::bad_ttl:  // the handler admits 1 s .. ten years, within the cache's
    case cache::SetResult::bad_key:
      break;
  }
  return {K::bad_key, {}};
}

TierStats KeyService::tier_stats() const {
  return tier_ != nullptr ? tier_->stats() : TierStats{};
}

}  // namespace server
