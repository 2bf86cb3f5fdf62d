// Flag parsing: defaults, the sweep's thread counts, workload defaults, and one-line errors.
#include <gtest/gtest.h>

#include "cli.hh"

namespace bench {
namespace {

CliOutcome parse(std::vector<std::string> args, Config& cfg, std::string& err) {
  return parse_args(args, cfg, err);
}

TEST(Cli, DefaultsMatchTheServerAndTheIssue) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({}, cfg, err), CliOutcome::kRun) << err;
  EXPECT_EQ(cfg.host, "127.0.0.1");
  EXPECT_EQ(cfg.port, 8080);
  EXPECT_EQ(cfg.thread_counts, (std::vector<unsigned>{1, 2, 4, 8, 16}));
  EXPECT_EQ(cfg.workload.kind, WorkloadKind::kEtc);
  EXPECT_DOUBLE_EQ(cfg.workload.ratio.get / cfg.workload.ratio.set, 30.0);
  EXPECT_DOUBLE_EQ(cfg.workload.miss_ratio, 0.2);
  EXPECT_EQ(cfg.connections_per_thread, 1u);
  EXPECT_EQ(cfg.rate_rps, 0.0);
}

TEST(Cli, MaxThreadsCapsTheDefaultCounts) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--max-threads", "4"}, cfg, err), CliOutcome::kRun);
  EXPECT_EQ(cfg.thread_counts, (std::vector<unsigned>{1, 2, 4}));
  Config odd;
  ASSERT_EQ(parse({"--max-threads", "6"}, odd, err), CliOutcome::kRun);
  EXPECT_EQ(odd.thread_counts, (std::vector<unsigned>{1, 2, 4, 6}));
}

TEST(Cli, ExplicitThreadsAndOtherFlags) {
  Config cfg;
  std::string err;
  ASSERT_EQ(
      parse({"--threads", "1,3,5",        "-s",     "localhost", "-p",    "9000",     "--workload",
             "mixed",     "--ratio",      "8:1:1",  "-d",        "2.5",   "--warmup", "1s",
             "--rate",    "1000",         "--json", "x.json",    "--csv", "x.csv",    "--keys",
             "500",       "--value-size", "64",     "--seed",    "9"},
            cfg, err),
      CliOutcome::kRun)
      << err;
  EXPECT_EQ(cfg.thread_counts, (std::vector<unsigned>{1, 3, 5}));
  EXPECT_EQ(cfg.host, "localhost");
  EXPECT_EQ(cfg.port, 9000);
  EXPECT_EQ(cfg.workload.kind, WorkloadKind::kMixed);
  EXPECT_DOUBLE_EQ(cfg.workload.ratio.del, 1.0);
  EXPECT_EQ(cfg.duration, std::chrono::milliseconds(2500));
  EXPECT_EQ(cfg.warmup_time, std::chrono::seconds(1));
  EXPECT_EQ(cfg.warmup_requests, 0u);
  EXPECT_DOUBLE_EQ(cfg.rate_rps, 1000.0);
  EXPECT_EQ(cfg.workload.keys, 500u);
  EXPECT_EQ(cfg.workload.value_bytes, 64u);
  EXPECT_EQ(cfg.workload.seed, 9u);
}

TEST(Cli, PathImpliesFixedGet) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--path", "/mem"}, cfg, err), CliOutcome::kRun);
  EXPECT_EQ(cfg.workload.kind, WorkloadKind::kFixedGet);
  EXPECT_EQ(cfg.workload.path, "/mem");
}

TEST(Cli, BadFlagsGiveOneLineErrors) {
  const std::vector<std::vector<std::string>> bad = {
      {"--bogus"},         {"--port", "0"},
      {"--port", "70000"}, {"--threads", "1,,2"},
      {"--threads", "0"},  {"--max-threads"},
      {"--rate", "-5"},    {"--workload", "nope"},
      {"--ratio", "1:2"},  {"--theta", "x"},
      {"--duration", "0"}, {"--warmup", "2m"},
      {"--keys", "0"},     {"--key-size", "1"},
      {"--path", "mem"},   {"--workload", "put-all", "--ratio", "1:1:1"},
      {"--timeout", "1"},  {"--threads", "4", "--max-threads", "2"}};
  for (const auto& args : bad) {
    Config cfg;
    std::string err;
    EXPECT_EQ(parse(args, cfg, err), CliOutcome::kError) << args[0];
    EXPECT_FALSE(err.empty());
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(Cli, PipelineDefaultsToOneAndAcceptsOneTo1024) {
  Config def;
  std::string err;
  ASSERT_EQ(parse({}, def, err), CliOutcome::kRun);
  EXPECT_EQ(def.pipeline, 1u);
  for (unsigned depth : {1u, 16u, 1024u}) {
    Config cfg;
    ASSERT_EQ(parse({"--pipeline", std::to_string(depth)}, cfg, err), CliOutcome::kRun) << err;
    EXPECT_EQ(cfg.pipeline, depth);
  }
  Config open;  // a depth of 1 is today's behaviour, so the open loop takes it
  EXPECT_EQ(parse({"--pipeline", "1", "--rate", "1000"}, open, err), CliOutcome::kRun) << err;
}

TEST(Cli, PipelineRejectsBadDepthsAndTheOpenLoop) {
  const std::vector<std::vector<std::string>> bad = {{"--pipeline", "0"},
                                                     {"--pipeline", "1025"},
                                                     {"--pipeline", "x"},
                                                     {"--pipeline", "-1"},
                                                     {"--pipeline", "8.5"},
                                                     {"--pipeline", ""},
                                                     {"--pipeline"},
                                                     {"--pipeline", "4294967297"},
                                                     {"--pipeline", "2", "--rate", "1000"},
                                                     {"--rate", "1000", "--pipeline", "16"}};
  for (const auto& args : bad) {
    Config cfg;
    std::string err;
    EXPECT_EQ(parse(args, cfg, err), CliOutcome::kError) << args.back();
    EXPECT_NE(err.find("--pipeline"), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(Cli, HelpMentionsDefaultsAndUnits) {
  Config cfg;
  std::string err;
  EXPECT_EQ(parse({"--help"}, cfg, err), CliOutcome::kHelp);
  const std::string h = help_text();
  for (const char* s : {"default 127.0.0.1", "default 8080", "requests/s", "ms", "seconds",
                        "--max-threads", "--json", "--pipeline N"})
    EXPECT_NE(h.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace bench
