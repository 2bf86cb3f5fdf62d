// router_test.cc — unit tests of method/path routing, including 404/405/501 decisions.
#include "server/router.hh"

#include <gtest/gtest.h>

#include "server/variant.hh"

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
  struct Case {
    verb method;
    const char* path;
    std::string_view allow;
  };
  for (const Case& c :
       {Case{verb::post, "/key/a", kAllowKey}, Case{verb::get, "/key/a/b", kAllowKeyValue},
        Case{verb::delete_, "/key/a/b", kAllowKeyValue}, Case{verb::get, "/", kAllowRoot},
        Case{verb::put, "/reset", kAllowReset}, Case{verb::get, "/reset", kAllowReset},
        Case{verb::post, "/stats", kAllowStats}, Case{verb::options, "/key/a", kAllowKey},
        Case{verb::patch, "/stats", kAllowStats}}) {
    const Route r = route(c.method, c.path);
    EXPECT_EQ(r.endpoint, Endpoint::method_not_allowed) << c.path;
    EXPECT_EQ(r.allow, c.allow) << c.path;
  }
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
                           "/nothing"};
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

}  // namespace
}  // namespace server
