// --targets in the writers: each point's "nodes" in the JSON (only when there are nodes), the
// meta's targets and per-node /stats, and one indented table line per node.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <limits>
#include <sstream>

#include "client/output.hh"
#include "tests/client/output_test_support.hh"

namespace client {
namespace {

SweepResult two_node_result() {
  SweepResult r;
  r.meta.workload = boost::json::object{{"name", "etc"}, {"keys", 10}};
  r.meta.mode = boost::json::object{{"loop", "closed"}, {"pipeline", 1}};
  r.meta.target = "10.0.0.1:8080,10.0.0.2:8080";
  r.meta.targets = {"10.0.0.1:8080", "10.0.0.2:8080"};
  r.meta.server_pids = {11, 12};
  r.meta.server_pid = 11;
  r.meta.server_stats = boost::json::object{{"items", 1}};
  r.meta.server_stats_by_target =
      boost::json::object{{"10.0.0.1:8080", {{"items", 1}}}, {"10.0.0.2:8080", nullptr}};
  PointResult p = output_test::point(1, 30, 1, 50);  // 30 req/s
  for (int i = 0; i < 2; ++i) {
    NodeResult n;
    n.target = r.meta.targets[static_cast<std::size_t>(i)];
    n.requests = i == 0 ? 10 : 20;
    n.errors = static_cast<std::uint64_t>(i);
    n.throughput_rps = static_cast<double>(n.requests);
    n.latency.p50_us = 12.5;
    n.latency.p99_us = 40.0 + i;
    n.histogram.buckets = {{100, n.requests}};
    n.histogram.count = n.requests;
    n.server_cpu_pct = i == 0 ? 33.3 : std::numeric_limits<double>::quiet_NaN();
    if (i == 1) n.errors_by_code["timeout"] = 1;
    p.nodes.push_back(n);
  }
  r.points.push_back(p);
  return r;
}

TEST(TargetsOutput, JsonHasNodesAndTheMetaOfEveryTarget) {
  const auto doc = boost::json::parse(to_json_text(two_node_result()));
  const auto& meta = doc.at("meta").as_object();
  EXPECT_EQ(meta.at("targets"), (boost::json::array{"10.0.0.1:8080", "10.0.0.2:8080"}));
  EXPECT_EQ(meta.at("server_pids"), (boost::json::array{11, 12}));
  EXPECT_EQ(meta.at("server_pid").to_number<int>(), 11);
  EXPECT_TRUE(meta.at("server_stats_by_target").at("10.0.0.2:8080").is_null());
  EXPECT_EQ(meta.at("server_stats_by_target").at("10.0.0.1:8080").at("items").to_number<int>(), 1);
  const auto& nodes = doc.at("points").at(0).at("nodes").as_array();
  ASSERT_EQ(nodes.size(), 2u);
  const auto& second = nodes[1].as_object();
  EXPECT_EQ(second.at("target").as_string(), "10.0.0.2:8080");
  EXPECT_EQ(second.at("requests").to_number<int>(), 20);
  EXPECT_EQ(second.at("errors").to_number<int>(), 1);
  EXPECT_NEAR(second.at("throughput_rps").to_number<double>(), 20.0, 1e-9);
  EXPECT_NEAR(second.at("latency").at("p99_us").to_number<double>(), 41.0, 1e-9);
  EXPECT_TRUE(second.at("server_cpu_pct").is_null());
  EXPECT_EQ(second.at("errors_by_code").at("timeout").to_number<int>(), 1);
  EXPECT_EQ(second.at("histogram").at("count").to_number<int>(), 20);
  EXPECT_EQ(second.at("histogram").at("buckets"), (boost::json::array{{100, 20}}));
  EXPECT_NEAR(nodes[0].at("server_cpu_pct").to_number<double>(), 33.3, 1e-9);
}

TEST(TargetsOutput, ASingleTargetHasNoNodesAndNoTargetFields) {
  SweepResult r = two_node_result();
  r.meta.targets.clear();
  r.meta.server_pids = {11};
  r.points[0].nodes.clear();
  const auto doc = boost::json::parse(to_json_text(r));
  const auto& meta = doc.at("meta").as_object();
  for (const char* k : {"targets", "server_stats_by_target", "server_pids"})
    EXPECT_FALSE(meta.contains(k)) << k;
  EXPECT_FALSE(doc.at("points").at(0).as_object().contains("nodes"));
}

TEST(TargetsOutput, TableHasOneIndentedLinePerNode) {
  const SweepResult r = two_node_result();
  std::ostringstream os;
  write_table_row(os, r.points[0]);
  std::istringstream in(os.str());
  std::string row, first, second, extra;
  std::getline(in, row);
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(first.rfind("  node 10.0.0.1:8080 ", 0), 0u) << first;
  EXPECT_NE(first.find("p99      40.0"), std::string::npos) << first;
  EXPECT_NE(first.find("srv_cpu% 33.3"), std::string::npos) << first;
  EXPECT_EQ(second.rfind("  node 10.0.0.2:8080 ", 0), 0u) << second;
  EXPECT_NE(second.find("errors 1"), std::string::npos) << second;
  EXPECT_EQ(second.find("srv_cpu%"), std::string::npos) << second;  // not sampled
}

}  // namespace
}  // namespace client
