// server_context.hh — the state every connection shares: configuration, the cache, the stats
// registry, the start time, the connection cap, the shutdown flag, the leaderboards (their byte
// budget is --board-maxmem) and the two services in front of cache, boards and durable tier.
// Owned by Server (or by a test/fuzzer), passed by reference; nothing here is global.
#pragma once

#include <cstdint>

#include <atomic>
#include <chrono>

#include "boards/registry.hh"
#include "cache/cache.hh"
#include "server/api/board_service.hh"
#include "server/api/key_service.hh"
#include "server/config.hh"
#include "server/transport/connection_limit.hh"
#include "server/transport/etag.hh"
#include "server/transport/inflight_budget.hh"
#include "server/transport/stats.hh"

namespace server {

struct ServerContext {
  // tier: the durable tier behind the cache (owned by Server), or nullptr (--store none).
  ServerContext(const Config& c, cache::Cache& k, StatsRegistry& s, StoreTier* tier = nullptr)
      : config(c),
        cache(k),
        stats(s),
        started(std::chrono::steady_clock::now()),
        connections(c.max_connections),
        inflight(c.max_inflight),
        boards(c.board_maxmem, c.board_top_cache),
        key_service(k, tier, boards),
        board_service(boards, tier, c.board_source == BoardSource::store,
                      {c.store_timeout, c.max_inflight}),
        etags(Etags::random()) {}
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  const Config& config;
  cache::Cache& cache;
  StatsRegistry& stats;
  const std::chrono::steady_clock::time_point started;
  ConnectionLimit connections;        // --max-connections: the open ones hold an admission
  InflightBudget inflight;            // --max-inflight: bytes held for connections, in sum
  std::atomic<bool> stopping{false};  // set on SIGINT/SIGTERM: finish, then close
  boards::Registry boards;            // every board by name; thread-safe
  // The services the handlers call (they decide; handlers decode and render): the same with a
  // store or without.
  KeyService key_service;
  BoardService board_service;
  // The ETags of this process (a random boot number: etag.hh): a cached item's version.
  const Etags etags;
  // --served-by: "X-Served-By: HOST:PORT\r\n", or empty (off). Set by Server::listen() before
  // any connection exists, read-only after.
  std::string served_by_line;
  // The ports bound (set by Server::listen; resp_port 0 without --resp-port): INFO reports them.
  std::uint16_t http_port = 0, resp_port = 0;
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
