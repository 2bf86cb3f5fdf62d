// bench_client merge: runs written as JSON, read back and merged, give exactly the statistics of
// one histogram that recorded every sample; counts are summed; differing configurations, files
// without histograms and invalid files are refused.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "client/histogram.hh"
#include "client/latency_summary.hh"
#include "client/merge.hh"
#include "client/output.hh"

namespace client {
namespace {

constexpr std::uint64_t kAboveRange = Histogram::kMaxTrackableNs + 123'456'789;  // > 1000 s

RunMeta test_meta(const std::string& host) {
  RunMeta m;
  m.tool_version = "1.0";
  m.date_utc = host == "alpha" ? "2026-01-02T03:04:05Z" : "2026-01-02T03:04:01Z";
  m.client_host = host;
  m.command_line = "bench_client --threads 2 -n 1000 --json " + host + ".json";
  m.target = "127.0.0.1:8080";
  m.workload = boost::json::object{{"name", "etc"}, {"keys", 10000}, {"seed", 1}};
  m.mode = boost::json::object{{"loop", "closed"},
                               {"requests_per_thread", 1000},
                               {"thread_counts", {2, 4}},
                               {"pipeline", 1},
                               {"rate_rps", 0}};
  return m;
}

// One point whose latency numbers come from `h`, as threaded_performance() fills them.
PointResult test_point(unsigned threads, const Histogram& h, std::uint64_t gets,
                       std::uint64_t hits) {
  PointResult p;
  p.threads = threads;
  p.connections = threads;
  p.requests = h.count();
  p.errors = 1;
  p.errors_by_code["timeout"] = 1;
  p.duration_s = 0.5 + threads * 0.01;
  p.throughput_rps = static_cast<double>(p.requests) / p.duration_s;
  p.latency = summarize(h);
  p.histogram = h.snapshot();
  p.above_range = h.above_range();
  p.gets = gets;
  p.get_hits = hits;
  p.sets = 7;
  p.hit_rate = static_cast<double>(hits) / static_cast<double>(gets);
  p.server_cpu_pct = 40 + threads;
  p.client_cpu_pct = 30;
  p.series.push_back({0, h.count() / 2, 1000.0, 100.0, 0, 0});
  p.series.push_back({1, h.count() - h.count() / 2, 900.0, 120.0, 1, 0});
  return p;
}

void record_a(Histogram& h, std::uint64_t salt) {
  for (std::uint64_t i = 0; i < 500; ++i) h.record(50'000 + i * 37 + salt);  // 50-70 us
  for (int i = 0; i < 40; ++i) h.record(77);                                 // exact bucket
  for (int i = 0; i < 20; ++i) h.record(2'000'000 + salt);                   // ties, 2 ms
  h.record(kAboveRange);
}

void record_b(Histogram& h, std::uint64_t salt) {
  for (std::uint64_t i = 0; i < 300; ++i) h.record(120'000 + i * 1'013 + salt);  // 120-420 us
  for (int i = 0; i < 30; ++i) h.record(2'000'000 + salt);                       // the same ties
  h.record(3);
  h.record(kAboveRange + 5);
  h.record(900'000'000'000);  // 900 s, inside the range
}

SweepResult run_of(const std::string& host, void (*record)(Histogram&, std::uint64_t),
                   Histogram& union_2, Histogram& union_4) {
  SweepResult r;
  r.meta = test_meta(host);
  auto h2 = std::make_unique<Histogram>();
  auto h4 = std::make_unique<Histogram>();
  record(*h2, 0);
  record(*h4, 11);
  record(union_2, 0);
  record(union_4, 11);
  r.points.push_back(test_point(2, *h2, 100, 80));
  r.points.push_back(test_point(4, *h4, 60, 15));
  return r;
}

void expect_summary_eq(const LatencySummary& got, const LatencySummary& want) {
  EXPECT_EQ(got.mean_us, want.mean_us);
  EXPECT_EQ(got.min_us, want.min_us);
  EXPECT_EQ(got.p50_us, want.p50_us);
  EXPECT_EQ(got.p90_us, want.p90_us);
  EXPECT_EQ(got.p95_us, want.p95_us);
  EXPECT_EQ(got.p99_us, want.p99_us);
  EXPECT_EQ(got.p999_us, want.p999_us);
  EXPECT_EQ(got.max_us, want.max_us);
}

double round3(double x) {
  return std::round(x * 1000.0) / 1000.0;
}

struct Fixture {
  std::unique_ptr<Histogram> union_2 = std::make_unique<Histogram>();
  std::unique_ptr<Histogram> union_4 = std::make_unique<Histogram>();
  SweepResult a, b;
  Fixture() {
    a = run_of("alpha", record_a, *union_2, *union_4);
    b = run_of("beta", record_b, *union_2, *union_4);
  }
};

std::string error_of(const std::vector<LoadedRun>& runs) {
  try {
    merge_runs(runs, "bench_client merge");
  } catch (const MergeError& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, PercentilesEqualThoseOfOneHistogramOfEverySample) {
  Fixture f;
  const std::vector<LoadedRun> runs = {read_run(to_json_text(f.a), "a.json"),
                                       read_run(to_json_text(f.b), "b.json")};
  const SweepResult m = merge_runs(runs, "bench_client merge a.json b.json");
  ASSERT_EQ(m.points.size(), 2u);
  const Histogram* unions[] = {f.union_2.get(), f.union_4.get()};
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const Histogram& u = *unions[i];
    const PointResult& p = m.points[i];
    ASSERT_GT(u.above_range(), 0u);
    EXPECT_EQ(p.histogram.count, u.count());
    EXPECT_EQ(p.histogram.sum_ns, u.snapshot().sum_ns);
    EXPECT_EQ(p.histogram.buckets, u.nonzero_buckets());
    EXPECT_EQ(p.above_range, u.above_range());
    expect_summary_eq(p.latency, summarize(u));
    // Spelled out, so that a change in summarize() cannot hide a wrong merge.
    EXPECT_EQ(p.latency.p50_us, static_cast<double>(u.percentile_ns(50)) / 1000.0);
    EXPECT_EQ(p.latency.p999_us, static_cast<double>(u.percentile_ns(99.9)) / 1000.0);
    EXPECT_EQ(p.latency.max_us, static_cast<double>(kAboveRange + 5) / 1000.0);
    EXPECT_EQ(p.latency.min_us, 0.003);
    EXPECT_EQ(p.requests, u.count());
  }
  // The written JSON holds the same numbers (rounded to 0.001 as every run's).
  const auto doc = boost::json::parse(to_json_text(m));
  const auto& p0 = doc.at("points").at(0).as_object();
  const LatencySummary want = summarize(*f.union_2);
  EXPECT_EQ(p0.at("p50_us").to_number<double>(), round3(want.p50_us));
  EXPECT_EQ(p0.at("p99_us").to_number<double>(), round3(want.p99_us));
  EXPECT_EQ(p0.at("p999_us").to_number<double>(), round3(want.p999_us));
  EXPECT_EQ(p0.at("mean_us").to_number<double>(), round3(want.mean_us));
  EXPECT_EQ(p0.at("histogram").at("count").to_number<std::uint64_t>(), f.union_2->count());
}

TEST(Merge, CountsAreSummedAndMetaListsTheInputs) {
  Fixture f;
  const std::vector<LoadedRun> runs = {read_run(to_json_text(f.a), "a.json"),
                                       read_run(to_json_text(f.b), "b.json")};
  const SweepResult m = merge_runs(runs, "bench_client merge a.json b.json");
  const PointResult& p = m.points[0];
  const PointResult &pa = f.a.points[0], &pb = f.b.points[0];
  EXPECT_EQ(p.threads, 2u);
  EXPECT_EQ(p.requests, pa.requests + pb.requests);
  EXPECT_EQ(p.errors, 2u);
  EXPECT_EQ(p.errors_by_code.at("timeout"), 2u);
  EXPECT_EQ(p.gets, 200u);
  EXPECT_EQ(p.get_hits, 160u);
  EXPECT_EQ(p.sets, 14u);
  EXPECT_DOUBLE_EQ(p.hit_rate, 0.8);
  EXPECT_DOUBLE_EQ(p.duration_s, 0.52);
  EXPECT_NEAR(p.throughput_rps, pa.throughput_rps + pb.throughput_rps, 0.002);
  EXPECT_DOUBLE_EQ(p.client_cpu_pct, 60);
  EXPECT_DOUBLE_EQ(p.server_cpu_pct, 42);  // the largest, not the sum
  ASSERT_EQ(p.series.size(), 2u);
  EXPECT_EQ(p.series[0].requests + p.series[1].requests, p.requests);
  EXPECT_EQ(p.series[1].timed_out, 2u);
  EXPECT_DOUBLE_EQ(p.series[0].throughput_rps, 2000);
  EXPECT_TRUE(std::isnan(p.series[0].p99_us));  // never an average of percentiles

  EXPECT_EQ(m.meta.command_line, "bench_client merge a.json b.json");
  EXPECT_EQ(m.meta.client_host, "alpha,beta");
  EXPECT_EQ(m.meta.date_utc, "2026-01-02T03:04:01Z");  // the earliest
  const auto doc = boost::json::parse(to_json_text(m));
  const auto& from = doc.at("meta").at("merged_from").as_array();
  ASSERT_EQ(from.size(), 2u);
  EXPECT_EQ(from[0].at("file").as_string(), "a.json");
  EXPECT_EQ(from[1].at("client_host").as_string(), "beta");
  EXPECT_EQ(from[1].at("command_line").as_string(), f.b.meta.command_line);
  EXPECT_TRUE(doc.at("points").at(0).at("series").at(0).at("p99_us").is_null());
}

TEST(Merge, AMergedFileMergesAgain) {
  Fixture f;
  auto c_union_2 = std::make_unique<Histogram>();
  auto c_union_4 = std::make_unique<Histogram>();
  SweepResult c = run_of("gamma", record_a, *c_union_2, *c_union_4);
  const SweepResult ab =
      merge_runs({read_run(to_json_text(f.a), "a.json"), read_run(to_json_text(f.b), "b.json")},
                 "bench_client merge a.json b.json");
  const SweepResult abc =
      merge_runs({read_run(to_json_text(ab), "ab.json"), read_run(to_json_text(c), "c.json")}, "m");
  f.union_2->merge(*c_union_2);
  f.union_4->merge(*c_union_4);
  expect_summary_eq(abc.points[0].latency, summarize(*f.union_2));
  expect_summary_eq(abc.points[1].latency, summarize(*f.union_4));
  EXPECT_EQ(abc.points[1].requests, f.union_4->count());
  // merged_from names the original runs, not the intermediate merge.
  const auto& from = abc.meta.merged_from.as_array();
  ASSERT_EQ(from.size(), 3u);
  EXPECT_EQ(from[0].at("file").as_string(), "a.json");
  EXPECT_EQ(from[1].at("file").as_string(), "b.json");
  EXPECT_EQ(from[2].at("file").as_string(), "c.json");
  EXPECT_EQ(abc.meta.client_host, "alpha,beta,gamma");
}

TEST(Merge, NodesMergePerTarget) {
  Fixture f;
  for (SweepResult* r : {&f.a, &f.b}) {
    r->meta.targets = {"127.0.0.1:1", "127.0.0.1:2"};
    for (PointResult& p : r->points)
      for (const auto& t : r->meta.targets) {
        NodeResult n;
        n.target = t;
        n.requests = p.requests / 2;
        n.throughput_rps = 10;
        n.histogram = p.histogram;  // any exact histogram will do
        n.server_cpu_pct = std::numeric_limits<double>::quiet_NaN();
        p.nodes.push_back(n);
      }
  }
  const SweepResult m = merge_runs(
      {read_run(to_json_text(f.a), "a.json"), read_run(to_json_text(f.b), "b.json")}, "m");
  ASSERT_EQ(m.points[0].nodes.size(), 2u);
  const NodeResult& n = m.points[0].nodes[1];
  EXPECT_EQ(n.target, "127.0.0.1:2");
  EXPECT_EQ(n.requests, f.a.points[0].requests / 2 + f.b.points[0].requests / 2);
  EXPECT_DOUBLE_EQ(n.throughput_rps, 20);
  expect_summary_eq(n.latency, summarize(*f.union_2));
  EXPECT_TRUE(std::isnan(n.server_cpu_pct));

  f.b.meta.targets[1] = "127.0.0.1:3";
  const std::string err =
      error_of({read_run(to_json_text(f.a), "a.json"), read_run(to_json_text(f.b), "b.json")});
  EXPECT_NE(err.find("meta.targets"), std::string::npos) << err;
}

TEST(Merge, OpenLoopKeepsOnlyWhatMergesExactly) {
  Fixture f;
  for (SweepResult* r : {&f.a, &f.b}) {
    r->meta.mode.as_object()["loop"] = "open";
    for (PointResult& p : r->points) {
      p.open_loop = true;
      p.target_rps = 1000;
      p.unsent = 2;
      p.send_lag_p99_us = 12;
      p.uncorrected = p.latency;
    }
  }
  f.b.points[1].rate_sustained = false;
  f.b.points[1].valid = false;
  f.b.points[1].invalid_reason = "achieved 900 of planned 1000 req/s";
  const SweepResult m = merge_runs(
      {read_run(to_json_text(f.a), "a.json"), read_run(to_json_text(f.b), "b.json")}, "m");
  EXPECT_DOUBLE_EQ(m.points[0].target_rps, 2000);
  EXPECT_EQ(m.points[0].unsent, 4u);
  EXPECT_TRUE(m.points[0].rate_sustained);
  EXPECT_FALSE(m.points[1].rate_sustained);
  // A merged point is valid only when every machine's point is; the reason names the file.
  EXPECT_TRUE(m.points[0].valid);
  EXPECT_FALSE(m.points[1].valid);
  EXPECT_EQ(m.points[1].invalid_reason, "b.json: achieved 900 of planned 1000 req/s");
  const auto doc = boost::json::parse(to_json_text(m));
  const auto& p = doc.at("points").at(0).as_object();
  EXPECT_TRUE(p.at("send_lag_p99_us").is_null());
  EXPECT_TRUE(p.at("uncorrected").at("p99_us").is_null());
  expect_summary_eq(m.points[0].latency, summarize(*f.union_2));
}

TEST(Merge, DifferentWorkloadIsRefusedNamingFieldAndFiles) {
  Fixture f;
  f.b.meta.workload.as_object()["keys"] = 20000;
  const std::string err =
      error_of({read_run(to_json_text(f.a), "a.json"), read_run(to_json_text(f.b), "b.json")});
  EXPECT_NE(err.find("meta.workload.keys"), std::string::npos) << err;
  EXPECT_NE(err.find("a.json has 10000"), std::string::npos) << err;
  EXPECT_NE(err.find("b.json has 20000"), std::string::npos) << err;
}

TEST(Merge, DifferentModeOrTargetIsRefused) {
  Fixture f;
  f.b.meta.mode.as_object()["requests_per_thread"] = 2000;
  std::string err =
      error_of({read_run(to_json_text(f.a), "a.json"), read_run(to_json_text(f.b), "b.json")});
  EXPECT_NE(err.find("meta.mode.requests_per_thread"), std::string::npos) << err;
  Fixture g;
  g.b.meta.target = "127.0.0.1:9090";
  err = error_of({read_run(to_json_text(g.a), "a.json"), read_run(to_json_text(g.b), "b.json")});
  EXPECT_NE(err.find("meta.target differs"), std::string::npos) << err;
}

TEST(Merge, DifferentPointsAreRefused) {
  Fixture f;
  f.b.points.pop_back();
  std::string err =
      error_of({read_run(to_json_text(f.a), "a.json"), read_run(to_json_text(f.b), "b.json")});
  EXPECT_NE(err.find("the number of points differs: a.json has 2, b.json has 1"), std::string::npos)
      << err;
  Fixture g;
  g.b.points[1].threads = 8;
  err = error_of({read_run(to_json_text(g.a), "a.json"), read_run(to_json_text(g.b), "b.json")});
  EXPECT_NE(err.find("points[1].threads differs: a.json has 4, b.json has 8"), std::string::npos)
      << err;
}

TEST(Merge, FewerThanTwoRunsAreRefused) {
  Fixture f;
  EXPECT_NE(error_of({read_run(to_json_text(f.a), "a.json")}).find("at least two"),
            std::string::npos);
}

std::string read_error(const std::string& text) {
  try {
    read_run(text, "x.json");
  } catch (const MergeError& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, AFileWithoutHistogramsIsRefused) {
  Fixture f;
  auto doc = boost::json::parse(to_json_text(f.a));
  doc.at("points").at(1).as_object().erase("histogram");  // as an older bench_client wrote it
  const std::string err = read_error(boost::json::serialize(doc));
  EXPECT_NE(err.find("x.json: points[1].histogram is missing"), std::string::npos) << err;
  EXPECT_NE(err.find("older"), std::string::npos) << err;
}

TEST(Merge, InvalidFilesAreRefused) {
  EXPECT_NE(read_error("requests,p99\n1,2\n").find("x.json: not valid JSON"), std::string::npos);
  EXPECT_NE(read_error("[1, 2]").find("not a bench_client result"), std::string::npos);
  EXPECT_NE(read_error(R"({"meta": {"tool": "wrk"}, "points": []})").find("meta.tool"),
            std::string::npos);
  Fixture f;
  auto doc = boost::json::parse(to_json_text(f.a));
  doc.at("points").at(0).at("histogram").as_object()["count"] = 1;
  EXPECT_NE(read_error(boost::json::serialize(doc)).find("points[0].histogram: bucket counts"),
            std::string::npos);
  try {
    read_run_file("/nonexistent/r.json");
    ADD_FAILURE() << "no error";
  } catch (const MergeError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/r.json: cannot be read"), std::string::npos);
  }
}

TEST(Merge, Flags) {
  MergeOptions o;
  std::string err;
  EXPECT_EQ(
      parse_merge_args({"a.json", "b.json", "--json", "m.json", "--csv", "m.csv", "-q"}, o, err),
      MergeCliOutcome::kRun);
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"a.json", "b.json"}));
  EXPECT_EQ(o.json_path, "m.json");
  EXPECT_EQ(o.csv_path, "m.csv");
  EXPECT_TRUE(o.quiet);
  MergeOptions o2;
  EXPECT_EQ(parse_merge_args({"a.json"}, o2, err), MergeCliOutcome::kError);
  EXPECT_NE(err.find("at least two"), std::string::npos);
  MergeOptions o3;
  EXPECT_EQ(parse_merge_args({"a.json", "b.json", "--json"}, o3, err), MergeCliOutcome::kError);
  MergeOptions o4;
  EXPECT_EQ(parse_merge_args({"a.json", "b.json", "--threads", "2"}, o4, err),
            MergeCliOutcome::kError);
  EXPECT_NE(err.find("unknown option '--threads'"), std::string::npos);
  MergeOptions o5;
  EXPECT_EQ(parse_merge_args({"--help"}, o5, err), MergeCliOutcome::kHelp);
}

}  // namespace
}  // namespace client
