// replay.hh — replays a trace through the cache library, as a look-aside client would.
//
// Each request is a GET; on a miss the key is SET with a fixed-size value. The cache has one
// shard (exact, global eviction order) and room for exactly `capacity` objects: every key is the
// 8 bytes of its object id and every value `value_bytes` long, and maxmem is capacity times
// their sum (only key+value bytes count toward maxmem; cache/cache.hh). So object-count
// simulators such as libCacheSim can be compared with it one to one.
// Evictors are whatever cache::parse_evictor accepts: new policies are replayable as soon as
// the library knows their names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache.hh"

namespace traces {

inline constexpr std::size_t kReplayKeyBytes = sizeof(std::uint64_t);
inline constexpr std::uint32_t kDefaultValueBytes = 100;

struct ReplayOptions {
  std::size_t capacity = 0;                        // objects the cache holds; > 0
  std::uint32_t value_bytes = kDefaultValueBytes;  // every SET stores this many bytes
  std::size_t warmup = 0;  // the first `warmup` requests are replayed but not counted
};

struct ReplayResult {
  std::string evictor;
  std::size_t capacity = 0;
  std::uint64_t requests = 0;   // counted requests (after the warm-up)
  std::uint64_t hits = 0;       // counted requests that hit
  std::uint64_t evictions = 0;  // over the whole replay, warm-up included
  std::size_t items_at_end = 0;
  double hit_ratio() const {
    return requests ? static_cast<double>(hits) / static_cast<double>(requests) : 0.0;
  }
};

// The maxmem that holds exactly `capacity` replayed objects.
std::size_t maxmem_for(std::size_t capacity, std::uint32_t value_bytes);

// Replays `ids` through a fresh cache with `evictor`. Throws std::invalid_argument for a zero
// capacity (or one whose maxmem overflows).
ReplayResult replay(std::span<const std::uint64_t> ids, cache::Evictor evictor,
                    const ReplayOptions& options);

// Every evictor cache::parse_evictor accepts, in the library's enum order, without `none`
// (which refuses sets once full and so is no eviction policy to compare).
std::vector<cache::Evictor> known_evictors();

// Parses a comma-separated list of evictor names. Throws std::invalid_argument naming the bad
// entry and the known names.
std::vector<cache::Evictor> parse_evictor_list(std::string_view list);

}  // namespace traces
