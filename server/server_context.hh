// server_context.hh — the state every connection shares: configuration, the cache, the stats
// registry, the start time, the connection cap, the shutdown flag, the durable tier (if any) and
// the leaderboards (memory only; their byte budget is --board-maxmem).
// Owned by Server (or by a test/fuzzer), passed by reference; nothing here is global.
#pragma once

#include <atomic>
#include <chrono>

#include "boards/registry.hh"
#include "cache/cache.hh"
#include "server/config.hh"
#include "server/connection_limit.hh"
#include "server/inflight_budget.hh"
#include "server/stats.hh"

namespace server {

class StoreTier;

struct ServerContext {
  ServerContext(const Config& c, cache::Cache& k, StatsRegistry& s)
      : config(c),
        cache(k),
        stats(s),
        started(std::chrono::steady_clock::now()),
        connections(c.max_connections),
        inflight(c.max_inflight),
        boards(c.board_maxmem, c.board_top_cache) {}
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  const Config& config;
  cache::Cache& cache;
  StatsRegistry& stats;
  const std::chrono::steady_clock::time_point started;
  ConnectionLimit connections;        // --max-connections: the open ones hold an admission
  InflightBudget inflight;            // --max-inflight: bytes held for connections, in sum
  std::atomic<bool> stopping{false};  // set on SIGINT/SIGTERM: finish, then close
  StoreTier* tier = nullptr;          // the durable tier behind the cache; null with --store none
  boards::Registry boards;            // every board by name (board_handlers.hh); thread-safe
  // --served-by: "X-Served-By: HOST:PORT\r\n", or empty (off). Set by Server::listen() before
  // any connection exists, read-only after.
  std::string served_by_line;
};

// The cache options the server uses for a config (sharded so workers rarely share a lock).
inline cache::Options cache_options(const Config& config) {
  cache::Options options;
  options.maxmem = config.maxmem;
  options.evictor = config.evictor;
  options.shards = shard_count(config);
  options.lock = config.lock;
  return options;
}

}  // namespace server
