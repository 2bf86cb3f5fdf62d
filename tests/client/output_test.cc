// The JSON writer: the document parses, has the documented fields, escapes strings, and writes
// non-finite numbers as null.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "client/output.hh"
#include "tests/client/output_test_support.hh"

namespace client {
namespace {

TEST(Output, JsonHasTheDocumentedSchema) {
  SweepResult r;
  r.meta.command_line = "bench_client --path \"/a\\b\"\n";
  r.meta.workload = boost::json::object{{"name", "etc"}};
  r.meta.mode = boost::json::object{{"loop", "closed"}};
  PointResult p = output_test::point(2, 1000, 0.5, 123.456789);  // 2000 req/s
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
  p.verified = 37;
  p.client_cpu_us_per_response = 1.25;
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
  // pipeline, valid, then verified and client_cpu_us_per_response (appended last: readers index
  // the older columns by name or position).
  EXPECT_NE(header.find(",pipeline,valid,verified,client_cpu_us_per_response"), std::string::npos)
      << header;
  EXPECT_EQ(header.substr(header.rfind(',') + 1), "client_cpu_us_per_response");
  EXPECT_NE(row.find(",16,1,37,1.250"), std::string::npos) << row;
  EXPECT_EQ(std::count(header.begin(), header.end(), ','), std::count(row.begin(), row.end(), ','));
}

SweepResult slo_run() {
  SweepResult r;
  r.meta.workload = boost::json::object{{"name", "get-popular"}, {"keys", 8}};
  r.meta.mode = boost::json::object{{"loop", "slo"}};
  PointResult closed;
  closed.threads = 2;
  closed.throughput_rps = 10000;
  PointResult ok;
  ok.open_loop = true;
  ok.target_rps = 5500;
  ok.throughput_rps = 5499;
  PointResult bad = ok;
  bad.target_rps = 11000;
  bad.throughput_rps = 9000;
  bad.valid = false;
  bad.invalid_reason = "achieved 9000 of planned 11000 req/s";
  r.points = {closed, bad, ok};
  SloReport& s = r.slo.emplace();
  s.spec = "p99=1ms";
  s.percentile = 99;
  s.bound_us = 1000;
  s.threads = 2;
  s.connections = 2;
  s.precision = 0.02;
  s.saturation_rps = 10000;
  s.top_rps = 11000;
  s.steps.push_back({1, 11000, 9000, 4000, false, bad.invalid_reason, false, 1});
  s.steps.push_back({2, 5500, 5499, 800, true, "", true, 2});
  s.capacity_rps = 5500;
  s.capacity_percentile_us = 800;
  s.conclusion = "step limit reached (2 steps)";
  return r;
}

TEST(Output, SloSearchIsInTheJsonAsDocumented) {
  const auto doc = boost::json::parse(to_json_text(slo_run()));
  const auto& slo = doc.at("slo").as_object();
  EXPECT_EQ(slo.at("spec").as_string(), "p99=1ms");
  EXPECT_EQ(slo.at("percentile").to_number<double>(), 99);
  EXPECT_EQ(slo.at("bound_us").to_number<double>(), 1000);
  EXPECT_EQ(slo.at("threads").to_number<int>(), 2);
  EXPECT_EQ(slo.at("connections").to_number<int>(), 2);
  EXPECT_EQ(slo.at("precision").to_number<double>(), 0.02);
  EXPECT_EQ(slo.at("saturation_rps").to_number<double>(), 10000);
  EXPECT_EQ(slo.at("capacity_rps").to_number<double>(), 5500);
  EXPECT_EQ(slo.at("capacity_percentile_us").to_number<double>(), 800);
  const auto& steps = slo.at("steps").as_array();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].at("step").to_number<int>(), 1);
  EXPECT_EQ(steps[0].at("rate_rps").to_number<double>(), 11000);
  EXPECT_EQ(steps[0].at("achieved_rps").to_number<double>(), 9000);
  EXPECT_EQ(steps[0].at("percentile_us").to_number<double>(), 4000);
  EXPECT_FALSE(steps[0].at("valid").as_bool());
  EXPECT_EQ(steps[0].at("invalid_reason").as_string(), "achieved 9000 of planned 11000 req/s");
  EXPECT_FALSE(steps[0].at("meets").as_bool());
  EXPECT_EQ(steps[0].at("point").to_number<int>(), 1);
  EXPECT_TRUE(steps[1].at("valid").as_bool());
  EXPECT_TRUE(steps[1].at("invalid_reason").is_null());
  EXPECT_TRUE(steps[1].at("meets").as_bool());
  // Every point says whether it is valid; a closed-loop point always is.
  const auto& points = doc.at("points").as_array();
  EXPECT_TRUE(points[0].at("valid").as_bool());
  EXPECT_TRUE(points[0].at("invalid_reason").is_null());
  EXPECT_FALSE(points[1].at("valid").as_bool());
  EXPECT_EQ(points[1].at("invalid_reason").as_string(), "achieved 9000 of planned 11000 req/s");
}

TEST(Output, NoSloSearchWritesNull) {
  SweepResult r = slo_run();
  r.slo.reset();
  EXPECT_TRUE(boost::json::parse(to_json_text(r)).at("slo").is_null());
}

TEST(Output, SloStepsAndAnswerAreOneLineEach) {
  const SweepResult r = slo_run();
  std::ostringstream os;
  write_slo_step(os, *r.slo, r.slo->steps[0]);
  write_slo_step(os, *r.slo, r.slo->steps[1]);
  write_slo_summary(os, *r.slo);
  write_point_notes(os, r.points[1]);
  const std::string text = os.str();
  EXPECT_NE(text.find("# slo step 1: rate 11000 req/s, achieved 9000 req/s, p99 4000.0 us: "
                      "invalid (achieved 9000 of planned 11000 req/s)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# slo step 2: rate 5500 req/s, achieved 5499 req/s, p99 800.0 us: meets\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# slo capacity: 5500 req/s at p99 <= 1ms (p99 800.0 us; saturation 10000 "
                      "req/s, closed loop, 2 threads x 1 connections)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#   invalid: achieved 9000 of planned 11000 req/s\n"), std::string::npos);
  SloReport none = *r.slo;
  none.capacity_rps.reset();
  std::ostringstream os2;
  write_slo_summary(os2, none);
  EXPECT_NE(os2.str().find("# slo capacity: none: p99 <= 1ms was not met by any valid step"),
            std::string::npos)
      << os2.str();
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
}  // namespace client
