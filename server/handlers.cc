// handlers.cc — see handlers.hh. Each handler: decode, one cache call, one response.
#include "server/handlers.hh"

#include <array>
#include <cstdio>

#include "server/json_escape.hh"
#include "server/percent_decode.hh"

namespace server {
namespace http = boost::beast::http;
using status = http::status;

namespace {

HandlerResult fail(status s, std::string_view reason) {
  return {s, reason, {}};
}

// The decoded key lives in `storage`; on failure `error` holds the result to return.
struct DecodedKey {
  std::string_view key;
  HandlerResult error;
};

using KeyBuffer = std::array<char, cache::kMaxKeyBytes>;

DecodedKey decode_key(std::string_view raw, KeyBuffer& storage) {
  if (raw.empty()) return {{}, fail(status::bad_request, "empty key")};
  const DecodeResult r = percent_decode(raw, storage);
  switch (r.status) {
    case DecodeStatus::bad_encoding:
      return {{}, fail(status::bad_request, "invalid percent-encoding")};
    case DecodeStatus::too_long:
      return {{}, fail(status::uri_too_long, "key longer than 250 bytes")};
    case DecodeStatus::ok:
      break;
  }
  if (r.size == 0) return {{}, fail(status::bad_request, "empty key")};
  return {std::string_view(storage.data(), r.size), {}};
}

bool iequals_ascii(char a, char b) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  return lower(a) == lower(b);
}

}  // namespace

bool accepts_json(std::string_view accept) {
  constexpr std::string_view needle = "application/json";
  if (accept.size() < needle.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= accept.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size() && iequals_ascii(accept[i + k], needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

template <class ValuePath>
HandlerResult Handlers::dispatch(const Route& route, const RequestView& request,
                                 ResponseWriter& out) {
  switch (route.endpoint) {
    case Endpoint::key_get:
      return get_key<ValuePath>(route.key, accepts_json(request.accept), out);
    case Endpoint::key_put_body:
      return put_key(route.key, request.body, out);
    case Endpoint::key_put_path:
      return put_key_path(route.key, route.value, out);
    case Endpoint::key_delete:
      return delete_key(route.key, out);
    case Endpoint::key_head:
      return head_key<ValuePath>(route.key, out);
    case Endpoint::root_head:
      return head_root(out);
    case Endpoint::reset:
      return reset(out);
    case Endpoint::stats:
      return stats_json(out);
    case Endpoint::not_found:
      return fail(status::not_found, "no such path");
    case Endpoint::method_not_allowed:
      return {status::method_not_allowed, "method not allowed", route.allow};
    case Endpoint::not_implemented:
      return fail(status::not_implemented, "unknown method");
  }
  return fail(status::internal_server_error, "unrouted endpoint");
}

// The hot path: decode the key, then render header + value as the value path hands it over
// (CStringValue: inside the cache's sink, under the shard lock, straight into the output buffer).
template <class ValuePath>
HandlerResult Handlers::get_key(std::string_view raw_key, bool json, ResponseWriter& out) {
  KeyBuffer storage;
  const DecodedKey k = decode_key(raw_key, storage);
  if (!k.error.ok()) return k.error;
  bool hit;
  if (!json) {
    hit = ValuePath::read(ctx.cache, k.key, [&out](std::string_view value) {
      out.start(status::ok, kOctetStream, value.size());
      out.end_headers();
      out.body(value);
    });
  } else {
    hit = ValuePath::read(ctx.cache, k.key, [&out, &k](std::string_view value) {
      constexpr std::string_view open = "{\"key\": \"", middle = "\", \"value\": \"", close = "\"}";
      out.start(status::ok, kJson,
                open.size() + json_escaped_size(k.key) + middle.size() + json_escaped_size(value) +
                    close.size());
      out.end_headers();
      std::string& b = out.buffer();
      b.append(open);
      json_escape_append(k.key, b);
      b.append(middle);
      json_escape_append(value, b);
      b.append(close);
    });
  }
  WorkerStats::bump(hit ? stats.hits : stats.misses);
  return hit ? HandlerResult{} : fail(status::not_found, "key not found");
}

HandlerResult Handlers::put_key(std::string_view raw_key, std::string_view value,
                                ResponseWriter& out) {
  KeyBuffer storage;
  const DecodedKey k = decode_key(raw_key, storage);
  if (!k.error.ok()) return k.error;
  if (value.size() > ctx.config.max_value) {
    return fail(status::payload_too_large, "value larger than --max-value");
  }
  switch (ctx.cache.set(k.key, value)) {
    case cache::SetResult::created:
      WorkerStats::bump(stats.sets);
      out.start(status::created, {}, 0);
      out.end_headers();
      return {};
    case cache::SetResult::replaced:
      WorkerStats::bump(stats.sets);
      out.no_content(status::no_content);
      return {};
    case cache::SetResult::too_big:
      return fail(status::payload_too_large, "value does not fit in the cache");
    case cache::SetResult::no_space:
      return fail(status::insufficient_storage, "cache full and evictor is none");
    case cache::SetResult::bad_key:
      return fail(status::bad_request, "invalid key");
  }
  return fail(status::internal_server_error, "unknown set result");
}

HandlerResult Handlers::put_key_path(std::string_view raw_key, std::string_view raw_value,
                                     ResponseWriter& out) {
  // The value segment came from the request line, which the parser caps at kHeaderLimitBytes.
  std::array<char, kHeaderLimitBytes> storage;
  const DecodeResult r = percent_decode(raw_value, storage);
  if (r.status == DecodeStatus::bad_encoding) {
    return fail(status::bad_request, "invalid percent-encoding");
  }
  if (r.status == DecodeStatus::too_long) {
    return fail(status::payload_too_large, "value larger than --max-value");
  }
  return put_key(raw_key, std::string_view(storage.data(), r.size), out);
}

HandlerResult Handlers::delete_key(std::string_view raw_key, ResponseWriter& out) {
  KeyBuffer storage;
  const DecodedKey k = decode_key(raw_key, storage);
  if (!k.error.ok()) return k.error;
  if (!ctx.cache.del(k.key)) return fail(status::not_found, "key not found");
  WorkerStats::bump(stats.deletes);
  out.no_content(status::no_content);
  return {};
}

template <class ValuePath>
HandlerResult Handlers::head_key(std::string_view raw_key, ResponseWriter& out) {
  KeyBuffer storage;
  const DecodedKey k = decode_key(raw_key, storage);
  if (!k.error.ok()) return k.error;
  const bool hit = ValuePath::read(ctx.cache, k.key, [&out](std::string_view value) {
    out.start(status::ok, kOctetStream, value.size());
    out.end_headers();
  });
  WorkerStats::bump(hit ? stats.hits : stats.misses);
  return hit ? HandlerResult{} : fail(status::not_found, "key not found");
}

HandlerResult Handlers::head_root(ResponseWriter& out) {
  out.no_content(status::ok);
  return {};
}

HandlerResult Handlers::reset(ResponseWriter& out) {
  ctx.cache.reset();
  out.no_content(status::no_content);
  return {};
}

HandlerResult Handlers::stats_json(ResponseWriter& out) {
  const cache::Stats c = ctx.cache.stats();
  const StatsTotals t = ctx.stats.sum();
  const double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
  char body[1024];
  const int n = std::snprintf(
      body, sizeof body,
      "{\"items\": %zu, \"space_used\": %zu, \"maxmem\": %zu, \"hits\": %llu, "
      "\"misses\": %llu, \"sets\": %llu, \"deletes\": %llu, \"evictions\": %llu, "
      "\"requests\": %llu, \"reads\": %llu, \"writes\": %llu, \"connections\": %llu, "
      "\"total_connections\": %llu, "
      "\"threads\": %u, \"evictor\": \"%s\", \"uptime_s\": %.3f, \"io_model\": \"%s\", "
      "\"shards\": %u, \"max_value\": %zu, \"variant\": \"%s\", \"lock\": \"%s\", "
      "\"value_path\": \"%s\", \"dispatch\": \"%s\", \"write_batching\": \"%s\"}",
      c.items, c.space_used, c.maxmem, static_cast<unsigned long long>(t.hits),
      static_cast<unsigned long long>(t.misses), static_cast<unsigned long long>(t.sets),
      static_cast<unsigned long long>(t.deletes), static_cast<unsigned long long>(c.evictions),
      static_cast<unsigned long long>(t.requests), static_cast<unsigned long long>(t.reads),
      static_cast<unsigned long long>(t.writes),
      static_cast<unsigned long long>(t.open_connections()),
      static_cast<unsigned long long>(t.connections_opened), ctx.config.threads,
      cache::to_string(ctx.cache.evictor()), uptime, to_string(ctx.config.io_model),
      ctx.cache.shards(), ctx.config.max_value, variant_name(ctx.config),
      cache::to_string(ctx.cache.lock_scheme()), to_string(ctx.config.value_path),
      to_string(ctx.config.dispatch), to_string(ctx.config.write_batching));
  if (n < 0 || static_cast<std::size_t>(n) >= sizeof body) {
    return fail(status::internal_server_error, "stats rendering failed");
  }
  out.start(status::ok, kJson, static_cast<std::size_t>(n));
  out.end_headers();
  out.body(std::string_view(body, static_cast<std::size_t>(n)));
  return {};
}

// The two value paths (variant.hh); everything else above is shared.
#define SERVER_INSTANTIATE_VALUE_PATH(VP)                                                \
  template HandlerResult Handlers::dispatch<VP>(const Route&, const RequestView&,        \
                                                ResponseWriter&);                        \
  template HandlerResult Handlers::get_key<VP>(std::string_view, bool, ResponseWriter&); \
  template HandlerResult Handlers::head_key<VP>(std::string_view, ResponseWriter&)
SERVER_INSTANTIATE_VALUE_PATH(CStringValue);
SERVER_INSTANTIATE_VALUE_PATH(StringValue);
#undef SERVER_INSTANTIATE_VALUE_PATH

}  // namespace server
