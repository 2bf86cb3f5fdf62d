// engine_harness.hh — drives an HttpEngine against a real Cache the way Connection does
// (keep unconsumed input, collect output, call again after "writing"), without sockets.
// Shared by the engine unit tests and the allocation test. V: the request-path variant.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "cache/cache.hh"
#include "server/config.hh"
#include "server/server_context.hh"
#include "server/transport/http_engine.hh"
#include "server/transport/stats.hh"

namespace server::testing {

// Is `v` an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT")?
inline bool is_imf_fixdate(std::string_view v) {
  if (v.size() != 29 || v.substr(3, 2) != ", " || v.substr(25) != " GMT") return false;
  for (std::size_t i : {5u, 6u, 12u, 13u, 14u, 15u, 17u, 18u, 20u, 21u, 23u, 24u}) {
    if (v[i] < '0' || v[i] > '9') return false;
  }
  return v[7] == ' ' && v[11] == ' ' && v[16] == ' ' && v[19] == ':' && v[22] == ':';
}

// Removes every well-formed "Date: <IMF-fixdate>\r\n" header line; a malformed one is kept, so
// an exact comparison still fails on it.
inline std::string without_dates(std::string_view responses) {
  constexpr std::string_view kName = "\r\nDate: ";
  std::string out;
  out.reserve(responses.size());
  for (;;) {
    const auto at = responses.find(kName);
    if (at == std::string_view::npos || at + kName.size() + 29 + 2 > responses.size() ||
        !is_imf_fixdate(responses.substr(at + kName.size(), 29))) {
      out.append(responses);
      return out;
    }
    out.append(responses.substr(0, at));
    responses.remove_prefix(at + kName.size() + 29);  // keeps the line's own "\r\n"
  }
}

template <class V>
struct BasicEngineHarness {
  explicit BasicEngineHarness(Config c = {})
      : config(std::move(c)),
        cache(cache_options(config)),
        stats(1),
        ctx(config, cache, stats),
        engine(ctx, stats.worker(0)) {}

  // Feeds `bytes` in pieces of at most `step` bytes; returns every response byte produced,
  // with each response's Date header removed (without_dates) so tests can compare exact bytes.
  std::string feed(std::string_view bytes, std::size_t step = std::string_view::npos) {
    std::string responses;
    while (!bytes.empty() && !engine.must_close()) {
      const std::size_t n = std::min(step, bytes.size());
      pending.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      drain(responses);
    }
    return without_dates(responses);
  }

  // The "ETag: ...\r\n" line an answer about `key` carries now (its current version), or "".
  std::string etag_line(std::string_view key) const {
    std::string line;
    cache.get_item(key, [&](const cache::Item& item) {
      EtagBuffer buffer;
      line = "ETag: " + std::string(ctx.etags.format(item.version, buffer)) + "\r\n";
    });
    return line;
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
