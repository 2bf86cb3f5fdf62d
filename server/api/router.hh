// router.hh — maps (method, target) to an endpoint, with no allocation and no decoding.
//
// kRouteTable is the single source of truth for the routes: one row per (method, path pattern,
// endpoint), with the row's line of the API docs. Everything else is derived from it at compile
// time, so a new route is one new row:
// - route(), the ordered dispatch: the methods are tested in order of request frequency
//   (kMethodFrequencyOrder: GET, PUT, DELETE, HEAD, POST), and within a method the rows in table
//   order, so the GET key route (the first row) takes the fewest comparisons;
// - route_naive(), its baseline (--dispatch naive): the same rows with the methods tested in the
//   reverse order and the rows of a method reversed (so the GET key route comes after /stats);
//   the same result for every input, only slower for a GET hit;
// - the 405 Allow lists (kAllow<pattern>): the table's methods for that path, in table order;
// - docs/api.md's route list (route_table_markdown(); router_test.cc checks the docs match);
// - the request-duration histogram a request is timed in (route_class(), /metrics): the row's
//   RouteClass, or `other` for the error endpoints;
// - whether a request is a write (route_writes(), the engine's request ordering): the row's
//   Access, or `read` for the error endpoints.
// Path errors are values: unknown path → 404, known path with the wrong method → 405 plus the
// Allow list, a method HTTP does not define → 501. The key and value segments (for the board
// routes: the board and member names) come back still percent-encoded; the handlers decode them
// (percent_decode.hh).
#pragma once

#include <ostream>  // boost/core/detail/string_view.hpp needs it before verb.hpp

#include <array>
#include <boost/beast/http/verb.hpp>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "server/transport/request_timing.hh"

namespace server {

enum class Endpoint : std::uint8_t {
  key_get,              // GET    /key/{k}
  key_put_body,         // PUT    /key/{k}          value = request body
  key_put_path,         // PUT    /key/{k}/{v}      value = decoded {v}
  key_delete,           // DELETE /key/{k}
  key_head,             // HEAD   /key/{k}
  root_head,            // HEAD   /
  reset,                // POST   /reset
  stats,                // GET    /stats
  metrics,              // GET    /metrics
  board_member_put,     // PUT    /board/{b}/member/{m}   body = a score, ?op=set|best|incr
  board_member_get,     // GET    /board/{b}/member/{m}
  board_member_delete,  // DELETE /board/{b}/member/{m}
  board_top,            // GET    /board/{b}/top          ?n=&offset=
  board_around,         // GET    /board/{b}/around/{m}   ?n=
  board_get,            // GET    /board/{b}
  board_delete,         // DELETE /board/{b}
  not_found,            // error: unknown path (404)
  method_not_allowed,   // error: known path, wrong method (405, see allow)
  not_implemented,      // error: a method HTTP does not define (501)
};

// The paths the server knows (matched in router.cc). Literal patterns match the path exactly.
enum class PathPattern : std::uint8_t {
  key,        // /key/{k}: one segment after /key/ (may be empty: the handler answers 400)
  key_value,  // /key/{k}/{v}: exactly two segments after /key/
  root,       // /
  reset,      // /reset
  stats,      // /stats
  metrics,    // /metrics
  // The board paths: /board/ then a board name, one segment (empty only where more follows:
  // "/board/" alone is no path; "/board//top" routes, and the handler answers 400).
  board,         // /board/{b}
  board_member,  // /board/{b}/member/{m}: exactly one segment after member/
  board_top,     // /board/{b}/top
  board_around,  // /board/{b}/around/{m}: exactly one segment after around/
};

constexpr std::string_view pattern_text(PathPattern p) {
  switch (p) {
    case PathPattern::key:
      return "/key/{k}";
    case PathPattern::key_value:
      return "/key/{k}/{v}";
    case PathPattern::root:
      return "/";
    case PathPattern::reset:
      return "/reset";
    case PathPattern::stats:
      return "/stats";
    case PathPattern::metrics:
      return "/metrics";
    case PathPattern::board:
      return "/board/{b}";
    case PathPattern::board_member:
      return "/board/{b}/member/{m}";
    case PathPattern::board_top:
      return "/board/{b}/top";
    case PathPattern::board_around:
      return "/board/{b}/around/{m}";
  }
  return "?";
}

// Whether a route changes what later requests see. A connection's requests take effect in the
// order it sent them: a write does not overtake, nor is it overtaken by, a pending read
// (ResponseQueue::blocks, response_queue.hh); the engine asks route_writes() below.
enum class Access : std::uint8_t { read, write };

struct RouteRow {
  boost::beast::http::verb method;
  PathPattern path;
  Endpoint endpoint;
  RouteClass timing;     // the request-duration histogram its requests are timed in (/metrics)
  Access access;         // write: it changes state (request ordering, the held body of a write)
  std::string_view doc;  // the "result" cell of docs/api.md's route list (Markdown, one line)
};

// The routes, in the order docs/api.md lists them. Within a method, the order is the ordered
// dispatch's test order (most frequent first).
inline constexpr RouteRow kRouteTable[] = {
    {boost::beast::http::verb::get, PathPattern::key, Endpoint::key_get, RouteClass::get,
     Access::read,
     "hit: `200`, body = the raw value, `Content-Type: application/octet-stream`. If the `Accept` "
     "header contains `application/json` (case-insensitive, anywhere in the header; q-values are "
     "not interpreted): `200`, `Content-Type: application/json`, body "
     "`{\"key\": \"<k>\", \"value\": \"<v>\"}`. Miss (or expired): `404`. Without a store a hit "
     "carries `ETag`, and `Cache-Control: max-age=R` when the key has a TTL; `If-None-Match` "
     "naming the ETag: `304` (see \"Expiry\" and \"Versions and conditional requests\")."},
    {boost::beast::http::verb::put, PathPattern::key, Endpoint::key_put_body, RouteClass::put,
     Access::write,
     "stores the request body (`Content-Length` or `Transfer-Encoding: chunked`; no body means the "
     "empty value). `201 Created` if the key was new, `204 No Content` if it replaced a value. "
     "`?ttl=SECONDS` or `Cache-Control: max-age=SECONDS` sets a TTL; `If-Match` / "
     "`If-None-Match` make it conditional (`412`); without a store both answers carry the new "
     "`ETag`."},
    {boost::beast::http::verb::put, PathPattern::key_value, Endpoint::key_put_path, RouteClass::put,
     Access::write,
     "the course form: stores the percent-decoded `{v}` (may be empty: `PUT /key/k/`). "
     "`201`/`204`, `?ttl=`, TTLs and conditions as above. A request body is read and ignored "
     "(like any request's, it may not exceed `--max-value`: over it, `413` and close)."},
    {boost::beast::http::verb::delete_, PathPattern::key, Endpoint::key_delete, RouteClass::delete_,
     Access::write,
     "`204` when deleted, `404` when absent (or expired). `If-Match` / `If-None-Match` make it "
     "conditional (`412`)."},
    {boost::beast::http::verb::head, PathPattern::key, Endpoint::key_head, RouteClass::head,
     Access::read,
     "`200` with `Content-Type: application/octet-stream` and `Content-Length` = the value's "
     "size, no body, and the headers a `GET` would carry (`ETag`, `Cache-Control`, `304`); or "
     "`404`."},
    {boost::beast::http::verb::head, PathPattern::root, Endpoint::root_head, RouteClass::head,
     Access::read, "`200`, `Content-Length: 0`."},
    {boost::beast::http::verb::post, PathPattern::reset, Endpoint::reset, RouteClass::reset,
     Access::write,
     "the admin route: empties the cache, every board and, with `--store`, the store (durably, "
     "before the answer): `204`. With `--admin-token-file` it needs `Authorization: Bearer "
     "<token>`: `401` with `WWW-Authenticate: Bearer` without it, `403` for a wrong token; with "
     "a store and neither a token nor `--allow-reset`, `403` (see \"Admin routes\"); a refused "
     "reset changes nothing. `POST /reset?scope=cache` empties only the cache and is open to "
     "all (it loses no data): the boards are kept "
     "(they are not cache), the store keeps every key (write-behind "
     "writes not yet durable still reach it) and later reads fill the cache from it again, for "
     "cold-cache measurements. `scope=all` is the default; any other `scope` is a `400`. "
     "Eviction counters are kept."},
    {boost::beast::http::verb::get, PathPattern::stats, Endpoint::stats, RouteClass::stats,
     Access::read, "`200`, `application/json`, see below."},
    {boost::beast::http::verb::get, PathPattern::metrics, Endpoint::metrics, RouteClass::metrics,
     Access::read,
     "`200`, `text/plain; version=0.0.4; charset=utf-8`: the `/stats` counters and the "
     "request-duration histograms in the Prometheus text format, see below."},
    // The boards (docs/api.md, "Boards"): names are percent-decoded like keys.
    {boost::beast::http::verb::get, PathPattern::board_member, Endpoint::board_member_get,
     RouteClass::board_read, Access::read,
     "`200` `{\"member\": m, \"score\": s, \"rank\": r}`; `404` when the board or the member "
     "is absent."},
    {boost::beast::http::verb::put, PathPattern::board_member, Endpoint::board_member_put,
     RouteClass::board_update, Access::write,
     "the body is a score. `?op=set` (the default), `best` (keeps the higher) or `incr` (adds; "
     "an absent member counts as 0). `201` when the member is new, `200` otherwise, with "
     "`{\"member\": m, \"score\": s, \"rank\": r}` after the update; the board is created by "
     "its first member. A bad score or `op`, or a result that is not finite: `400`. A new member "
     "beyond `--board-maxmem`: `507`."},
    {boost::beast::http::verb::delete_, PathPattern::board_member, Endpoint::board_member_delete,
     RouteClass::board_update, Access::write,
     "`204`, or `404`. A board's last member takes the board with it."},
    {boost::beast::http::verb::get, PathPattern::board_top, Endpoint::board_top,
     RouteClass::board_read, Access::read,
     "`?n=N&offset=K`: `n` 1..1000 (default 10), `offset` ≥ 0 (default 0). `200` "
     "`{\"board\": b, \"members\": TOTAL, \"entries\": [{\"rank\": r, \"member\": m, "
     "\"score\": s}, ...]}` from rank K+1 on (empty past the end); `404` when the board is "
     "absent."},
    {boost::beast::http::verb::get, PathPattern::board_around, Endpoint::board_around,
     RouteClass::board_read, Access::read,
     "`?n=N`, 0..500 (default 5): `200`, shaped as `top`, with the members ranked rank(m)−N to "
     "rank(m)+N, clipped at the board's ends; `404` when the board or the member is absent."},
    {boost::beast::http::verb::get, PathPattern::board, Endpoint::board_get, RouteClass::board_read,
     Access::read,
     "`200` `{\"board\": b, \"members\": N, \"top_score\": s, \"bottom_score\": s}`; "
     "`404`."},
    {boost::beast::http::verb::delete_, PathPattern::board, Endpoint::board_delete,
     RouteClass::board_update, Access::write, "`204`, or `404`."},
};

// The order route() tests methods in, most frequent first; route_naive() uses the reverse.
// Every method of kRouteTable must be in it (checked below).
inline constexpr boost::beast::http::verb kMethodFrequencyOrder[] = {
    boost::beast::http::verb::get, boost::beast::http::verb::put, boost::beast::http::verb::delete_,
    boost::beast::http::verb::head, boost::beast::http::verb::post};

struct Route {
  Endpoint endpoint;
  std::string_view key;    // percent-encoded key segment (key_*), or board name (board_*)
  std::string_view value;  // percent-encoded value segment (key_put_path), or member name
                           // (board_member_*, board_around)
  std::string_view allow;  // the Allow header value (method_not_allowed)
  std::string_view query;  // the raw query after '?' (without it), empty when none; every endpoint
};

namespace detail {

// The method tokens of the table (Beast's to_string is not constexpr).
constexpr std::string_view method_name(boost::beast::http::verb v) {
  using boost::beast::http::verb;
  switch (v) {
    case verb::get:
      return "GET";
    case verb::put:
      return "PUT";
    case verb::delete_:
      return "DELETE";
    case verb::head:
      return "HEAD";
    case verb::post:
      return "POST";
    default:
      return {};  // not a method the table may use (the checks below fail)
  }
}

constexpr std::size_t allow_length(PathPattern p) {
  std::size_t n = 0;
  for (const RouteRow& row : kRouteTable) {
    if (row.path == p) n += (n == 0 ? 0 : 2) + method_name(row.method).size();
  }
  return n;
}

template <PathPattern P>
constexpr std::array<char, allow_length(P)> make_allow() {
  std::array<char, allow_length(P)> out{};
  std::size_t n = 0;
  for (const RouteRow& row : kRouteTable) {
    if (row.path != P) continue;
    if (n != 0) {
      out[n++] = ',';
      out[n++] = ' ';
    }
    for (const char c : method_name(row.method)) out[n++] = c;
  }
  return out;
}

template <PathPattern P>
inline constexpr std::array<char, allow_length(P)> kAllowChars = make_allow<P>();

constexpr bool table_is_well_formed() {
  for (std::size_t i = 0; i < std::size(kRouteTable); ++i) {
    const RouteRow& row = kRouteTable[i];
    if (method_name(row.method).empty()) return false;  // a method method_name() does not know
    if (row.doc.find_first_of("|\n") != std::string_view::npos) return false;  // breaks the table
    bool ordered = false;
    for (const auto m : kMethodFrequencyOrder) ordered = ordered || m == row.method;
    if (!ordered) return false;  // a method missing from kMethodFrequencyOrder
    for (std::size_t j = 0; j < i; ++j) {
      const RouteRow& other = kRouteTable[j];
      if (other.method == row.method && other.path == row.path) return false;  // a duplicate
      if (other.endpoint == row.endpoint) return false;  // one row per endpoint
    }
  }
  return true;
}
static_assert(table_is_well_formed(),
              "kRouteTable: every method must be in method_name() and kMethodFrequencyOrder, "
              "each (method, path) pair and each endpoint may appear once, and a doc is one "
              "Markdown table cell (no '|', no newline)");

}  // namespace detail

// The 405 Allow list of a path: the table's methods for it, in table order, ", "-separated.
template <PathPattern P>
inline constexpr std::string_view kAllow{detail::kAllowChars<P>.data(),
                                         detail::kAllowChars<P>.size()};

inline constexpr std::string_view kKeyPrefix = "/key/";
inline constexpr std::string_view kBoardPrefix = "/board/";
inline constexpr std::string_view kAllowKey = kAllow<PathPattern::key>;
inline constexpr std::string_view kAllowKeyValue = kAllow<PathPattern::key_value>;
inline constexpr std::string_view kAllowRoot = kAllow<PathPattern::root>;
inline constexpr std::string_view kAllowReset = kAllow<PathPattern::reset>;
inline constexpr std::string_view kAllowStats = kAllow<PathPattern::stats>;
inline constexpr std::string_view kAllowMetrics = kAllow<PathPattern::metrics>;
inline constexpr std::string_view kAllowBoard = kAllow<PathPattern::board>;
inline constexpr std::string_view kAllowBoardMember = kAllow<PathPattern::board_member>;
inline constexpr std::string_view kAllowBoardTop = kAllow<PathPattern::board_top>;
inline constexpr std::string_view kAllowBoardAround = kAllow<PathPattern::board_around>;

namespace detail {
constexpr std::size_t kEndpointCount = static_cast<std::size_t>(Endpoint::not_implemented) + 1;

// One column of kRouteTable, per endpoint; `fallback` for the endpoints no row names (404, 405,
// 501).
template <class T>
constexpr std::array<T, kEndpointCount> per_endpoint(T RouteRow::*column, T fallback) {
  std::array<T, kEndpointCount> out{};
  out.fill(fallback);
  for (const RouteRow& row : kRouteTable) out[static_cast<std::size_t>(row.endpoint)] = row.*column;
  return out;
}
inline constexpr auto kRouteClasses = per_endpoint(&RouteRow::timing, RouteClass::other);
inline constexpr auto kRouteAccess = per_endpoint(&RouteRow::access, Access::read);
}  // namespace detail

// The histogram an endpoint's requests are timed in: its row's class; `other` for the errors.
constexpr RouteClass route_class(Endpoint e) {
  return detail::kRouteClasses[static_cast<std::size_t>(e)];
}
static_assert(route_class(Endpoint::key_get) == RouteClass::get &&
                  route_class(Endpoint::not_found) == RouteClass::other,
              "route classes come from kRouteTable");

// Whether an endpoint's requests change state: its row's Access; the errors (404, 405, 501)
// change nothing, so they are reads.
constexpr Access route_access(Endpoint e) {
  return detail::kRouteAccess[static_cast<std::size_t>(e)];
}
constexpr bool route_writes(Endpoint e) {
  return route_access(e) == Access::write;
}
static_assert(route_writes(Endpoint::key_put_body) && !route_writes(Endpoint::key_get) &&
                  !route_writes(Endpoint::method_not_allowed),
              "route access comes from kRouteTable");

// The /key/{k} endpoints (their requests carry the headers of expiry and conditional requests).
constexpr bool is_key_endpoint(Endpoint e) {
  return e == Endpoint::key_get || e == Endpoint::key_put_body || e == Endpoint::key_put_path ||
         e == Endpoint::key_delete || e == Endpoint::key_head;
}

// The same list for a pattern known only at run time.
std::string_view allow_list(PathPattern p);

// `target` is the request-target as sent (origin-form, or absolute-form "http://host/path");
// the query ("?...") is not part of the path: it comes back in Route::query.
Route route(boost::beast::http::verb method, std::string_view target);
Route route_naive(boost::beast::http::verb method, std::string_view target);

// docs/api.md's route list, rendered from kRouteTable: the Markdown table of routes and the
// 404/405/501 rules with every Allow list. docs/api.md holds it verbatim between
// "<!-- routes:begin -->" and "<!-- routes:end -->" (router_test.cc checks it).
std::string route_table_markdown();

}  // namespace server
