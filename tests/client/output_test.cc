// The JSON writer: the document parses, has the documented fields, escapes strings, and writes
// non-finite numbers as null.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "output.hh"

namespace bench {
namespace {

TEST(Output, JsonHasTheDocumentedSchema) {
  SweepResult r;
  r.meta.command_line = "bench_client --path \"/a\\b\"\n";
  r.meta.workload = boost::json::object{{"name", "etc"}};
  r.meta.mode = boost::json::object{{"loop", "closed"}};
  PointResult p;
  p.threads = 2;
  p.requests = 1000;
  p.duration_s = 0.5;
  p.throughput_rps = 2000;
  p.latency.p99_us = 123.456789;
  p.hit_rate = std::numeric_limits<double>::quiet_NaN();
  p.server_cpu_pct = std::numeric_limits<double>::quiet_NaN();
  p.errors_by_code["http_500"] = 3;
  p.series.push_back({0, 1000, 2000, 120});
  r.points.push_back(p);

  const auto doc = boost::json::parse(to_json_text(r));
  const auto& meta = doc.at("meta").as_object();
  EXPECT_EQ(meta.at("command_line").as_string(), "bench_client --path \"/a\\b\"\n");
  for (const char* k : {"workload", "server_stats", "client_host", "client_cpus", "pinning",
                        "git_revision", "date_utc"})
    EXPECT_TRUE(meta.contains(k)) << k;
  const auto& point = doc.at("points").at(0).as_object();
  for (const char* k : {"threads", "requests", "errors", "duration_s", "throughput_rps", "mean_us",
                        "p50_us", "p90_us", "p95_us", "p99_us", "p999_us", "max_us", "hit_rate",
                        "server_cpu_pct", "client_cpu_pct"})
    EXPECT_TRUE(point.contains(k)) << k;
  EXPECT_TRUE(point.at("hit_rate").is_null());
  EXPECT_TRUE(point.at("server_cpu_pct").is_null());
  EXPECT_NEAR(point.at("p99_us").to_number<double>(), 123.457, 1e-9);
  EXPECT_EQ(point.at("errors_by_code").at("http_500").to_number<int>(), 3);
  EXPECT_EQ(point.at("series").at(0).at("requests").to_number<int>(), 1000);
}

TEST(Output, PipelineDepthIsInTheModeTheCsvAndTheTable) {
  SweepResult r;
  r.meta.workload = boost::json::object{{"name", "etc"}, {"keys", 10}};
  r.meta.mode =
      boost::json::object{{"loop", "closed"}, {"connections_per_thread", 1}, {"pipeline", 16}};
  PointResult p;
  p.threads = 1;
  p.pipeline = 16;
  r.points.push_back(p);

  const auto doc = boost::json::parse(to_json_text(r));
  EXPECT_EQ(doc.at("meta").at("mode").at("pipeline").to_number<int>(), 16);

  std::ostringstream table;
  write_table_preamble(table, r);
  EXPECT_NE(table.str().find("loop \"closed\"  pipeline 16\n"), std::string::npos) << table.str();

  const std::string path = testing::TempDir() + "pipeline_output_test.csv";
  std::string err;
  ASSERT_TRUE(write_csv(r, path, err)) << err;
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  std::remove(path.c_str());
  EXPECT_EQ(header.substr(header.rfind(',') + 1), "pipeline");
  EXPECT_EQ(row.substr(row.rfind(',') + 1), "16");
}

TEST(Output, BoardWorkloadsShowBoardsAndMembersInTheTable) {
  SweepResult r;
  r.meta.workload = boost::json::object{
      {"name", "board-top"}, {"keys", 20}, {"boards", 2}, {"members", 10}, {"top_n", 5}};
  r.meta.mode = boost::json::object{{"loop", "closed"}};
  std::ostringstream table;
  write_table_preamble(table, r);
  EXPECT_NE(table.str().find("workload \"board-top\"  boards 2  members 10  top_n 5  loop"),
            std::string::npos)
      << table.str();
  EXPECT_EQ(table.str().find("keys"), std::string::npos) << table.str();
}

}  // namespace
}  // namespace bench
