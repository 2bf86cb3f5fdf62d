// metrics_test.cc — the one list of counters (server/api/metrics.hh) and the request-duration
// histograms (server/transport/request_timing.hh): /stats keeps its historical fields, order and
// formats; /metrics follows the Prometheus text format; the engine times each request in its route
// class's histogram with the clock readings its connection hands it.
#include "server/api/metrics.hh"
#include "server/allocator.hh"
#include "server/resp/commands.hh"

#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine_harness.hh"
#include "server/api/router.hh"

namespace server {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// The /stats fields in the order tools have parsed them since the durable tier landed; new
// fields may only be appended.
constexpr std::string_view kLegacyStatsFields =
    "items space_used maxmem hits misses sets deletes evictions requests reads writes connections "
    "total_connections threads evictor uptime_s io_model shards max_value variant lock value_path "
    "dispatch write_batching store write_mode store_reads store_writes store_commits store_errors "
    "dirty_bytes dirty_items readthrough_fills store_failed store_error store_connected "
    "store_reconnects";

std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> json_keys(const std::string& json) {
  std::vector<std::string> keys;
  const std::regex key(R"re("([a-z_]+)": )re");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), key); it != std::sregex_iterator();
       ++it) {
    keys.push_back((*it)[1]);
  }
  return keys;
}

TEST(MetricsList, StatsJsonKeepsItsFieldsOrderAndFormats) {
  testing::EngineHarness h;
  ASSERT_EQ(h.cache.set("k", "vv"), cache::SetResult::created);
  const std::string json = render_stats_json(take_snapshot(h.ctx));
  std::vector<std::string> expected = split_words(kLegacyStatsFields);
  for (const char* added : {"rejected_connections",
                            "inflight_bytes",
                            "inflight_high_water",
                            "max_inflight",
                            "allocator",
                            "boards",
                            "board_members",
                            "board_bytes",
                            "board_maxmem",
                            "board_updates",
                            "board_refused",
                            "board_removals",
                            "board_reads",
                            "board_top_cache_hits",
                            "board_top_cache_misses",
                            "board_top_cache_bytes",
                            "expired",
                            "http_connections",
                            "resp_connections",
                            "resp_total_connections",
                            "resp_unknown_commands",
                            "resp_commands"}) {
    expected.push_back(added);
  }
  for (const resp::Command& c : resp::command_table()) expected.push_back(std::string(c.name));
  EXPECT_EQ(json_keys(json), expected) << json;
  EXPECT_TRUE(json.starts_with(R"({"items": 1, "space_used": 3, "maxmem": 67108864, "hits": 0, )"))
      << json;
  EXPECT_TRUE(std::regex_search(json, std::regex(R"re("uptime_s": [0-9]+\.[0-9]{3}, )re"))) << json;
  const std::string evictor = cache::to_string(h.cache.evictor());  // whatever the default is
  EXPECT_NE(json.find("\"evictor\": \"" + evictor + "\", "), std::string::npos) << json;
  EXPECT_NE(json.find(R"("store": "none", "write_mode": "through", )"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("store_failed": false, "store_error": "", "store_connected": true, )"
                      R"("store_reconnects": 0, "rejected_connections": 0, )"
                      R"("inflight_bytes": 0, "inflight_high_water": 0, )"
                      R"("max_inflight": 268435456, "allocator": ")" +
                      std::string(allocator_name()) +
                      R"(", "boards": 0, "board_members": 0, "board_bytes": 0, )"
                      R"("board_maxmem": 67108864, "board_updates": 0, "board_refused": 0, )"
                      R"("board_removals": 0, "board_reads": 0, "board_top_cache_hits": 0, )"
                      R"("board_top_cache_misses": 0, "board_top_cache_bytes": 0, "expired": 0, )"
                      R"("http_connections": 0, "resp_connections": 0, )"
                      R"("resp_total_connections": 0, "resp_unknown_commands": 0, )"
                      R"("resp_commands": {"get": 0, "set": 0, )"),
            std::string::npos)
      << json;
  EXPECT_TRUE(json.ends_with(R"("flushall": 0, "flushdb": 0}})")) << json;
}

TEST(MetricsList, RejectedConnectionsAreCountedAndRendered) {
  testing::EngineHarness h;
  h.stats.count_rejected_connection();
  h.stats.count_rejected_connection();
  EXPECT_EQ(h.stats.sum().rejected_connections, 2u);
  const Snapshot snap = take_snapshot(h.ctx);
  EXPECT_NE(render_stats_json(snap).find(R"("rejected_connections": 2, )"), std::string::npos);
  const std::string prom = render_prometheus(snap, h.stats.sum_timings());
  EXPECT_NE(prom.find("# HELP cache_server_rejected_connections_total Connections refused past "
                      "--max-connections.\n# TYPE cache_server_rejected_connections_total "
                      "counter\ncache_server_rejected_connections_total 2\n"),
            std::string::npos)
      << prom;
}

// The board counters come from the registry (boards/registry.hh) into both renderings.
TEST(MetricsList, BoardStatsAreRendered) {
  testing::EngineHarness h;
  const std::string put = h.feed(
      "PUT /board/b/member/m HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n12"
      "GET /board/b HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /board/b/top HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /board/b/top HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(put.starts_with("HTTP/1.1 201 Created\r\n")) << put;
  const Snapshot snap = take_snapshot(h.ctx);
  const std::string json = render_stats_json(snap);
  const std::string bytes = std::to_string(h.ctx.boards.stats().bytes);
  EXPECT_NE(bytes, "0");
  const std::string page = std::to_string(h.ctx.boards.stats().top_cache_bytes);  // the top-10
  EXPECT_NE(page, "0");
  EXPECT_NE(json.find(R"("boards": 1, "board_members": 1, "board_bytes": )" + bytes +
                      R"(, "board_maxmem": 67108864, "board_updates": 1, "board_refused": 0, )"
                      R"("board_removals": 0, "board_reads": 3, "board_top_cache_hits": 1, )"
                      R"("board_top_cache_misses": 1, "board_top_cache_bytes": )" +
                      page + ", "),
            std::string::npos)
      << json;
  const std::string prom = render_prometheus(snap, h.stats.sum_timings());
  for (const std::string& line : std::vector<std::string>{
           "cache_server_boards 1\n", "cache_server_board_members 1\n",
           "cache_server_board_bytes " + bytes + "\n", "cache_server_board_maxmem_bytes 67108864\n",
           "cache_server_board_updates_total 1\n", "cache_server_board_refused_total 0\n",
           "cache_server_board_removals_total 0\n", "cache_server_board_reads_total 3\n",
           "cache_server_board_top_cache_hits_total 1\n",
           "cache_server_board_top_cache_misses_total 1\n",
           "cache_server_board_top_cache_bytes " + page + "\n"}) {
    EXPECT_NE(prom.find(line), std::string::npos) << line << prom;
  }
}

TEST(MetricsList, NamesAreUniqueAndValidPrometheusNames) {
  const std::regex valid("[a-zA-Z_:][a-zA-Z0-9_:]*");
  std::set<std::string> stats_names, prom_names;
  for (const MetricDef& d : metric_defs()) {
    EXPECT_TRUE(stats_names.insert(std::string(d.name)).second) << d.name;
    const std::string prom(d.prom_name.empty() ? d.name : d.prom_name);
    EXPECT_TRUE(std::regex_match(prom, valid)) << prom;
    EXPECT_TRUE(prom_names.insert(prom).second) << prom;
    if (d.kind == MetricKind::counter) {
      EXPECT_FALSE(prom.ends_with("_total")) << prom;  // the renderer adds it
    }
  }
}

// Every counter and gauge of the list appears in /metrics with its HELP and TYPE, once; the
// info strings are the labels of cache_server_info; store_error (text) does not appear.
TEST(MetricsText, EveryListedMetricHasHelpTypeAndOneSample) {
  testing::EngineHarness h;
  const std::string prom = render_prometheus(take_snapshot(h.ctx), h.stats.sum_timings());
  for (const MetricDef& d : metric_defs()) {
    std::string name = "cache_server_" + std::string(d.prom_name.empty() ? d.name : d.prom_name);
    switch (d.kind) {
      case MetricKind::counter:
      case MetricKind::gauge: {
        const bool counter = d.kind == MetricKind::counter;
        if (counter) name += "_total";
        const std::string family = "# HELP " + name + " " + std::string(d.help) + "\n# TYPE " +
                                   name + (counter ? " counter\n" : " gauge\n") + name + " ";
        EXPECT_NE(prom.find(family), std::string::npos) << name << "\n" << prom;
        break;
      }
      case MetricKind::info:
        EXPECT_NE(prom.find(std::string(d.name) + "=\""), std::string::npos) << d.name;
        break;
      case MetricKind::text:
        EXPECT_EQ(prom.find(std::string(d.name) + "=\""), std::string::npos) << d.name;
        EXPECT_EQ(prom.find(name + " "), std::string::npos) << d.name;
        break;
    }
  }
  const std::string evictor = cache::to_string(h.cache.evictor());
  EXPECT_NE(prom.find("cache_server_info{evictor=\"" + evictor + "\",io_model=\"per-thread\","),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("# TYPE cache_server_request_duration_seconds histogram\n"),
            std::string::npos);
  // Every line ends in a newline, and no family header repeats.
  EXPECT_TRUE(prom.ends_with("\n"));
  std::set<std::string> types;
  const std::regex type_line("# TYPE (\\S+) ");
  for (auto it = std::sregex_iterator(prom.begin(), prom.end(), type_line);
       it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(types.insert((*it)[1]).second) << (*it)[1];
  }
}

TEST(RequestTiming, BucketsAreInclusiveUpperBounds) {
  EXPECT_EQ(bucket_of(0), 0u);
  EXPECT_EQ(bucket_of(25'000), 0u);
  EXPECT_EQ(bucket_of(25'001), 1u);
  EXPECT_EQ(bucket_of(1'000'000'000), kBucketCount - 2);
  EXPECT_EQ(bucket_of(1'000'000'001), kBucketCount - 1);  // +Inf
  for (std::size_t i = 1; i < kDurationBuckets.size(); ++i) {
    EXPECT_LT(kDurationBuckets[i - 1].ns, kDurationBuckets[i].ns);
    EXPECT_DOUBLE_EQ(std::stod(std::string(kDurationBuckets[i].le)) * 1e9,
                     static_cast<double>(kDurationBuckets[i].ns));
  }
}

TEST(RequestTiming, RouteClassesComeFromTheRouteTable) {
  for (const RouteRow& row : kRouteTable) EXPECT_EQ(route_class(row.endpoint), row.timing);
  EXPECT_EQ(route_class(Endpoint::key_get), RouteClass::get);
  EXPECT_EQ(route_class(Endpoint::key_put_path), RouteClass::put);
  EXPECT_EQ(route_class(Endpoint::metrics), RouteClass::metrics);
  EXPECT_EQ(route_class(Endpoint::board_member_put), RouteClass::board_update);
  EXPECT_EQ(route_class(Endpoint::board_member_delete), RouteClass::board_update);
  EXPECT_EQ(route_class(Endpoint::board_delete), RouteClass::board_update);
  for (const Endpoint e : {Endpoint::board_member_get, Endpoint::board_top, Endpoint::board_around,
                           Endpoint::board_get}) {
    EXPECT_EQ(route_class(e), RouteClass::board_read);
  }
  EXPECT_EQ(route_class_name(RouteClass::board_update), "board_update");
  EXPECT_EQ(route_class_name(RouteClass::board_read), "board_read");
  EXPECT_EQ(route_class(Endpoint::not_found), RouteClass::other);
  EXPECT_EQ(route_class(Endpoint::method_not_allowed), RouteClass::other);
  EXPECT_EQ(route_class(Endpoint::not_implemented), RouteClass::other);
}

std::uint64_t count_of(const TimingTotals& t, RouteClass c) {
  std::uint64_t n = 0;
  for (const std::uint64_t b : t.by_class[static_cast<std::size_t>(c)].buckets) n += b;
  return n;
}

// Board requests are timed in their two classes; their errors (404, 405) are `other`.
TEST(RequestTiming, BoardRequestsAreTimedInTheirClasses) {
  testing::EngineHarness h;
  const auto t0 = clock_type::now();
  h.engine.mark_arrival(t0);
  h.feed(
      "PUT /board/b/member/m HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n5"
      "GET /board/b/top HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /board/b/around/m HTTP/1.1\r\nHost: t\r\n\r\n"
      "DELETE /board/b HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /board/b/nope HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /board/b HTTP/1.1\r\nHost: t\r\n\r\n");
  h.engine.record_durations(t0 + 30us);
  const TimingTotals t = h.stats.sum_timings();
  EXPECT_EQ(count_of(t, RouteClass::board_update), 2u);
  EXPECT_EQ(count_of(t, RouteClass::board_read), 2u);
  EXPECT_EQ(count_of(t, RouteClass::other), 2u);
}

// The engine counts answers per class and records them, all with the connection's readings.
TEST(RequestTiming, EngineTimesEachRequestFromArrivalToTheReadingItIsGiven) {
  testing::EngineHarness h;
  ASSERT_EQ(h.cache.set("a", "1"), cache::SetResult::created);
  const auto t0 = clock_type::now();
  h.engine.mark_arrival(t0);
  // Two pipelined GETs (a hit and a miss), a 404 and a PUT, answered in one consume().
  h.feed(
      "GET /key/a HTTP/1.1\r\nHost: t\r\n\r\nGET /key/b HTTP/1.1\r\nHost: t\r\n\r\n"
      "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n"
      "PUT /key/c HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx");
  EXPECT_EQ(count_of(h.stats.sum_timings(), RouteClass::get), 0u) << "recorded before the reading";
  h.engine.record_durations(t0 + 30us);
  const TimingTotals t = h.stats.sum_timings();
  const auto& get = t.by_class[static_cast<std::size_t>(RouteClass::get)];
  EXPECT_EQ(get.buckets[1], 2u);  // 30 µs: the (25 µs, 50 µs] bucket
  EXPECT_EQ(get.sum_ns, 60'000u);
  EXPECT_EQ(count_of(t, RouteClass::other), 1u);
  EXPECT_EQ(count_of(t, RouteClass::put), 1u);
  EXPECT_EQ(count_of(t, RouteClass::stats), 0u);
  // Recorded once: a second reading with nothing answered records nothing.
  h.engine.record_durations(t0 + 2s);
  EXPECT_EQ(count_of(h.stats.sum_timings(), RouteClass::get), 2u);
  // A slow one lands in +Inf, and /metrics shows cumulative buckets ending in the count.
  h.engine.mark_arrival(t0);
  h.feed("GET /stats HTTP/1.1\r\nHost: t\r\n\r\n");
  h.engine.record_durations(t0 + 3s);
  const std::string prom = render_prometheus(take_snapshot(h.ctx), h.stats.sum_timings());
  for (const char* line : {
           "cache_server_request_duration_seconds_bucket{route=\"get\",le=\"2.5e-05\"} 0\n",
           "cache_server_request_duration_seconds_bucket{route=\"get\",le=\"5e-05\"} 2\n",
           "cache_server_request_duration_seconds_bucket{route=\"get\",le=\"+Inf\"} 2\n",
           "cache_server_request_duration_seconds_sum{route=\"get\"} 6e-05\n",
           "cache_server_request_duration_seconds_count{route=\"get\"} 2\n",
           "cache_server_request_duration_seconds_bucket{route=\"stats\",le=\"1\"} 0\n",
           "cache_server_request_duration_seconds_bucket{route=\"stats\",le=\"+Inf\"} 1\n",
           "cache_server_request_duration_seconds_sum{route=\"stats\"} 3\n",
           "cache_server_request_duration_seconds_count{route=\"metrics\"} 0\n",
           "cache_server_request_duration_seconds_count{route=\"board_update\"} 0\n",
           "cache_server_request_duration_seconds_count{route=\"board_read\"} 0\n",
       }) {
    EXPECT_NE(prom.find(line), std::string::npos) << line << prom;
  }
}

}  // namespace
}  // namespace server
