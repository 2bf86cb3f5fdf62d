// key_service.hh — the keys' service: every decision about GET, PUT, DELETE and POST /reset,
// between the handlers (handlers.cc: decode, render) and the cache, the durable tier and the
// boards. Each call answers its Reply exactly once (reply.hh): now, or later on the
// connection's thread.
//
// Memory only (no store) and with a store are the same service: memory-only is the tier that
// completes at once (the cache's own answer), so the handlers never ask whether a store exists.
// With a store every rule of consistency is the tier's (tier/tier.hh); this file only picks
// the response's ordering (DeferKind) and the fast paths that need no deferral:
// - a cache hit is served by read_cached(), the same in both modes (the zero-copy value path);
// - a write-behind write with room answers now (StoreTier::try_put/try_del);
// - everything else that waits on the store answers later.
// Thread safety: as the cache and the tier, every method may be called from any worker.
#pragma once

#include <chrono>
#include <string_view>

#include "boards/registry.hh"
#include "cache/cache.hh"
#include "server/api/tier_names.hh"
#include "server/transport/etag.hh"

namespace server {

// What a PUT or DELETE asks beyond its key and value: a TTL (PUT) and a condition on the key's
// current version (If-Match / If-None-Match), checked and applied in one step: by the cache
// (memory only), or by the durable tier, which may first ask the store whether the key exists
// (tier/conditional_writes.hh). With a store, the TTL is durable (its expiry time is stored with
// the value).
struct WriteSpec {
  std::chrono::milliseconds ttl{0};  // 0: no expiry (and the key loses any it had); RESP's PX is ms
  const Preconditions* preconditions = nullptr;  // nullptr: unconditional
};

// POST /reset?scope=: the cache only (cold-cache measurements), or everything (cache, store,
// boards).
enum class ResetScope : std::uint8_t { cache, all };

class KeyService {
 public:
  // tier: the durable tier behind the cache, or nullptr (--store none). boards: emptied by a
  // reset of scope all.
  KeyService(cache::Cache& cache, StoreTier* tier, boards::Registry& boards)
      : cache_(cache), tier_(tier), boards_(boards) {}
  KeyService(const KeyService&) = delete;
  KeyService& operator=(const KeyService&) = delete;

  // The hit path: hands the cached value to sink (under the shard's lock, ValuePath: variant.hh);
  // false on a miss, which lookup() then answers.
  template <class ValuePath, class Sink>
  bool read_cached(std::string_view key, Sink&& sink) {
    return ValuePath::read(cache_, key, std::forward<Sink>(sink));
  }
  // A miss: absent (memory only), the dirty buffer's answer, or the store's (single-flight).
  void lookup(std::string_view key, Reply<KeyLookup>& reply);
  void put(std::string_view key, std::string_view value, const WriteSpec& spec,
           Reply<KeyOutcome>& reply);
  void del(std::string_view key, const Preconditions* preconditions, Reply<KeyOutcome>& reply);
  // scope all: the store (durably, a barrier: tier/reset.hh), then the cache and the boards,
  // all or nothing; scope cache: the cache alone (dirty writes stay and are flushed).
  void reset(ResetScope scope, Reply<store::Status>& reply);

  // /stats and /metrics: the tier's counters (scheme "none", zeros, without a store).
  TierStats tier_stats() const;

 private:
  KeyOutcome put_memory(std::string_view key, std::string_view value, const WriteSpec& spec);

  cache::Cache& cache_;
  StoreTier* const tier_;
  boards::Registry& boards_;
};

}  // namespace server
