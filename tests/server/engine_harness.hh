// engine_harness.hh — drives an HttpEngine against a real Cache the way Connection does
// (keep unconsumed input, collect output, call again after "writing"), without sockets.
// Shared by the engine unit tests and the allocation test. V: the request-path variant.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "cache/cache.hh"
#include "server/config.hh"
#include "server/http_engine.hh"
#include "server/server_context.hh"
#include "server/stats.hh"

namespace server::testing {

template <class V>
struct BasicEngineHarness {
  explicit BasicEngineHarness(Config c = {})
      : config(std::move(c)),
        cache(cache_options(config)),
        stats(1),
        ctx(config, cache, stats),
        engine(ctx, stats.worker(0)) {}

  // Feeds `bytes` in pieces of at most `step` bytes; returns every response byte produced.
  std::string feed(std::string_view bytes, std::size_t step = std::string_view::npos) {
    std::string responses;
    while (!bytes.empty() && !engine.must_close()) {
      const std::size_t n = std::min(step, bytes.size());
      pending.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      drain(responses);
    }
    return responses;
  }

  // Runs the engine over the pending input until it stops producing output.
  void drain(std::string& responses) {
    for (int rounds = 0; rounds < 1'000'000; ++rounds) {
      const std::size_t used = engine.consume(pending);
      pending.erase(0, used);
      if (engine.output().empty()) return;
      responses += engine.output();
      engine.output_written();
      if (engine.must_close()) return;
    }
  }

  Config config;
  cache::Cache cache;
  StatsRegistry stats;
  ServerContext ctx;
  BasicHttpEngine<V> engine;
  std::string pending;
};

using EngineHarness = BasicEngineHarness<OptimizedVariant>;

}  // namespace server::testing
