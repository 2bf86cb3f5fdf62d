// options.hh — how the durable tier is configured (--write-mode, --store-timeout,
// --flush-interval, --max-dirty, --max-inflight) and what it counts (/stats, /metrics). The
// server's flags fill TierOptions (server/config.hh); nothing here knows of HTTP.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "store/store.hh"

namespace tier {

// When a write (PUT/DELETE) is answered, with a durable store (--store) behind the cache. The
// server's Config names it by its declaration alone (server/config.hh: the transport includes
// the config, and reaches nothing in tier/), and defaults to WriteMode{}: through.
enum class WriteMode : std::uint8_t {
  through,  // once it is durable in the store
  behind,   // once it is in the cache; it reaches the store within --flush-interval
};
static_assert(WriteMode{} == WriteMode::through, "Config's default --write-mode");
inline const char* to_string(WriteMode m) {  // "through" / "behind"
  return m == WriteMode::through ? "through" : "behind";
}

struct TierOptions {
  WriteMode mode = WriteMode::through;
  std::chrono::milliseconds store_timeout{2000};
  std::chrono::milliseconds flush_interval{100};  // 0: no flusher thread (flush_step())
  std::size_t max_dirty = 64u << 20;
  // --max-inflight: bounds write-behind's writes waiting for room, and the reads waiting on the
  // store (each apart), as request bytes held for connections.
  std::size_t max_waiting = 256u << 20;
};

struct TierStats {
  const char* scheme = "none";
  store::StoreStats store;
  std::uint64_t dirty_bytes = 0;
  std::uint64_t dirty_items = 0;
  std::uint64_t readthrough_fills = 0;
  std::uint64_t write_errors = 0;  // writes refused before reaching the store (it had failed)
};

}  // namespace tier
