// router.cc — see router.hh. The two dispatch orders are two compile-time plans of kRouteTable
// (make_plan); dispatch<Plan> unrolls a plan into the same if-chain one would write by hand:
//   if (method == M1) { if (row 1 matches) return …; if (row 2 matches) return …; → 405/404 }
//   else if (method == M2) { … } … else if (method is unknown) → 501; else → 405/404
// so the table costs the hot path nothing.
#include "server/api/router.hh"

#include <utility>

namespace server {
namespace http = boost::beast::http;

namespace {

// --- the request-target ---------------------------------------------------------------------

// /key/{k} or /key/{k}/{v}, split on the first '/' after the prefix. More segments: no match.
struct KeyPath {
  bool matched = false;
  bool has_value = false;
  std::string_view key;
  std::string_view value;
};

[[gnu::always_inline]] inline KeyPath match_key_path(std::string_view path) {
  if (!path.starts_with(kKeyPrefix)) return {};
  std::string_view rest = path.substr(kKeyPrefix.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return {true, false, rest, {}};
  std::string_view value = rest.substr(slash + 1);
  if (value.find('/') != std::string_view::npos) return {};
  return {true, true, rest.substr(0, slash), value};
}

// /board/{b}, /board/{b}/member/{m}, /board/{b}/top or /board/{b}/around/{m}; anything else
// under /board/ (including "/board/" itself and extra segments) is no board path. Only board
// requests and requests no earlier row took get here, so it is parsed where it is asked for.
struct BoardPath {
  PathPattern pattern = PathPattern::root;  // meaningful when matched
  bool matched = false;
  std::string_view board;
  std::string_view member;
};

inline BoardPath match_board_path(std::string_view path) {
  if (!path.starts_with(kBoardPrefix)) return {};
  const std::string_view rest = path.substr(kBoardPrefix.size());
  if (rest.empty()) return {};
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return {PathPattern::board, true, rest, {}};
  const std::string_view board = rest.substr(0, slash);
  const std::string_view tail = rest.substr(slash + 1);
  if (tail == "top") return {PathPattern::board_top, true, board, {}};
  for (const auto& [prefix, pattern] :
       {std::pair{std::string_view("member/"), PathPattern::board_member},
        std::pair{std::string_view("around/"), PathPattern::board_around}}) {
    if (!tail.starts_with(prefix)) continue;
    const std::string_view member = tail.substr(prefix.size());
    if (member.find('/') != std::string_view::npos) return {};
    return {pattern, true, board, member};
  }
  return {};
}

constexpr bool is_board_pattern(PathPattern p) {
  return p == PathPattern::board || p == PathPattern::board_member || p == PathPattern::board_top ||
         p == PathPattern::board_around;
}

struct Target {
  std::string_view path;
  std::string_view query;  // after the first '?', without it
  KeyPath key;             // the path as a key route (matched == false if it is not one)
};

// Origin-form as is; absolute-form ("http://host:port/path?q", which RFC 9112 says servers must
// accept) reduced to its path and query (the authority ends at the first '/' or '?').
// Forced inline (with match_key_path): out of line, the Target went through memory and the GET
// hit paid for it.
[[gnu::always_inline]] inline Target parse_target(std::string_view target) {
  Target t;
  for (std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
    if (target.starts_with(scheme)) {
      const auto end = target.find_first_of("/?", scheme.size());
      if (end == std::string_view::npos) {
        target = "/";
      } else if (target[end] == '?') {
        t.path = "/";
        t.query = target.substr(end + 1);
        return t;  // "/" is not a key path
      } else {
        target = target.substr(end);
      }
      break;
    }
  }
  const auto q = target.find('?');
  t.path = target.substr(0, q);
  if (q != std::string_view::npos) t.query = target.substr(q + 1);
  t.key = match_key_path(t.path);
  return t;
}

// --- patterns ---------------------------------------------------------------------------------

template <PathPattern P>
bool matches(const Target& t) {
  if constexpr (P == PathPattern::key) {
    return t.key.matched && !t.key.has_value;
  } else if constexpr (P == PathPattern::key_value) {
    return t.key.matched && t.key.has_value;
  } else if constexpr (is_board_pattern(P)) {
    const BoardPath b = match_board_path(t.path);
    return b.matched && b.pattern == P;
  } else {
    static_assert(pattern_text(P).find('{') == std::string_view::npos,
                  "a pattern with segments needs its own matcher here");
    return t.path == pattern_text(P);
  }
}

template <PathPattern P>
Route found(Endpoint endpoint, const Target& t) {
  if constexpr (P == PathPattern::key) {
    return {endpoint, t.key.key, {}, {}, t.query};
  } else if constexpr (P == PathPattern::key_value) {
    return {endpoint, t.key.key, t.key.value, {}, t.query};
  } else if constexpr (is_board_pattern(P)) {
    const BoardPath b = match_board_path(t.path);
    return {endpoint, b.board, b.member, {}, t.query};
  } else {
    return {endpoint, {}, {}, {}, t.query};
  }
}

// The table's distinct paths, in table order (for 405 vs 404, and the docs).
constexpr std::size_t kRowCount = std::size(kRouteTable);

constexpr std::size_t count_patterns() {
  std::size_t n = 0;
  for (std::size_t i = 0; i < kRowCount; ++i) {
    bool seen = false;
    for (std::size_t j = 0; j < i; ++j) seen = seen || kRouteTable[j].path == kRouteTable[i].path;
    if (!seen) ++n;
  }
  return n;
}
constexpr std::size_t kPatternCount = count_patterns();

constexpr std::array<PathPattern, kPatternCount> distinct_patterns() {
  std::array<PathPattern, kPatternCount> out{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < kRowCount; ++i) {
    bool seen = false;
    for (std::size_t j = 0; j < n; ++j) seen = seen || out[j] == kRouteTable[i].path;
    if (!seen) out[n++] = kRouteTable[i].path;
  }
  return out;
}
constexpr std::array<PathPattern, kPatternCount> kPatterns = distinct_patterns();

// The route for a request no row takes: 405 with the path's Allow list if the path exists, else
// 404. The paths are disjoint, so their order does not matter.
template <std::size_t I = 0>
Route path_error(const Target& t) {
  if constexpr (I == kPatternCount) {
    return {Endpoint::not_found, {}, {}, {}, t.query};
  } else {
    constexpr PathPattern p = kPatterns[I];
    if (matches<p>(t)) return {Endpoint::method_not_allowed, {}, {}, kAllow<p>, t.query};
    return path_error<I + 1>(t);
  }
}

// --- the dispatch plans -----------------------------------------------------------------------

constexpr std::size_t kMethodCount = std::size(kMethodFrequencyOrder);

struct MethodGroup {
  http::verb method = http::verb::unknown;
  std::size_t first = 0;  // its rows are rows[first, first + count)
  std::size_t count = 0;
};

struct Plan {
  std::array<RouteRow, kRowCount> rows{};
  std::array<MethodGroup, kMethodCount> groups{};
};

// The table's rows grouped by method: methods in frequency order and rows in table order
// (route()), or both reversed (route_naive()).
constexpr Plan make_plan(bool reversed) {
  Plan plan;
  std::size_t n = 0;
  for (std::size_t g = 0; g < kMethodCount; ++g) {
    const http::verb method = kMethodFrequencyOrder[reversed ? kMethodCount - 1 - g : g];
    plan.groups[g] = {method, n, 0};
    for (std::size_t k = 0; k < kRowCount; ++k) {
      const RouteRow& row = kRouteTable[reversed ? kRowCount - 1 - k : k];
      if (row.method != method) continue;
      plan.rows[n++] = row;
      ++plan.groups[g].count;
    }
  }
  return plan;
}

constexpr Plan kOrderedPlan = make_plan(false);
constexpr Plan kNaivePlan = make_plan(true);

// What the derivation must give (router.hh's promise; docs/server.md, "Variants").
static_assert(kOrderedPlan.rows[0].method == http::verb::get &&
                  kOrderedPlan.rows[0].path == PathPattern::key,
              "the ordered dispatch tests the GET key route first");
static_assert(kNaivePlan.groups[0].method == http::verb::post &&
                  kNaivePlan.groups[kMethodCount - 1].method == http::verb::get &&
                  kNaivePlan.rows[kRowCount - 1].endpoint == Endpoint::key_get,
              "the naive dispatch tests POST first and the GET key route last");

// The rows of group G from row R on: the first that matches, else the path's error.
template <const Plan& P, std::size_t G, std::size_t R>
Route in_group(const Target& t) {
  if constexpr (R == P.groups[G].first + P.groups[G].count) {
    return path_error(t);
  } else {
    constexpr RouteRow row = P.rows[R];
    if (matches<row.path>(t)) return found<row.path>(row.endpoint, t);
    return in_group<P, G, R + 1>(t);
  }
}

// The method groups from G on; past the last one, an unknown method is a 501.
template <const Plan& P, std::size_t G = 0>
Route dispatch(http::verb method, const Target& t) {
  if constexpr (G == kMethodCount) {
    if (method == http::verb::unknown) return {Endpoint::not_implemented, {}, {}, {}, t.query};
    return path_error(t);
  } else {
    if (method == P.groups[G].method) return in_group<P, G, P.groups[G].first>(t);
    return dispatch<P, G + 1>(method, t);
  }
}

}  // namespace

Route route(http::verb method, std::string_view target) {
  return dispatch<kOrderedPlan>(method, parse_target(target));
}

// The baseline: the same plan reversed. Must agree with route() everywhere (router_test.cc).
Route route_naive(http::verb method, std::string_view target) {
  return dispatch<kNaivePlan>(method, parse_target(target));
}

std::string_view allow_list(PathPattern p) {
  switch (p) {
    case PathPattern::key:
      return kAllow<PathPattern::key>;
    case PathPattern::key_value:
      return kAllow<PathPattern::key_value>;
    case PathPattern::root:
      return kAllow<PathPattern::root>;
    case PathPattern::reset:
      return kAllow<PathPattern::reset>;
    case PathPattern::stats:
      return kAllow<PathPattern::stats>;
    case PathPattern::metrics:
      return kAllow<PathPattern::metrics>;
    case PathPattern::board:
      return kAllow<PathPattern::board>;
    case PathPattern::board_member:
      return kAllow<PathPattern::board_member>;
    case PathPattern::board_top:
      return kAllow<PathPattern::board_top>;
    case PathPattern::board_around:
      return kAllow<PathPattern::board_around>;
  }
  return {};
}

std::string route_table_markdown() {
  std::string md = "| request | result |\n|---|---|\n";
  for (const RouteRow& row : kRouteTable) {
    md += "| `";
    md += detail::method_name(row.method);
    md += ' ';
    md += pattern_text(row.path);
    md += "` | ";
    md += row.doc;
    md += " |\n";
  }
  md +=
      "\nAny other path is a `404`. A known path with a method not listed for it is a `405` whose "
      "`Allow` header lists the path's methods: ";
  for (std::size_t i = 0; i < kPatternCount; ++i) {
    md += i == 0 ? "" : "; ";
    md += '`';
    md += pattern_text(kPatterns[i]);
    md += "` → `";
    md += allow_list(kPatterns[i]);
    md += '`';
  }
  md += ". A method HTTP does not define (e.g. `BREW`) is a `501`.\n";
  return md;
}

}  // namespace server
