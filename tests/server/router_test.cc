// router_test.cc — unit tests of method/path routing, including 404/405/501 decisions, the query,
// what route() and route_naive() derive from the route table, and the docs' route list.
#include "server/api/router.hh"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "server/api/variant.hh"

namespace server {
namespace {
using boost::beast::http::verb;

TEST(Router, KeyRoutesByMethod) {
  EXPECT_EQ(route(verb::get, "/key/abc").endpoint, Endpoint::key_get);
  EXPECT_EQ(route(verb::get, "/key/abc").key, "abc");
  EXPECT_EQ(route(verb::put, "/key/abc").endpoint, Endpoint::key_put_body);
  EXPECT_EQ(route(verb::delete_, "/key/abc").endpoint, Endpoint::key_delete);
  EXPECT_EQ(route(verb::head, "/key/abc").endpoint, Endpoint::key_head);
}

TEST(Router, PutWithValueSegment) {
  const Route r = route(verb::put, "/key/k%2F1/v%20x");
  EXPECT_EQ(r.endpoint, Endpoint::key_put_path);
  EXPECT_EQ(r.key, "k%2F1");
  EXPECT_EQ(r.value, "v%20x");
  const Route empty_value = route(verb::put, "/key/k/");
  EXPECT_EQ(empty_value.endpoint, Endpoint::key_put_path);
  EXPECT_EQ(empty_value.value, "");
}

TEST(Router, EmptyKeyStillRoutesSoTheHandlerAnswers400) {
  EXPECT_EQ(route(verb::get, "/key/").endpoint, Endpoint::key_get);
  EXPECT_EQ(route(verb::get, "/key/").key, "");
}

TEST(Router, FixedRoutes) {
  EXPECT_EQ(route(verb::head, "/").endpoint, Endpoint::root_head);
  EXPECT_EQ(route(verb::post, "/reset").endpoint, Endpoint::reset);
  EXPECT_EQ(route(verb::get, "/stats").endpoint, Endpoint::stats);
  EXPECT_EQ(route(verb::get, "/metrics").endpoint, Endpoint::metrics);
  EXPECT_EQ(route(verb::get, "/metrics?x").endpoint, Endpoint::metrics);
  EXPECT_EQ(route(verb::get, "/metrics/x").endpoint, Endpoint::not_found);
}

// Expects both dispatches to route (method, target) to endpoint with these board and member.
void expect_board_route(verb method, const std::string& target, Endpoint endpoint,
                        std::string_view board, std::string_view member) {
  for (const Route& r : {route(method, target), route_naive(method, target)}) {
    EXPECT_EQ(r.endpoint, endpoint) << target;
    EXPECT_EQ(r.key, board) << target;
    EXPECT_EQ(r.value, member) << target;
  }
}

TEST(Router, BoardRoutesByMethod) {
  // Each board path, with the endpoint of each method it takes; "B" and "M" stand for the
  // board's and the member's segment.
  struct MethodEndpoint {
    verb method;
    Endpoint endpoint;
  };
  struct Shape {
    std::string_view path;
    std::vector<MethodEndpoint> endpoints;
  };
  const std::vector<Shape> shapes = {
      {"/board/B/member/M",
       {{verb::get, Endpoint::board_member_get},
        {verb::put, Endpoint::board_member_put},
        {verb::delete_, Endpoint::board_member_delete}}},
      {"/board/B/top", {{verb::get, Endpoint::board_top}}},
      {"/board/B/around/M", {{verb::get, Endpoint::board_around}}},
      {"/board/B", {{verb::get, Endpoint::board_get}, {verb::delete_, Endpoint::board_delete}}},
  };
  // Segments come back percent-encoded; names that look like the path's words are names.
  const std::vector<std::pair<std::string_view, std::string_view>> names = {
      {"b", "m"},        {"b%2F1", "m%20x"}, {"top", "member"},
      {"member", "top"}, {"around", "top"},  {"around", "around"}};
  for (const Shape& shape : shapes) {
    for (const auto& [board, member] : names) {
      const bool has_member = shape.path.ends_with('M');
      std::string target(shape.path);
      target.replace(target.find('B'), 1, board);
      if (has_member) target.replace(target.size() - 1, 1, member);
      for (const MethodEndpoint& m : shape.endpoints) {
        expect_board_route(m.method, target, m.endpoint, board, has_member ? member : "");
      }
    }
  }
  // Empty names route: the handler answers 400, as for /key//v.
  expect_board_route(verb::get, "/board//top", Endpoint::board_top, "", "");
  expect_board_route(verb::put, "/board/b/member/", Endpoint::board_member_put, "b", "");
  expect_board_route(verb::get, "/board/b/around/", Endpoint::board_around, "b", "");
  expect_board_route(verb::get, "http://h:1/board/b/top?n=3", Endpoint::board_top, "b", "");
  const Route top = route(verb::get, "/board/b/top?n=5&offset=10");
  EXPECT_EQ(top.endpoint, Endpoint::board_top);
  EXPECT_EQ(top.query, "n=5&offset=10");
  EXPECT_EQ(route(verb::put, "/board/b/member/m?op=incr").query, "op=incr");
}

TEST(Router, UnknownBoardPathsAre404) {
  for (const char* path : {"/board", "/board/", "/board/b/nope", "/board/b/member/m/extra",
                           "/board/b/", "/board/b/top/", "/board/b/top/x", "/board/b/member",
                           "/board/b/around", "/board/b/around/m/x", "/board/b/Top", "/boards/b",
                           "/Board/b", "//board/b", "/board/b/members/m"}) {
    for (const verb m : {verb::get, verb::put, verb::delete_, verb::post, verb::head}) {
      EXPECT_EQ(route(m, path).endpoint, Endpoint::not_found) << path;
      EXPECT_EQ(route_naive(m, path).endpoint, Endpoint::not_found) << path;
    }
  }
}

// A method a path does not take: 405 with the path's methods in Allow, from both dispatches.
struct AllowCase {
  verb method;
  const char* path;
  std::string_view allow;
};
void expect_405(std::initializer_list<AllowCase> cases) {
  for (const AllowCase& c : cases) {
    for (const Route& r : {route(c.method, c.path), route_naive(c.method, c.path)}) {
      EXPECT_EQ(r.endpoint, Endpoint::method_not_allowed) << c.path;
      EXPECT_EQ(r.allow, c.allow) << c.path;
    }
  }
}

TEST(Router, WrongMethodOnABoardPathIs405WithAllow) {
  expect_405({
      {verb::post, "/board/b/member/m", "GET, PUT, DELETE"},
      {verb::head, "/board/b/member/m", "GET, PUT, DELETE"},
      {verb::put, "/board/b/top", "GET"},
      {verb::delete_, "/board/b/top", "GET"},
      {verb::put, "/board/b/around/m", "GET"},
      {verb::delete_, "/board/b/around/m", "GET"},
      {verb::put, "/board/b", "GET, DELETE"},
      {verb::post, "/board/b", "GET, DELETE"},
      {verb::patch, "/board/b?x", "GET, DELETE"},
  });
  EXPECT_EQ(route(verb::unknown, "/board/b").endpoint, Endpoint::not_implemented);
}

TEST(Router, QueryIsIgnored) {
  EXPECT_EQ(route(verb::get, "/key/abc?x=1").key, "abc");
  EXPECT_EQ(route(verb::get, "/stats?pretty").endpoint, Endpoint::stats);
}

TEST(Router, AbsoluteFormTargetsUseTheirPath) {
  EXPECT_EQ(route(verb::get, "http://example.com:8080/key/abc").key, "abc");
  EXPECT_EQ(route(verb::head, "http://example.com").endpoint, Endpoint::root_head);
  EXPECT_EQ(route(verb::get, "https://h/stats?x").endpoint, Endpoint::stats);
}

TEST(Router, UnknownPathsAre404) {
  for (const char* path : {"/key", "/keys/a", "/key/a/b/c", "/stat", "/resetx", "x", "*"}) {
    EXPECT_EQ(route(verb::get, path).endpoint, Endpoint::not_found) << path;
  }
  EXPECT_EQ(route(verb::delete_, "/nothing").endpoint, Endpoint::not_found);
}

TEST(Router, WrongMethodIs405WithAllow) {
  expect_405({{verb::post, "/key/a", kAllowKey},
              {verb::get, "/key/a/b", kAllowKeyValue},
              {verb::delete_, "/key/a/b", kAllowKeyValue},
              {verb::get, "/", kAllowRoot},
              {verb::put, "/reset", kAllowReset},
              {verb::get, "/reset", kAllowReset},
              {verb::post, "/stats", kAllowStats},
              {verb::options, "/key/a", kAllowKey},
              {verb::patch, "/stats", kAllowStats}});
}

TEST(Router, UnknownMethodIs501) {
  EXPECT_EQ(route(verb::unknown, "/key/a").endpoint, Endpoint::not_implemented);
  EXPECT_EQ(route(verb::unknown, "/nowhere").endpoint, Endpoint::not_implemented);
}

// The naive dispatch (the baseline) only reorders the checks: every input routes the same.
TEST(Router, NaiveAndOrderedDispatchAgree) {
  const verb methods[] = {verb::get,   verb::put,     verb::delete_, verb::head,    verb::post,
                          verb::patch, verb::options, verb::unknown, verb::connect, verb::trace};
  const char* targets[] = {"/key/abc",
                           "/key/",
                           "/key/k%2F1/v%20x",
                           "/key/k/",
                           "/key/a/b/c",
                           "/key",
                           "/keys/a",
                           "/",
                           "",
                           "*",
                           "/reset",
                           "/resetx",
                           "/stats",
                           "/stats?pretty",
                           "/stat",
                           "/key/abc?x=1",
                           "http://example.com:8080/key/abc",
                           "http://example.com",
                           "https://h/stats?x",
                           "https://h/reset",
                           "/nothing",
                           "/board/b",
                           "/board/",
                           "/board/b/member/m",
                           "/board/b/member/m/x",
                           "/board/b/top?n=1",
                           "/board/b/around/m",
                           "/board/b/nope"};
  std::size_t errors = 0;
  for (const verb m : methods) {
    for (const char* t : targets) {
      const Route a = OrderedDispatch::route(m, t);
      const Route b = NaiveDispatch::route(m, t);
      const std::string where = std::string(boost::beast::http::to_string(m)) + " " + t;
      EXPECT_EQ(a.endpoint, b.endpoint) << where;
      EXPECT_EQ(a.key, b.key) << where;
      EXPECT_EQ(a.value, b.value) << where;
      EXPECT_EQ(a.allow, b.allow) << where;
      if (a.endpoint == Endpoint::not_found || a.endpoint == Endpoint::method_not_allowed ||
          a.endpoint == Endpoint::not_implemented) {
        ++errors;
      }
    }
  }
  // The table covers every error kind, not only successful routes.
  EXPECT_EQ(OrderedDispatch::route(verb::get, "/nothing").endpoint, Endpoint::not_found);
  EXPECT_EQ(NaiveDispatch::route(verb::post, "/key/a").endpoint, Endpoint::method_not_allowed);
  EXPECT_EQ(NaiveDispatch::route(verb::unknown, "/key/a").endpoint, Endpoint::not_implemented);
  EXPECT_GT(errors, 100u);
}

TEST(Router, QueryIsPassedRawForEveryEndpoint) {
  struct Case {
    verb method;
    const char* target;
    Endpoint endpoint;
    std::string_view query;
  };
  for (const Case& c : {
           Case{verb::get, "/key/abc?x=1&y", Endpoint::key_get, "x=1&y"},
           Case{verb::get, "/key/abc", Endpoint::key_get, ""},
           Case{verb::get, "/key/abc?", Endpoint::key_get, ""},
           Case{verb::put, "/key/k?a", Endpoint::key_put_body, "a"},
           Case{verb::put, "/key/k/v?n=3", Endpoint::key_put_path, "n=3"},
           Case{verb::delete_, "/key/k?%20", Endpoint::key_delete, "%20"},
           Case{verb::head, "/key/k?q?r", Endpoint::key_head, "q?r"},
           Case{verb::head, "/?h", Endpoint::root_head, "h"},
           Case{verb::post, "/reset?scope=cache", Endpoint::reset, "scope=cache"},
           Case{verb::post, "/reset", Endpoint::reset, ""},
           Case{verb::get, "/stats?pretty", Endpoint::stats, "pretty"},
           Case{verb::get, "/nothing?q", Endpoint::not_found, "q"},
           Case{verb::post, "/stats?q", Endpoint::method_not_allowed, "q"},
           Case{verb::unknown, "/key/a?q", Endpoint::not_implemented, "q"},
           Case{verb::post, "http://h:1/reset?scope=cache", Endpoint::reset, "scope=cache"},
           Case{verb::head, "http://h?a/b", Endpoint::root_head,
                "a/b"},  // the authority ends at '?'
           Case{verb::get, "https://h/key/a/?k=/key/b", Endpoint::method_not_allowed, "k=/key/b"},
       }) {
    for (const Route& r : {route(c.method, c.target), route_naive(c.method, c.target)}) {
      EXPECT_EQ(r.endpoint, c.endpoint) << c.target;
      EXPECT_EQ(r.query, c.query) << c.target;
    }
  }
  // A '?' in the key (sent as %3F) stays in the key; a raw one starts the query.
  EXPECT_EQ(route(verb::get, "/key/a%3Fb?c").key, "a%3Fb");
  EXPECT_EQ(route(verb::get, "/key/a%3Fb?c").query, "c");
}

// route() and route_naive() agree on every field, on a large generated set of (method, target):
// every method Beast knows, crafted targets around each route, and random ones over the
// characters routing looks at.
TEST(Router, OrderedAndNaiveAgreeOnGeneratedInputs) {
  std::vector<std::string> targets;
  const char* prefixes[] = {"", "http://h", "https://h:8080", "http://", "HTTP://h"};
  const char* paths[] = {"/",
                         "",
                         "*",
                         "/key",
                         "/key/",
                         "/key/a",
                         "/key/a/",
                         "/key/a/b",
                         "/key/a/b/",
                         "/key/a/b/c",
                         "/key//",
                         "/key//v",
                         "//key/a",
                         "/keys/a",
                         "/Key/a",
                         "/key/%2F/%3F",
                         "/reset",
                         "/reset/",
                         "/resetx",
                         "/stats",
                         "/stats/",
                         "/statsx",
                         "/Stats",
                         "/stat",
                         "x",
                         "?",
                         "/board",
                         "/board/",
                         "/board/b",
                         "/board/b/",
                         "/board/b/top",
                         "/board/b/top/",
                         "/board/b/member/m",
                         "/board/b/member/m/",
                         "/board/b/member/",
                         "/board//member/m",
                         "/board/b/around/m",
                         "/board/b/around/m/x",
                         "/board/b/around",
                         "/board/b/x"};
  const char* queries[] = {"", "?", "?a=1", "?scope=cache", "?x?y", "?/key/a", "?#f"};
  for (const char* p : prefixes) {
    for (const char* path : paths) {
      for (const char* q : queries) targets.push_back(std::string(p) + path + q);
    }
  }
  std::mt19937_64 rng(2024);
  const std::string alphabet = "/key?rsta%:h.pbodmunc";
  std::uniform_int_distribution<std::size_t> length(0, 14);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> coin(0, 3);
  const char* stems[] = {"/key/", "/reset", "/stats", "/", "http://h/", "/board/b/", "/board/"};
  for (int i = 0; i < 20'000; ++i) {
    std::string t = coin(rng) == 0 ? "" : stems[static_cast<std::size_t>(i) % std::size(stems)];
    for (std::size_t n = length(rng); n > 0; --n) t += alphabet[pick(rng)];
    targets.push_back(std::move(t));
  }
  std::size_t compared = 0;
  std::size_t hits = 0;
  std::size_t mismatches = 0;  // only the first 20 are reported
  for (int m = 0; m <= static_cast<int>(verb::unlink); ++m) {
    const verb method = static_cast<verb>(m);
    for (const std::string& t : targets) {
      const Route a = route(method, t);
      const Route b = route_naive(method, t);
      ++compared;
      if ((a.endpoint != b.endpoint || a.key != b.key || a.value != b.value || a.allow != b.allow ||
           a.query != b.query) &&
          ++mismatches <= 20) {
        ADD_FAILURE() << boost::beast::http::to_string(method) << " '" << t << "'";
      }
      if (a.endpoint != Endpoint::not_found && a.endpoint != Endpoint::method_not_allowed &&
          a.endpoint != Endpoint::not_implemented) {
        ++hits;
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(compared, 500'000u);
  EXPECT_GT(hits, 10'000u);  // the set reaches the routes, not only the errors
}

// Each row of the table routes to its endpoint; every other method on that path is a 405 whose
// Allow list is exactly the table's methods for the path, in table order.
TEST(RouteTable, AllowListsAreTheTablesMethodsPerPath) {
  auto example = [](PathPattern p) {
    std::string path(pattern_text(p));
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"{k}", "k1"},
                                   {"{v}", "v1"},
                                   {"{b}", "b1"},
                                   {"{m}", "m1"}}) {
      if (const auto at = path.find(from); at != std::string::npos)
        path.replace(at, from.size(), to);
    }
    return path;
  };
  std::size_t patterns_seen = 0;
  for (const PathPattern p :
       {PathPattern::key, PathPattern::key_value, PathPattern::root, PathPattern::reset,
        PathPattern::stats, PathPattern::metrics, PathPattern::board, PathPattern::board_member,
        PathPattern::board_top, PathPattern::board_around}) {
    std::string expected_allow;
    for (const RouteRow& row : kRouteTable) {
      if (row.path != p) continue;
      if (!expected_allow.empty()) expected_allow += ", ";
      expected_allow += boost::beast::http::to_string(row.method);
    }
    EXPECT_EQ(allow_list(p), expected_allow) << pattern_text(p);
    if (expected_allow.empty()) continue;
    ++patterns_seen;
    const std::string path = example(p);
    for (int m = 1; m <= static_cast<int>(verb::unlink); ++m) {
      const verb method = static_cast<verb>(m);
      const RouteRow* row = nullptr;
      for (const RouteRow& r : kRouteTable) {
        if (r.path == p && r.method == method) row = &r;
      }
      for (const Route& got : {route(method, path), route_naive(method, path)}) {
        if (row != nullptr) {
          EXPECT_EQ(got.endpoint, row->endpoint) << path;
        } else {
          EXPECT_EQ(got.endpoint, Endpoint::method_not_allowed) << path;
          EXPECT_EQ(got.allow, expected_allow) << path;
        }
      }
    }
  }
  EXPECT_EQ(patterns_seen, 10u);
  // The named constants are the same derived lists, as documented in docs/api.md.
  EXPECT_EQ(kAllowKey, "GET, PUT, DELETE, HEAD");
  EXPECT_EQ(kAllowKeyValue, "PUT");
  EXPECT_EQ(kAllowRoot, "HEAD");
  EXPECT_EQ(kAllowReset, "POST");
  EXPECT_EQ(kAllowStats, "GET");
  EXPECT_EQ(kAllowMetrics, "GET");
  EXPECT_EQ(kAllowBoard, "GET, DELETE");
  EXPECT_EQ(kAllowBoardMember, "GET, PUT, DELETE");
  EXPECT_EQ(kAllowBoardTop, "GET");
  EXPECT_EQ(kAllowBoardAround, "GET");
}

// --- which routes write (RouteRow::access, route_access(), route_writes()) -------------------

constexpr bool is_read_method(verb m) {
  return m == verb::get || m == verb::head;
}
constexpr bool is_write_method(verb m) {
  return m == verb::put || m == verb::delete_ || m == verb::post;
}

// Every row's access follows its method: PUT, DELETE and POST write; GET and HEAD do not.
constexpr bool access_follows_method() {
  for (const RouteRow& row : kRouteTable) {
    if (is_write_method(row.method) && row.access != Access::write) return false;
    if (is_read_method(row.method) && row.access != Access::read) return false;
    if (!is_read_method(row.method) && !is_write_method(row.method)) return false;  // unclassified
  }
  return true;
}
static_assert(access_follows_method(),
              "kRouteTable: a PUT/DELETE/POST row must be Access::write, a GET/HEAD row "
              "Access::read (and a new method needs a rule here)");

// The lookup is the table: for each endpoint, its row's access; an endpoint without a row (only
// the errors) reads.
constexpr bool lookup_agrees_with_table() {
  for (std::size_t i = 0; i < detail::kEndpointCount; ++i) {
    const auto e = static_cast<Endpoint>(i);
    // (No pointer into kRouteTable: GCC under ASan does not fold its comparison at compile
    // time.)
    bool has_row = false;
    Access expected = Access::read;
    for (const RouteRow& r : kRouteTable) {
      if (r.endpoint == e) {
        has_row = true;
        expected = r.access;
      }
    }
    const bool error = e == Endpoint::not_found || e == Endpoint::method_not_allowed ||
                       e == Endpoint::not_implemented;
    if (has_row == error) return false;  // a route endpoint with no row, or vice versa
    if (route_access(e) != expected) return false;
    if (route_writes(e) != (expected == Access::write)) return false;
  }
  return true;
}
static_assert(lookup_agrees_with_table(),
              "route_access()/route_writes() must agree with kRouteTable for every endpoint");

TEST(RouteTable, WritesAreThePutDeleteAndPostRows) {
  std::size_t writes = 0;
  std::size_t reads = 0;
  for (const RouteRow& row : kRouteTable) {
    const std::string name = std::string(boost::beast::http::to_string(row.method)) + " " +
                             std::string(pattern_text(row.path));
    EXPECT_EQ(route_access(row.endpoint), row.access) << name;
    if (is_write_method(row.method)) {
      EXPECT_TRUE(route_writes(row.endpoint)) << name;
      ++writes;
    } else {
      EXPECT_TRUE(is_read_method(row.method)) << name;
      EXPECT_FALSE(route_writes(row.endpoint)) << name;
      ++reads;
    }
  }
  EXPECT_EQ(writes, 7u);
  EXPECT_EQ(reads, 9u);
  // The writes by name (the list the engine kept by hand before the table had the column).
  for (const Endpoint e :
       {Endpoint::key_put_body, Endpoint::key_put_path, Endpoint::key_delete, Endpoint::reset,
        Endpoint::board_member_put, Endpoint::board_member_delete, Endpoint::board_delete}) {
    EXPECT_TRUE(route_writes(e)) << static_cast<int>(e);
  }
  // The errors change nothing: a PUT to an unknown path, or a DELETE on /stats, is no write.
  for (const Endpoint e :
       {Endpoint::not_found, Endpoint::method_not_allowed, Endpoint::not_implemented}) {
    EXPECT_EQ(route_access(e), Access::read) << static_cast<int>(e);
  }
  EXPECT_FALSE(route_writes(route(verb::put, "/nope").endpoint));
  EXPECT_FALSE(route_writes(route(verb::delete_, "/stats").endpoint));
  EXPECT_TRUE(route_writes(route(verb::post, "/reset?scope=cache").endpoint));
  EXPECT_TRUE(route_writes(route_naive(verb::put, "/board/b/member/m").endpoint));
  EXPECT_FALSE(route_writes(route(verb::head, "/key/k").endpoint));
}

// docs/api.md's route list is route_table_markdown(), verbatim, between its markers.
TEST(RouteTable, DocsRouteListMatchesTheTable) {
  const std::string path = std::string(CRANK_SOURCE_DIR) + "/docs/api.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string doc = buffer.str();
  const std::string begin = "<!-- routes:begin -->\n";
  const std::string end = "<!-- routes:end -->";
  // A blank line after the begin marker and before the end marker: the table is its own block.
  std::string expected = "\n";
  expected += route_table_markdown();
  expected += "\n";
  const auto b = doc.find(begin);
  const auto e = doc.find(end);
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos && b < e)
      << path << " needs the markers; put this block where the routes are listed:\n"
      << begin << expected << end << "\n";
  EXPECT_EQ(doc.find(begin, b + 1), std::string::npos) << "one routes block only";
  const std::string block = doc.substr(b + begin.size(), e - b - begin.size());
  EXPECT_EQ(block, expected) << path
                             << " drifted from the route table (server/api/router.hh); replace its "
                                "block with:\n"
                             << begin << expected << end << "\n";
}

TEST(RouteTable, MarkdownListsEveryRowInTableOrder) {
  const std::string md = route_table_markdown();
  std::size_t at = 0;
  for (const RouteRow& row : kRouteTable) {
    const std::string request = "| `" + std::string(boost::beast::http::to_string(row.method)) +
                                " " + std::string(pattern_text(row.path)) + "` | ";
    const auto found = md.find(request, at);
    ASSERT_NE(found, std::string::npos) << request;
    at = found + request.size();
  }
  EXPECT_NE(md.find("`/key/{k}` → `GET, PUT, DELETE, HEAD`"), std::string::npos) << md;
  EXPECT_NE(md.find("?scope=cache"), std::string::npos) << md;
}

}  // namespace
}  // namespace server
