// handlers.cc — see handlers.hh. Each handler: decode, one cache call, one response.
#include "server/api/handlers.hh"

#include <array>
#include <charconv>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "server/api/board_handlers.hh"
#include "server/api/key_service.hh"
#include "server/api/metrics.hh"
#include "server/api/percent_decode.hh"
#include "server/api/reply.hh"
#include "server/api/ttl.hh"
#include "server/api/variant.hh"
#include "server/server_context.hh"
#include "server/transport/json_escape.hh"
#include "server/transport/response_queue.hh"
#include "server/transport/stats.hh"
#include "store/store.hh"
#include "tier/results.hh"

namespace server {
namespace http = boost::beast::http;
using status = http::status;

namespace {

struct DecodedKey {
  std::string_view key;
  HandlerResult error;
};

using KeyBuffer = NameBuffer;

// The key form of decode_name: the GET hit's, inlined with its kind known.
DecodedKey decode_key(std::string_view raw, KeyBuffer& storage) {
  const DecodedName d = decode_name(raw, storage, NameKind::key);
  return {d.name, d.error};
}

// The headers an item's answer carries: its ETag when items have versions (etags not null;
// memory only), and Cache-Control max-age with the whole seconds it has left (rounded down)
// when it has a TTL.
void item_headers(const cache::Item& item, const Etags* etags, ResponseWriter& out) {
  if (etags != nullptr) {
    EtagBuffer buffer;
    out.header_line(etags->header_line(item.version, buffer));
  }
  if (item.ttl_left) [[unlikely]] {
    constexpr std::string_view prefix = "max-age=";
    std::array<char, 32> text{};
    prefix.copy(text.data(), prefix.size());
    auto [end, ec] = std::to_chars(text.data() + prefix.size(), text.data() + text.size(),
                                   item.ttl_left->count() / 1000);
    (void)ec;
    out.header("Cache-Control", std::string_view(text.data(), end));
  }
}

// Renders an item's JSON form; false (nothing rendered) when --max-inflight has no room for it.
bool render_json_value(std::string_view key, const cache::Item& item, const Etags* etags,
                       ResponseWriter& out) {
  constexpr std::string_view open = "{\"key\": \"", middle = "\", \"value\": \"", close = "\"}";
  const std::size_t size = open.size() + json_escaped_size(key) + middle.size() +
                           json_escaped_size(item.value) + close.size();
  if (!out.head() && !out.admit(size)) return false;
  out.start(status::ok, kJson, size);
  item_headers(item, etags, out);
  out.end_headers();
  if (out.head()) return true;
  std::string& b = out.buffer();
  b.append(open);
  json_escape_append(key, b);
  b.append(middle);
  json_escape_append(item.value, b);
  b.append(close);
  return true;
}

// Renders an item's value as is; false (nothing rendered) when --max-inflight has no room for it.
bool render_raw_value(const cache::Item& item, const Etags* etags, ResponseWriter& out) {
  if (!out.head() && !out.admit(item.value.size())) return false;
  if (etags != nullptr && !item.ttl_left && out.plain()) {  // the common hit: one append
    out.ok_octet_stream(item.value, *etags, item.version);
    return true;
  }
  out.start(status::ok, kOctetStream, item.value.size());
  item_headers(item, etags, out);
  out.end_headers();
  out.body(item.value);
  return true;
}

// 304: the client's If-None-Match names the item's current ETag.
void render_not_modified(const cache::Item& item, const Etags& etags, ResponseWriter& out) {
  out.start(status::not_modified, {}, 0);
  item_headers(item, &etags, out);
  out.end_headers();
}

// A write's If-Match and If-None-Match (preconditions.hh), parsed; an empty view, else the
// 400's reason.
std::string_view parse_preconditions(const Etags& etags, const RequestView& request,
                                     Preconditions& pre) {
  return pre.parse(etags, request.has_if_match, request.if_match, request.has_if_none_match,
                   request.if_none_match);
}

// A GET's or HEAD's If-None-Match (RFC 9110 13.1.2), parsed before the cache is asked and
// tested in its sink against the item's version. (A miss answers 200: a value the store hands
// back gets a new version, which no client's tag can name.)
struct Revalidation {
  EtagList tags;
  bool active = false;

  // false on a malformed header (400).
  bool parse(const Etags& etags, const RequestView& request) {
    if (!request.has_if_none_match) return true;
    if (!etags.parse(request.if_none_match, tags)) return false;
    active = true;
    return true;
  }
  bool not_modified(const cache::Item& item) const {
    return active && tags.matches_weak(&item.version);
  }
};

// What a lookup beyond the cache answers (a HEAD's body is dropped by the writer): the value,
// its ETag when the read filled the cache (the item's version), and its TTL's max-age.
HandlerResult render_lookup(const KeyLookup& found, std::string_view key, bool json,
                            const Etags& etags, ResponseWriter& out) {
  switch (found.kind) {
    case KeyLookup::Kind::found:
      if (const cache::Item item{*found.value, found.version,
                                 store::time_left(found.expires_at_ms, store::unix_now_ms())};
          json ? render_json_value(key, item, found.version != 0 ? &etags : nullptr, out)
               : render_raw_value(item, found.version != 0 ? &etags : nullptr, out)) {
        return {};
      }
      return fail(status::service_unavailable, kInflightFull);
    case KeyLookup::Kind::absent:
      return fail(status::not_found, "key not found");
    case KeyLookup::Kind::error:
      break;
  }
  return fail(status::service_unavailable, found.error);
}

// What a PUT or DELETE answers. A write that made a version (memory only) names it in ETag.
HandlerResult render_outcome(const KeyOutcome& o, WorkerStats& stats, const Etags& etags,
                             ResponseWriter& out) {
  using K = KeyOutcome::Kind;
  const auto written = [&](status s) {
    WorkerStats::bump(stats.sets);
    out.start(s, {}, 0);
    if (o.version != 0) {
      EtagBuffer buffer;
      out.header_line(etags.header_line(o.version, buffer));
    }
    out.end_headers();
    return HandlerResult{};
  };
  switch (o.kind) {
    case K::created:
      return written(status::created);
    case K::replaced:
      return written(status::no_content);
    case K::deleted:
      WorkerStats::bump(stats.deletes);
      out.no_content(status::no_content);
      return {};
    case K::absent:
      return fail(status::not_found, "key not found");
    case K::too_big:
      return fail(status::payload_too_large, "value does not fit in the cache");
    case K::no_space:
      return fail(status::insufficient_storage, "cache full and evictor is none");
    case K::bad_key:
      return fail(status::bad_request, "invalid key");
    case K::precondition_failed:
      return fail(status::precondition_failed,
                  "precondition failed: the key's ETag does not match");
    case K::error:
      break;
  }
  return fail(status::service_unavailable, o.error);
}

// A reply to a PUT or DELETE (reply.hh), rendered by render_outcome.
auto outcome_reply(const RequestView& request, const ResponseWriter& out, WorkerStats& stats,
                   const Etags& etags) {
  return make_reply<KeyOutcome>(
      request.responses, out,
      [stats = &stats, etags = &etags](const KeyOutcome& o, ResponseWriter& w) {
        return render_outcome(o, *stats, *etags, w);
      });
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
      return get_key<ValuePath>(route.key, accepts_json(request.accept), request, out);
    case Endpoint::key_put_body:
      return put_key(route.key, request.body, request, out);
    case Endpoint::key_put_path:
      return put_key_path(route.key, route.value, request, out);
    case Endpoint::key_delete:
      return delete_key(route.key, request, out);
    case Endpoint::key_head:
      return head_key<ValuePath>(route.key, request, out);
    case Endpoint::root_head:
      return head_root(out);
    case Endpoint::reset:
      return reset(route.query, request, out);
    case Endpoint::stats:
      return stats_json(out);
    case Endpoint::metrics:
      return metrics_text(out);
    case Endpoint::board_member_get:
      return BoardHandlers{ctx, request}.get_member(route.key, route.value, out);
    case Endpoint::board_member_put:
      return BoardHandlers{ctx, request}.put_member(route.key, route.value, route.query,
                                                    request.body, out);
    case Endpoint::board_member_delete:
      return BoardHandlers{ctx, request}.delete_member(route.key, route.value, out);
    case Endpoint::board_top:
      return BoardHandlers{ctx, request}.top(route.key, route.query, out);
    case Endpoint::board_around:
      return BoardHandlers{ctx, request}.around(route.key, route.value, route.query, out);
    case Endpoint::board_get:
      return BoardHandlers{ctx, request}.get_board(route.key, out);
    case Endpoint::board_delete:
      return BoardHandlers{ctx, request}.delete_board(route.key, out);
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
// With If-None-Match naming the item's ETag, 304 instead.
template <class ValuePath, class RenderHit>
HandlerResult Handlers::read_key(std::string_view raw_key, bool json, const RequestView& request,
                                 ResponseWriter& out, RenderHit render_hit) {
  KeyBuffer storage;
  const DecodedKey k = decode_key(raw_key, storage);
  if (!k.error.ok()) return k.error;
  Revalidation revalidation;
  if (!revalidation.parse(ctx.etags, request)) {
    return fail(status::bad_request, "malformed If-None-Match");
  }
  bool admitted = true;  // --max-inflight had room for the body
  const bool hit = ctx.key_service.read_cached<ValuePath>(k.key, [&](const cache::Item& item) {
    if (revalidation.not_modified(item)) {
      return render_not_modified(item, ctx.etags, out);
    }
    admitted = render_hit(k.key, item);
  });
  WorkerStats::bump(hit ? stats.hits : stats.misses);
  if (hit) return admitted ? HandlerResult{} : fail(status::service_unavailable, kInflightFull);
  return lookup(k.key, json, request, out);
}

template <class ValuePath>
HandlerResult Handlers::get_key(std::string_view raw_key, bool json, const RequestView& request,
                                ResponseWriter& out) {
  const Etags* etags = &ctx.etags;
  return read_key<ValuePath>(
      raw_key, json, request, out, [&](std::string_view key, const cache::Item& item) {
        return json ? render_json_value(key, item, etags, out) : render_raw_value(item, etags, out);
      });
}

// PUT: the TTL (?ttl=, Cache-Control: max-age) and the conditions (If-Match, If-None-Match) are
// checked here for form, then by the cache, in one step with the write.
HandlerResult Handlers::put_key(std::string_view raw_key, std::string_view value,
                                const RequestView& request, ResponseWriter& out) {
  KeyBuffer storage;
  const DecodedKey k = decode_key(raw_key, storage);
  if (!k.error.ok()) return k.error;
  if (value.size() > ctx.config.max_value) {
    return fail(status::payload_too_large, "value larger than --max-value");
  }
  const TtlRequest ttl = parse_ttl(request.query, request.cache_control);
  if (!ttl.error.empty()) return fail(status::bad_request, ttl.error);
  Preconditions pre;
  if (const std::string_view e = parse_preconditions(ctx.etags, request, pre); !e.empty()) {
    return fail(status::bad_request, e);
  }
  const WriteSpec spec{ttl.ttl, pre.any() ? &pre : nullptr};
  auto reply = outcome_reply(request, out, stats, ctx.etags);
  ctx.key_service.put(k.key, value, spec, reply);
  return reply.answer(out);
}

HandlerResult Handlers::put_key_path(std::string_view raw_key, std::string_view raw_value,
                                     const RequestView& request, ResponseWriter& out) {
  // The value segment came from the request line, which the parser caps at kHeaderLimitBytes.
  std::array<char, kHeaderLimitBytes> storage;
  const DecodeResult r = percent_decode(raw_value, storage);
  if (r.status == DecodeStatus::bad_encoding) {
    return fail(status::bad_request, "invalid percent-encoding");
  }
  if (r.status == DecodeStatus::too_long) {
    return fail(status::payload_too_large, "value larger than --max-value");
  }
  return put_key(raw_key, std::string_view(storage.data(), r.size), request, out);
}

HandlerResult Handlers::delete_key(std::string_view raw_key, const RequestView& request,
                                   ResponseWriter& out) {
  KeyBuffer storage;
  const DecodedKey k = decode_key(raw_key, storage);
  if (!k.error.ok()) return k.error;
  Preconditions pre;
  if (const std::string_view e = parse_preconditions(ctx.etags, request, pre); !e.empty()) {
    return fail(status::bad_request, e);
  }
  auto reply = outcome_reply(request, out, stats, ctx.etags);
  ctx.key_service.del(k.key, pre.any() ? &pre : nullptr, reply);
  return reply.answer(out);
}

template <class ValuePath>
HandlerResult Handlers::head_key(std::string_view raw_key, const RequestView& request,
                                 ResponseWriter& out) {
  return read_key<ValuePath>(raw_key, false, request, out,
                             [&](std::string_view, const cache::Item& item) {
                               out.start(status::ok, kOctetStream, item.value.size());
                               item_headers(item, &ctx.etags, out);
                               out.end_headers();
                               return true;
                             });
}

// A miss: the key service answers (absent in memory only; the dirty buffer or the store with
// one). A JSON answer names the key, so a later one keeps a copy of it.
HandlerResult Handlers::lookup(std::string_view key, bool json, const RequestView& request,
                               ResponseWriter& out) {
  auto reply = make_reply<KeyLookup>(
      request.responses, out,
      [k = json ? std::string(key) : std::string(), json, &etags = ctx.etags](
          const KeyLookup& l, ResponseWriter& w) { return render_lookup(l, k, json, etags, w); });
  ctx.key_service.lookup(key, reply);
  return reply.answer(out);
}

HandlerResult Handlers::head_root(ResponseWriter& out) {
  out.no_content(status::ok);
  return {};
}

namespace {

// --- the admin check of POST /reset (config.hh's ResetGuard; docs/server.md, "Security model") --

constexpr std::string_view kResetRefused =
    "reset is disabled with a store: start with --admin-token-file or --allow-reset";
constexpr std::string_view kWrongAdminToken = "wrong admin token";
// The 401's body, rendered here rather than by ResponseWriter::error for its WWW-Authenticate
// header (RFC 6750 3: a request without credentials is told the scheme).
constexpr std::string_view kUnauthorizedBody =
    "{\"error\": \"POST /reset needs the admin token: Authorization: Bearer <token>\"}";

// The credentials of "Authorization: Bearer <token>" (the scheme is case-insensitive, RFC 9110
// 11.1); nullopt without the header or with another scheme (they count as no credentials).
std::optional<std::string_view> bearer_credentials(const RequestView& request) {
  constexpr std::string_view scheme = "Bearer";
  std::string_view v = request.authorization;
  if (!request.has_authorization || v.size() <= scheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (!iequals_ascii(v[i], scheme[i])) return std::nullopt;
  }
  if (v[scheme.size()] != ' ') return std::nullopt;
  v.remove_prefix(scheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v;
}

// Whether a full reset may go on: nullopt if so, else the answer that refuses it (and changes
// nothing): 401 without credentials, 403 for a wrong token or when resets are refused.
std::optional<HandlerResult> refuse_full_reset(const Config& config, const RequestView& request,
                                               ResponseWriter& out) {
  switch (reset_guard(config)) {
    case ResetGuard::open:
      return std::nullopt;
    case ResetGuard::refused:
      return fail(status::forbidden, kResetRefused);
    case ResetGuard::token:
      break;
  }
  const std::optional<std::string_view> presented = bearer_credentials(request);
  if (!presented) {
    out.start(status::unauthorized, kJson, kUnauthorizedBody.size());
    out.header("WWW-Authenticate", "Bearer");
    out.end_headers();
    out.body(kUnauthorizedBody);
    return HandlerResult{};
  }
  if (!admin_token_matches(config.admin_token, *presented)) {
    return fail(status::forbidden, kWrongAdminToken);
  }
  return std::nullopt;
}

}  // namespace

// POST /reset empties the cache, the boards and the store (durably, before the 204): the admin
// route, guarded by refuse_full_reset. ?scope=cache empties only the cache (cold-cache
// measurements; boards are not cache), loses no data and stays open. scope=all is the default.
HandlerResult Handlers::reset(std::string_view query, const RequestView& request,
                              ResponseWriter& out) {
  ResetScope scope = ResetScope::all;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (param == "scope=cache") {
      scope = ResetScope::cache;
    } else if (param == "scope=all") {
      scope = ResetScope::all;
    } else if (param.starts_with("scope=") || param == "scope") {
      return fail(status::bad_request, "unknown reset scope (want cache or all)");
    }
  }
  if (scope == ResetScope::all) {
    if (auto refused = refuse_full_reset(ctx.config, request, out)) return *refused;
  }
  auto reply = make_reply<store::Status>(
      request.responses, out, [](const store::Status& s, ResponseWriter& w) -> HandlerResult {
        if (!s.ok()) return {status::service_unavailable, s.message, {}, false};
        w.no_content(status::no_content);
        return {};
      });
  ctx.key_service.reset(scope, reply);
  return reply.answer(out);
}

// /stats and /metrics render the one list of counters (metrics.hh).
HandlerResult Handlers::stats_json(ResponseWriter& out) {
  const std::string json = render_stats_json(take_snapshot(ctx));
  out.start(status::ok, kJson, json.size());
  out.end_headers();
  out.body(json);
  return {};
}

HandlerResult Handlers::metrics_text(ResponseWriter& out) {
  const std::string text = render_prometheus(take_snapshot(ctx), ctx.stats.sum_timings());
  out.start(status::ok, kPrometheusContentType, text.size());
  out.end_headers();
  out.body(text);
  return {};
}

// The two value paths (variant.hh); everything else above is shared.
#define SERVER_INSTANTIATE_VALUE_PATH(VP)                                                  \
  template HandlerResult Handlers::dispatch<VP>(const Route&, const RequestView&,          \
                                                ResponseWriter&);                          \
  template HandlerResult Handlers::get_key<VP>(std::string_view, bool, const RequestView&, \
                                               ResponseWriter&);                           \
  template HandlerResult Handlers::head_key<VP>(std::string_view, const RequestView&,      \
                                                ResponseWriter&)
SERVER_INSTANTIATE_VALUE_PATH(CStringValue);
SERVER_INSTANTIATE_VALUE_PATH(StringValue);
#undef SERVER_INSTANTIATE_VALUE_PATH

}  // namespace server
