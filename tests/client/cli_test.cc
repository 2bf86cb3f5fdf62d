// Flag parsing: defaults, the sweep's thread counts, workload defaults, and one-line errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "client/cli.hh"
#include "client/flag_table.hh"
#include "client/workload.hh"

namespace client {
namespace {

CliOutcome parse(std::vector<std::string> args, Config& cfg, std::string& err) {
  return parse_args(args, cfg, err);
}

// Each case's flags are refused with a one-line error containing its message.
using ErrorCases = std::vector<std::pair<std::vector<std::string>, std::string>>;
void expect_one_line_errors(const ErrorCases& cases) {
  for (const auto& [args, message] : cases) {
    Config cfg;
    std::string err;
    EXPECT_EQ(parse(args, cfg, err), CliOutcome::kError) << args[0] << " " << args.back();
    EXPECT_NE(err.find(message), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
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

TEST(Cli, RecordTraceTakesAFileAndNeedsKeys) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--record-trace", "etc.txt"}, cfg, err), CliOutcome::kRun) << err;
  EXPECT_EQ(cfg.record_trace_path, "etc.txt");
  Config fixed;
  EXPECT_EQ(parse({"--path", "/mem", "--record-trace", "t.bin"}, fixed, err), CliOutcome::kError);
  EXPECT_EQ(err, "--record-trace records keys; workload fixed-get has none");
  Config missing;
  err.clear();
  EXPECT_EQ(parse({"--record-trace"}, missing, err), CliOutcome::kError);
  EXPECT_EQ(err, "--record-trace needs a file name");
}

// --admin-token-file: the token is read at parse time, trailing whitespace trimmed.
TEST(Cli, AdminTokenFileIsReadAndTrimmed) {
  const std::string path = ::testing::TempDir() + "/cli_admin_token_" + std::to_string(::getpid());
  std::ofstream(path) << "0123456789abcdef-token \t\n\n";
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--admin-token-file", path}, cfg, err), CliOutcome::kRun) << err;
  EXPECT_EQ(cfg.admin_token, "0123456789abcdef-token");
  EXPECT_EQ(cfg.admin_token_file, path);
  Config none;
  ASSERT_EQ(parse({}, none, err), CliOutcome::kRun);
  EXPECT_TRUE(none.admin_token.empty());  // no header is sent
  std::ofstream(path) << "\n";
  expect_one_line_errors({{{"--admin-token-file", path}, "is empty"},
                          {{"--admin-token-file", path + ".missing"}, "cannot read"},
                          {{"--admin-token-file"}, "--admin-token-file needs a file name"}});
  std::remove(path.c_str());
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
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--pipeline", "1", "--rate", "1000"},
           {"--pipeline", "2", "--rate", "1000"},
           {"--rate", "1000", "--pipeline", "16"},
           {"--slo", "p99=1ms", "--threads", "2", "--pipeline", "4"}}) {
    Config open;  // the open loop (and the SLO search) take any depth
    EXPECT_EQ(parse(args, open, err), CliOutcome::kRun) << err;
    EXPECT_GE(open.pipeline, 1u);
  }
}

TEST(Cli, PipelineRejectsBadDepths) {
  const std::vector<std::vector<std::string>> bad = {
      {"--pipeline", "0"},  {"--pipeline", "1025"},      {"--pipeline", "x"},
      {"--pipeline", "-1"}, {"--pipeline", "8.5"},       {"--pipeline", ""},
      {"--pipeline"},       {"--pipeline", "4294967297"}};
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

// Every duration flag takes the shared syntax (common/duration.hh) and keeps its bare meaning:
// --timeout bare = ms, -d/--duration bare = seconds, --warmup bare = a request count.
TEST(Cli, DurationFlagsTakeUnitsAndKeepTheirBareMeaning) {
  using namespace std::chrono_literals;
  struct Case {
    std::vector<std::string> args;
    std::chrono::nanoseconds timeout, duration, warmup_time;
    std::uint64_t warmup_requests;
  };
  const auto kT = std::chrono::nanoseconds(Config::kDefaultTimeout);
  const std::uint64_t kW = Config::kDefaultWarmupRequests;
  for (const Case& c : {
           Case{{"--timeout", "5000"}, 5000ms, 0s, 0s, kW},
           Case{{"--timeout", "250ms"}, 250ms, 0s, 0s, kW},
           Case{{"--timeout", "2s"}, 2s, 0s, 0s, kW},
           Case{{"--timeout", "0.5s"}, 500ms, 0s, 0s, kW},
           Case{{"--timeout", "10"}, 10ms, 0s, 0s, kW},
           Case{{"--timeout", "600s"}, 600s, 0s, 0s, kW},
           Case{{"-d", "2.5"}, kT, 2500ms, 0s, kW},
           Case{{"--duration", "10"}, kT, 10s, 0s, kW},
           Case{{"-d", "500ms"}, kT, 500ms, 0s, kW},
           Case{{"-d", "0.1s"}, kT, 100ms, 0s, kW},
           Case{{"-d", "3s"}, kT, 3s, 0s, kW},
           Case{{"--warmup", "0.2s"}, kT, 0s, 200ms, 0},
           Case{{"--warmup", "300ms"}, kT, 0s, 300ms, 0},
           Case{{"--warmup", "0s"}, kT, 0s, 0s, 0},
           Case{{"--warmup", "250"}, kT, 0s, 0s, 250},
           Case{{"--warmup", "0"}, kT, 0s, 0s, 0},
       }) {
    Config cfg;
    std::string err;
    ASSERT_EQ(parse(c.args, cfg, err), CliOutcome::kRun) << c.args[0] << " " << c.args[1] << err;
    EXPECT_EQ(std::chrono::nanoseconds(cfg.timeout), c.timeout) << c.args[1];
    EXPECT_EQ(cfg.duration, c.duration) << c.args[1];
    EXPECT_EQ(cfg.warmup_time, c.warmup_time) << c.args[1];
    EXPECT_EQ(cfg.warmup_requests, c.warmup_requests) << c.args[1];
  }
}

TEST(Cli, DurationFlagsRejectGarbageWithOneLineErrors) {
  const std::vector<std::vector<std::string>> bad = {{"--timeout", "9"},
                                                     {"--timeout", "9ms"},
                                                     {"--timeout", "601s"},
                                                     {"--timeout", "-5"},
                                                     {"--timeout", "5 s"},
                                                     {"--timeout", "1e3"},
                                                     {"--timeout", "inf"},
                                                     {"--timeout", "2m"},
                                                     {"--timeout", ""},
                                                     {"-d", "0"},
                                                     {"-d", "0s"},
                                                     {"-d", "-1"},
                                                     {"-d", "nan"},
                                                     {"-d", "1e2"},
                                                     {"-d", "2m"},
                                                     {"-d", "1000001"},
                                                     {"-d", "99999999999999999999999s"},
                                                     {"--warmup", "2m"},
                                                     {"--warmup", "-1s"},
                                                     {"--warmup", "1.5"},
                                                     {"--warmup", "s"},
                                                     {"--warmup", "ms"},
                                                     {"--warmup", "1000001s"},
                                                     {"--warmup", "infs"}};
  for (const auto& args : bad) {
    Config cfg;
    std::string err;
    EXPECT_EQ(parse(args, cfg, err), CliOutcome::kError) << args[0] << " '" << args[1] << "'";
    EXPECT_NE(err.find(args[0]), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--timeout", "abc"}, cfg, err), CliOutcome::kError);
  EXPECT_NE(err.find("a bare number is ms"), std::string::npos) << err;
  ASSERT_EQ(parse({"-d", "abc"}, cfg, err), CliOutcome::kError);
  EXPECT_NE(err.find("a bare number is seconds"), std::string::npos) << err;
}

TEST(Cli, HelpExplainsDurations) {
  const std::string h = help_text();
  for (const char* s : {"--timeout DURATION", "--duration DURATION", "--warmup N | DURATION",
                        "500ms", "2s", "a bare number is ms", "a bare number is seconds"})
    EXPECT_NE(h.find(s), std::string::npos) << s;
}

TEST(Cli, BoardWorkloadsParseWithTheirDefaults) {
  struct Case {
    const char* name;
    WorkloadKind kind;
    double get, set;
  };
  for (const Case& c : {Case{"board-update", WorkloadKind::kBoardUpdate, 0, 1},
                        Case{"board-top", WorkloadKind::kBoardTop, 1, 0},
                        Case{"board-mixed", WorkloadKind::kBoardMixed, 90, 10},
                        Case{"board-score", WorkloadKind::kBoardScore, 1, 0}}) {
    Config cfg;
    std::string err;
    ASSERT_EQ(parse({"--workload", c.name}, cfg, err), CliOutcome::kRun) << c.name << ": " << err;
    EXPECT_EQ(cfg.workload.kind, c.kind);
    EXPECT_STREQ(workload_name(c.kind), c.name);
    EXPECT_TRUE(is_board_workload(c.kind));
    EXPECT_EQ(cfg.workload.boards, 1u);
    EXPECT_EQ(cfg.workload.members, 100'000u);
    EXPECT_EQ(cfg.workload.top_n, 100u);
    EXPECT_DOUBLE_EQ(cfg.workload.ratio.get, c.get);
    EXPECT_DOUBLE_EQ(cfg.workload.ratio.set, c.set);
    EXPECT_DOUBLE_EQ(cfg.workload.ratio.del, 0);
    EXPECT_DOUBLE_EQ(cfg.workload.miss_ratio, 0);
  }
  for (WorkloadKind k : {WorkloadKind::kEtc, WorkloadKind::kMixed, WorkloadKind::kFixedGet})
    EXPECT_FALSE(is_board_workload(k));
}

// Every row of the workload table (workload.hh) parses to its kind with its default mix, is
// listed in --help with its text, and is named by the error of an unknown --workload.
TEST(Cli, EveryWorkloadOfTheTableParsesAndIsListed) {
  const std::string h = help_text();
  std::string err, unknown;
  Config bad;
  ASSERT_EQ(parse({"--workload", "nope"}, bad, unknown), CliOutcome::kError);
  for (const WorkloadSpec& w : workload_specs()) {
    Config cfg;
    ASSERT_EQ(parse({"--workload", w.name}, cfg, err), CliOutcome::kRun) << w.name << ": " << err;
    EXPECT_EQ(cfg.workload.kind, w.kind);
    EXPECT_EQ(&workload_spec(w.kind), &w);
    EXPECT_DOUBLE_EQ(cfg.workload.ratio.get, w.ratio.get) << w.name;
    EXPECT_DOUBLE_EQ(cfg.workload.ratio.set, w.ratio.set) << w.name;
    EXPECT_DOUBLE_EQ(cfg.workload.miss_ratio, w.miss_ratio) << w.name;
    const std::string first_line = std::string(w.help).substr(0, std::string(w.help).find('\n'));
    EXPECT_NE(h.find("  " + std::string(w.name) + ": " + first_line + "\n"), std::string::npos)
        << w.name;
    EXPECT_NE(unknown.find(w.name), std::string::npos) << unknown;
  }
  EXPECT_NE(h.find("--workload NAME           etc (default) | get-popular"), std::string::npos);
}

TEST(Cli, BoardFlagsAreParsed) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--workload", "board-mixed", "--boards", "4", "--members", "2500", "--top-n",
                   "1000", "--ratio", "3:1:0"},
                  cfg, err),
            CliOutcome::kRun)
      << err;
  EXPECT_EQ(cfg.workload.boards, 4u);
  EXPECT_EQ(cfg.workload.members, 2500u);
  EXPECT_EQ(cfg.workload.top_n, 1000u);
  EXPECT_DOUBLE_EQ(cfg.workload.ratio.get, 3);
  EXPECT_DOUBLE_EQ(cfg.workload.ratio.set, 1);
  // The flags may come before --workload; --top-n 1 and the product's bound are accepted.
  Config before;
  ASSERT_EQ(
      parse({"--top-n", "1", "--boards", "1000", "--members", "1000000", "--workload", "board-top"},
            before, err),
      CliOutcome::kRun)
      << err;
  EXPECT_EQ(before.workload.top_n, 1u);
  Config score;
  ASSERT_EQ(parse({"--workload", "board-score", "--members", "7"}, score, err), CliOutcome::kRun);
  EXPECT_EQ(score.workload.members, 7u);
}

TEST(Cli, BoardFlagsAreValidated) {
  struct Case {
    std::vector<std::string> args;
    const char* says;  // a piece of the one-line error
  };
  const std::vector<Case> bad = {
      {{"--workload", "board-top", "--top-n", "0"}, "--top-n"},
      {{"--workload", "board-top", "--top-n", "1001"}, "--top-n"},
      {{"--workload", "board-top", "--top-n", "x"}, "--top-n"},
      {{"--workload", "board-top", "--top-n"}, "--top-n needs"},
      {{"--workload", "board-top", "--boards", "0"}, "--boards"},
      {{"--workload", "board-top", "--boards", "1000001"}, "--boards"},
      {{"--workload", "board-top", "--boards", "-1"}, "--boards"},
      {{"--workload", "board-top", "--members", "0"}, "--members"},
      {{"--workload", "board-top", "--members", "1000000001"}, "--members"},
      {{"--workload", "board-top", "--boards", "2", "--members", "600000000"}, "at most"},
      {{"--boards", "2"}, "board workloads only"},
      {{"--workload", "mixed", "--members", "10"}, "board workloads only"},
      {{"--workload", "etc", "--top-n", "10"}, "--top-n applies"},
      {{"--workload", "board-update", "--top-n", "10"}, "--top-n applies"},
      {{"--workload", "board-score", "--top-n", "10"}, "--top-n applies"},
      {{"--workload", "board-mixed", "--ratio", "9:1:1"}, "READS:UPDATES:0"},
      {{"--workload", "board-mixed", "--ratio", "0:0:0"}, "--ratio"},
      {{"--workload", "board-top", "--ratio", "9:1:0"}, "does not apply"},
      {{"--workload", "board-update", "--ratio", "0:1:0"}, "does not apply"},
      {{"--workload", "board-mixed", "--miss-ratio", "0.1"}, "--miss-ratio"},
      {{"--workload", "board-top", "--record-trace", "t.txt"}, "--record-trace"},
      {{"--workload", "board"}, "board-mixed"},
  };
  for (const auto& c : bad) {
    Config cfg;
    std::string err;
    EXPECT_EQ(parse(c.args, cfg, err), CliOutcome::kError) << c.args.back();
    EXPECT_NE(err.find(c.says), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(Cli, HelpDocumentsTheBoardWorkloads) {
  const std::string h = help_text();
  for (const char* s :
       {"board-update", "board-top", "board-mixed", "board-score", "--boards B", "--members N",
        "--top-n N", "default 100000", "READS:UPDATES:0", "default 90:10:0"})
    EXPECT_NE(h.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace client

namespace client {
namespace {

// Appends ",h:<port>" (no comma first). Appends only: GCC 12 warns, wrongly, about
// "literal" + std::string.
void append_target(std::string& list, int port) {
  if (!list.empty()) list.push_back(',');
  list.append("h:");
  list.append(std::to_string(port));
}

TEST(Cli, TargetsAreParsedInOrderWithTheDefaultWeight) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--targets", "10.77.0.1:8080,node-b:9000,10.77.0.3:8080"}, cfg, err),
            CliOutcome::kRun)
      << err;
  ASSERT_EQ(cfg.targets.size(), 3u);
  EXPECT_EQ(cfg.targets[0].text, "10.77.0.1:8080");
  EXPECT_EQ(cfg.targets[0].host, "10.77.0.1");
  EXPECT_EQ(cfg.targets[0].port, 8080);
  EXPECT_EQ(cfg.targets[1].host, "node-b");
  EXPECT_EQ(cfg.targets[1].port, 9000);
  EXPECT_EQ(cfg.target_weight, 10u);
  EXPECT_TRUE(cfg.server_pids.empty());
  Config weighted;
  ASSERT_EQ(
      parse({"--targets", "a:1", "--target-weight", "1", "--server-pid", "42"}, weighted, err),
      CliOutcome::kRun)
      << err;
  EXPECT_EQ(weighted.target_weight, 1u);
  EXPECT_EQ(weighted.server_pids, (std::vector<int>{42}));
  Config many;
  std::string list;
  for (int i = 0; i < 64; ++i) append_target(list, i + 1);
  ASSERT_EQ(parse({"--targets", list}, many, err), CliOutcome::kRun) << err;
  EXPECT_EQ(many.targets.size(), 64u);
}

TEST(Cli, ServerPidTakesAListSummedWithoutTargets) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--server-pid", "7"}, cfg, err), CliOutcome::kRun) << err;
  EXPECT_EQ(cfg.server_pids, (std::vector<int>{7}));
  Config several;
  ASSERT_EQ(parse({"--server-pid", "7,8,9"}, several, err), CliOutcome::kRun) << err;
  EXPECT_EQ(several.server_pids, (std::vector<int>{7, 8, 9}));
  Config per_node;
  ASSERT_EQ(parse({"--targets", "a:1,b:2", "--server-pid", "7,8"}, per_node, err), CliOutcome::kRun)
      << err;
  for (const char* bad : {"0", "7,", "7,-1", "x", ""}) {
    Config c;
    err.clear();
    EXPECT_EQ(parse({"--server-pid", bad}, c, err), CliOutcome::kError) << bad;
    EXPECT_NE(err.find("--server-pid"), std::string::npos) << err;
  }
}

TEST(Cli, TargetsErrorsAreOneLineAndSayWhy) {
  std::string list65;
  for (int i = 0; i < 65; ++i) append_target(list65, i + 1);
  const ErrorCases cases = {
      {{"--targets", "a:1,b:2", "--host", "x"}, "cannot be combined with --host"},
      {{"-p", "9000", "--targets", "a:1"}, "cannot be combined with --port"},
      {{"--targets", "a:1,a:1"}, "'a:1' is given twice"},
      {{"--targets", "a:1,,b:2"}, "an empty entry"},
      {{"--targets", "a:1,"}, "an empty entry"},
      {{"--targets", "a"}, "'a' is not HOST:PORT"},
      {{"--targets", ":80"}, "is not HOST:PORT"},
      {{"--targets", "a:0"}, "no port 1..65535"},
      {{"--targets", "a:70000"}, "no port 1..65535"},
      {{"--targets", "a:x"}, "no port 1..65535"},
      {{"--targets", "::1:8080"}, "IPv6 hosts are not supported"},
      {{"--targets", "[::1]:8080"}, "IPv6 hosts are not supported"},
      {{"--targets", list65}, "more than 64 targets"},
      {{"--targets", "a:1", "--workload", "fixed-get"}, "workload fixed-get has none"},
      {{"--targets", "a:1", "--path", "/mem"}, "workload fixed-get has none"},
      {{"--targets", "a:1,b:2,c:3", "--server-pid", "5,6"}, "one PID per target"},
      {{"--targets", "a:1", "--target-weight", "0"}, "a weight 1..100"},
      {{"--targets", "a:1", "--target-weight", "101"}, "a weight 1..100"},
      {{"--target-weight", "10"}, "--target-weight applies to --targets only"},
      {{"--targets"}, "--targets needs"},
  };
  expect_one_line_errors(cases);
}

TEST(Cli, HelpDocumentsTargets) {
  const std::string help = help_text();
  for (const char* s : {"--targets HOST:PORT", "--target-weight W", "(default 10)",
                        "--server-pid PID[,PID...]", "one PID per target", "no IPv6"})
    EXPECT_NE(help.find(s), std::string::npos) << s;
}

TEST(Cli, RequestsTotalIsPerPointAcrossThreads) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--requests-total", "9000", "--threads", "4"}, cfg, err), CliOutcome::kRun)
      << err;
  EXPECT_EQ(cfg.requests_total, 9000u);
  Config none;
  ASSERT_EQ(parse({}, none, err), CliOutcome::kRun);
  EXPECT_EQ(none.requests_total, 0u);
}

TEST(Cli, SloParsesPercentileAndBound) {
  struct Case {
    const char* spec;
    double percentile;
    std::chrono::nanoseconds bound;
  };
  for (const Case& c : {Case{"p99=1ms", 99, std::chrono::milliseconds(1)},
                        Case{"p99.9=500us", 99.9, std::chrono::microseconds(500)},
                        Case{"p50=2ms", 50, std::chrono::milliseconds(2)},
                        Case{"p95=0.5s", 95, std::chrono::milliseconds(500)},
                        Case{"p99=250", 99, std::chrono::microseconds(250)}}) {
    Config cfg;
    std::string err;
    ASSERT_EQ(parse({"--slo", c.spec, "--threads", "2"}, cfg, err), CliOutcome::kRun)
        << c.spec << ": " << err;
    EXPECT_EQ(cfg.slo.text, c.spec);
    EXPECT_DOUBLE_EQ(cfg.slo.percentile, c.percentile);
    EXPECT_EQ(cfg.slo.bound, c.bound) << c.spec;
    EXPECT_DOUBLE_EQ(cfg.slo.precision, SloConfig::kDefaultPrecision);
    EXPECT_EQ(cfg.slo.max_rate_rps, 0.0);
  }
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--slo", "p99=1ms", "--threads", "1", "--slo-max-rate", "5000",
                   "--slo-precision", "0.05"},
                  cfg, err),
            CliOutcome::kRun)
      << err;
  EXPECT_DOUBLE_EQ(cfg.slo.max_rate_rps, 5000);
  EXPECT_DOUBLE_EQ(cfg.slo.precision, 0.05);
}

TEST(Cli, ScoreMaxAndManyConnections) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--workload", "board-update", "--score-max", "50000", "--connections-per-thread",
                   "3000"},
                  cfg, err),
            CliOutcome::kRun)
      << err;
  EXPECT_DOUBLE_EQ(cfg.workload.score_max, 50000);
  EXPECT_EQ(cfg.connections_per_thread, 3000u);
  Config def;
  ASSERT_EQ(parse({}, def, err), CliOutcome::kRun);
  EXPECT_DOUBLE_EQ(def.workload.score_max, 1e9);
}

TEST(Cli, NewFlagsGiveOneLineErrors) {
  const ErrorCases cases = {
      {{"--requests-total", "0"}, "--requests-total"},
      {{"--requests-total", "x"}, "--requests-total"},
      {{"--requests-total", "1000000000001"}, "--requests-total"},
      {{"--requests-total"}, "--requests-total needs"},
      {{"--requests-total", "10", "-n", "5"}, "cannot be combined with -n"},
      {{"--requests-total", "10", "-d", "1s"}, "cannot be combined with -d"},
      {{"--slo", "p99=1ms"}, "give --threads N (one value)"},
      {{"--slo", "p99=1ms", "--threads", "1,2"}, "give --threads N (one value)"},
      {{"--slo", "p99=1ms", "--threads", "2", "--rate", "100"}, "takes no --rate"},
      {{"--slo", "p99=1ms", "--threads", "2", "--targets", "a:1"}, "not with --targets"},
      {{"--slo", "99=1ms", "--threads", "2"}, "--slo"},
      {{"--slo", "p100=1ms", "--threads", "2"}, "--slo"},
      {{"--slo", "p0=1ms", "--threads", "2"}, "--slo"},
      {{"--slo", "p99", "--threads", "2"}, "--slo"},
      {{"--slo", "p99=", "--threads", "2"}, "--slo"},
      {{"--slo", "p99=0ms", "--threads", "2"}, "--slo"},
      {{"--slo", "p99=1h", "--threads", "2"}, "--slo"},
      {{"--slo", "px=1ms", "--threads", "2"}, "--slo"},
      {{"--slo-max-rate", "100"}, "--slo-max-rate applies to --slo only"},
      {{"--slo-precision", "0.1"}, "--slo-precision applies to --slo only"},
      {{"--slo", "p99=1ms", "--threads", "2", "--slo-max-rate", "0"}, "--slo-max-rate"},
      {{"--slo", "p99=1ms", "--threads", "2", "--slo-precision", "0"}, "--slo-precision"},
      {{"--slo", "p99=1ms", "--threads", "2", "--slo-precision", "0.6"}, "--slo-precision"},
      {{"--score-max", "100"}, "--score-max applies to the board workloads only"},
      {{"--workload", "board-update", "--score-max", "0"}, "--score-max"},
      {{"--workload", "board-update", "--score-max", "2e9"}, "--score-max"},
      {{"--connections-per-thread", "4097"}, "1..4096"},
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"stray"}, "unknown option 'stray'"},
  };
  expect_one_line_errors(cases);
}

TEST(Cli, ValuesMayFollowAnEqualsSignAndTheLastRepeatWins) {
  Config cfg;
  std::string err;
  ASSERT_EQ(parse({"--port=9001", "--keys", "5", "--keys", "7"}, cfg, err), CliOutcome::kRun)
      << err;
  EXPECT_EQ(cfg.port, 9001);
  EXPECT_EQ(cfg.workload.keys, 7u);
}

TEST(Cli, HelpDocumentsTheSloAndTheNewFlags) {
  const std::string help = help_text();
  for (const char* s : {"--slo pP=BOUND", "--slo-max-rate R", "--slo-precision F",
                        "--requests-total N", "--score-max S", "1..4096"})
    EXPECT_NE(help.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace client

namespace client {
namespace {

TEST(Cli, VerifyDefaultsToOneInSixtyFourAndTakesAllOffOrN) {
  Config def;
  std::string err;
  ASSERT_EQ(parse({}, def, err), CliOutcome::kRun);
  EXPECT_EQ(def.verify.every, 64u);
  for (const auto& [text, every] : std::vector<std::pair<std::string, std::uint32_t>>{
           {"all", 1}, {"off", 0}, {"1", 1}, {"8", 8}, {"1000000000", 1'000'000'000}}) {
    Config cfg;
    ASSERT_EQ(parse({"--verify", text}, cfg, err), CliOutcome::kRun) << err;
    EXPECT_EQ(cfg.verify.every, every) << text;
  }
}

TEST(Cli, VerifyRefusesBadValuesWithOneLineErrors) {
  expect_one_line_errors({{{"--verify", "0"}, "invalid value '0' for --verify"},
                          {{"--verify", "abc"}, "invalid value 'abc' for --verify"},
                          {{"--verify", "-1"}, "--verify"},
                          {{"--verify", ""}, "--verify"},
                          {{"--verify", "1000000001"}, "--verify"},
                          {{"--verify"}, "--verify needs all, off or a count"}});
}

TEST(Cli, HelpDocumentsVerify) {
  const std::string h = help_text();
  for (const char* s :
       {"--verify all|N|off", "default 64", "\"verified\"", "first answer of every"})
    EXPECT_NE(h.find(s), std::string::npos) << s;
}

// The flag table and --help agree: every row stands in --help with its names, value name and
// help, and every flag named anywhere in --help is one the parser knows.
TEST(Cli, HelpListsEveryFlagOfTheTable) {
  const std::string h = help_text();
  for (const FlagRow& row : flag_table()) {
    std::string names = row.short_name().empty() ? "    " : row.short_name() + ", ";
    names += row.long_name() + (row.value_name.empty() ? "" : " " + row.value_name);
    const auto at = h.find("\n  " + names);
    ASSERT_NE(at, std::string::npos) << names;
    const char after = h[at + 3 + names.size()];
    EXPECT_TRUE(after == ' ' || after == '\n') << names;
    const std::string first_line = row.help.substr(0, row.help.find('\n'));
    EXPECT_NE(h.find(first_line, at), std::string::npos) << names << ": " << first_line;
    if (!row.shown_default.empty()) {
      EXPECT_NE(h.find("(default " + row.shown_default + ")", at), std::string::npos) << names;
    }
  }
}

TEST(Cli, EveryFlagNamedInTheHelpParses) {
  const std::string h = help_text();
  const std::regex flag(R"((^|[^\w-])(--?[a-z][a-z0-9-]*))");
  std::size_t named = 0;
  for (auto it = std::sregex_iterator(h.begin(), h.end(), flag); it != std::sregex_iterator();
       ++it) {
    const std::string token = (*it)[2];
    Config cfg;
    std::string err;
    const CliOutcome outcome = parse({token}, cfg, err);
    EXPECT_TRUE(outcome != CliOutcome::kError || !err.starts_with("unknown option"))
        << token << ": " << err;
    ++named;
  }
  EXPECT_GT(named, flag_table().size());
}

TEST(Cli, EveryValueFlagOfTheTableSaysWhatItNeedsAndExpects) {
  for (const FlagRow& row : flag_table()) {
    if (row.value_name.empty()) continue;
    EXPECT_FALSE(row.expected.empty()) << row.names;
    Config cfg;
    std::string err;
    EXPECT_EQ(parse({row.long_name()}, cfg, err), CliOutcome::kError) << row.names;
    EXPECT_EQ(err, row.long_name() + " needs " + row.needs);
  }
}

TEST(Cli, HelpLinesFitTheWidth) {
  std::istringstream help(help_text());
  for (std::string line; std::getline(help, line);) EXPECT_LE(line.size(), kHelpWidth) << line;
}

}  // namespace
}  // namespace client
