// replay.cc — look-aside replay through cache::Cache (see replay.hh).
#include "traces/replay.hh"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace traces {
namespace {

// The cache key of an object id: its 8 bytes, so every key has the same size.
std::string_view key_of(std::uint64_t id, char (&buf)[kReplayKeyBytes]) {
  std::memcpy(buf, &id, kReplayKeyBytes);
  return {buf, kReplayKeyBytes};
}

std::string known_names() {
  std::string out;
  for (cache::Evictor e : known_evictors()) {
    if (!out.empty()) out += ", ";
    out += cache::to_string(e);
  }
  return out;
}

}  // namespace

std::size_t maxmem_for(std::size_t capacity, std::uint32_t value_bytes) {
  const std::size_t per_object = kReplayKeyBytes + value_bytes;
  if (capacity == 0) throw std::invalid_argument("replay: the cache must hold at least 1 object");
  if (capacity > std::numeric_limits<std::size_t>::max() / per_object)
    throw std::invalid_argument("replay: capacity too large");
  return capacity * per_object;
}

ReplayResult replay(std::span<const std::uint64_t> ids, cache::Evictor evictor,
                    const ReplayOptions& options) {
  cache::Options o;
  o.maxmem = maxmem_for(options.capacity, options.value_bytes);
  o.evictor = evictor;
  o.shards = 1;
  cache::Cache c(std::move(o));
  const std::string value(options.value_bytes, 'v');

  ReplayResult r;
  r.evictor = cache::to_string(evictor);
  r.capacity = options.capacity;
  char buf[kReplayKeyBytes];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string_view key = key_of(ids[i], buf);
    const bool hit = c.get(key, [](std::string_view) {});
    if (!hit) c.set(key, value);
    if (i >= options.warmup) {
      ++r.requests;
      r.hits += hit;
    }
  }
  r.evictions = c.stats().evictions;
  r.items_at_end = c.size();
  return r;
}

std::vector<cache::Evictor> known_evictors() {
  // The enum's underlying type is std::uint8_t, so every value in 0..255 is a valid Evictor; a
  // value is a policy when its name parses back to it.
  std::vector<cache::Evictor> out;
  for (unsigned u = 0; u <= std::numeric_limits<std::uint8_t>::max(); ++u) {
    const auto e = static_cast<cache::Evictor>(u);
    if (e == cache::Evictor::none) continue;
    const auto parsed = cache::parse_evictor(cache::to_string(e));
    if (parsed && *parsed == e) out.push_back(e);
  }
  return out;
}

std::vector<cache::Evictor> parse_evictor_list(std::string_view list) {
  std::vector<cache::Evictor> out;
  while (true) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    const auto e = cache::parse_evictor(name);
    if (!e) {
      throw std::invalid_argument("unknown evictor '" + std::string(name) +
                                  "' (known: " + known_names() + ", none)");
    }
    out.push_back(*e);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace traces
