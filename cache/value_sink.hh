// value_sink.hh — what the cache hands a hit to, while the shard lock is held: the stored bytes
// (ValueSink), or the item with its version and time left (ItemSink).
//
// The caller decides where the bytes go (a response buffer, a socket write, a comparison) with
// one memcpy at most and no heap allocation. The views are valid only during the call, and a
// sink must not call back into the cache.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "cache/function_ref.hh"

namespace cache {

// A stored item as Cache::get_item hands it over.
struct Item {
  std::string_view value;
  // Changes on every successful write of the key, even one of the same bytes (47 bits, counted
  // per shard; cache/entry.hh). What the server's ETag names.
  std::uint64_t version = 0;
  // Time left before the item expires (> 0); nullopt when it has no TTL.
  std::optional<std::chrono::milliseconds> ttl_left;
};

using ValueSink = FunctionRef<void(std::string_view)>;
using ItemSink = FunctionRef<void(const Item&)>;

}  // namespace cache
