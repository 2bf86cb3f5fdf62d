// http_engine_fuzz.cc — libFuzzer target over the server's request path: the input bytes go
// through the same HttpEngine (Beast parser → router → handlers → real Cache → response writer)
// that every connection runs, delivered in pieces the way reads deliver them, with the
// connection's input-buffer limit. Checks invariants that must hold for any input: every
// response starts with a status line, the engine never loops, the cache stays within maxmem.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cache/cache.hh"
#include "server/config.hh"
#include "server/server_context.hh"
#include "server/transport/connection.hh"
#include "server/transport/http_engine.hh"
#include "server/transport/stats.hh"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

server::Config fuzz_config() {
  server::Config c;
  c.maxmem = 64 * 1024;  // small, so evictions and 413s happen
  c.max_value = 4 * 1024;
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const server::Config config = fuzz_config();
  cache::Cache cache(server::cache_options(config));
  server::StatsRegistry stats(1);
  server::ServerContext ctx(config, cache, stats);
  server::HttpEngine engine(ctx, stats.worker(0));

  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string pending;
  std::uint32_t rng = static_cast<std::uint32_t>(size) * 2654435761u + 1;  // split points
  std::size_t offset = 0;
  while (offset < input.size() && !engine.must_close()) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    const std::size_t piece = 1 + rng % 512;
    const std::size_t room = server::kInputLimitBytes - pending.size();
    const std::size_t n = std::min({piece, room, input.size() - offset});
    pending.append(input.substr(offset, n));
    offset += n;
    for (int rounds = 0;; ++rounds) {
      check(rounds < 100000);
      const std::size_t used = engine.consume(pending);
      check(used <= pending.size());
      pending.erase(0, used);
      if (engine.output().empty()) break;
      check(engine.output().starts_with("HTTP/1.1 "));
      engine.output_written();
      if (engine.must_close()) break;
    }
    if (!engine.must_close() && pending.size() == server::kInputLimitBytes) {
      engine.input_overflow();  // what Connection does when the buffer is full
      check(engine.output().starts_with("HTTP/1.1 400 "));
      engine.output_written();
    }
  }
  check(cache.space_used() <= cache.maxmem());
  return 0;
}
