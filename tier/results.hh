// results.hh — what a key operation answers, whether the cache alone or the durable tier
// (tier/tier.hh) decided it: the results KeyService (key_service.hh) delivers and the handlers
// render (handlers.cc). One type each, so no handler asks which of the two made it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tier {

// What a lookup beyond the cache found (GET/HEAD after a miss).
struct KeyLookup {
  enum class Kind : std::uint8_t { found, absent, error } kind = Kind::absent;
  std::shared_ptr<const std::string> value;  // found
  std::string error;                         // error: why (503)
  std::uint64_t expires_at_ms = 0;           // found: when it expires (Unix ms; 0: never)
  std::uint64_t version = 0;  // found and now cached: the cache item's version (ETag); 0: none
};

// What a PUT or DELETE did.
struct KeyOutcome {
  enum class Kind : std::uint8_t {
    created,              // 201
    replaced,             // 204
    deleted,              // 204
    absent,               // 404: DELETE of a key that does not exist
    error,                // 503: the store failed, timed out or refused (error says why)
    too_big,              // 413: the value does not fit in the cache (memory only)
    no_space,             // 507: the cache is full and its evictor is none (memory only)
    bad_key,              // 400 (memory only)
    precondition_failed,  // 412: If-Match / If-None-Match said no
  };
  Kind kind = Kind::created;
  std::string error;
  std::uint64_t version = 0;  // created/replaced: the cache item's new version (ETag); 0: none
};

}  // namespace tier
