// options.hh — how the durable tier is configured (--write-mode, --store-timeout,
// --flush-interval, --max-dirty, --max-inflight) and what it counts (/stats, /metrics). The
// server's flags fill TierOptions (server/config.hh); nothing here knows of HTTP.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "common/write_mode.hh"
#include "store/store.hh"

namespace tier {

// When a write (PUT/DELETE) is answered (common/write_mode.hh: the server's Config names it too).
using common::to_string;
using common::WriteMode;

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
