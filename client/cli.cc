// Flag parsing and validation (see cli.hh), generated from the flag table (flag_table.hh): CLI11
// (Debian's libcli11-dev, header-only) recognizes the table's flags, their values (also
// --flag=value), unknown flags, missing values and --help; each row's parser stores its value.
// This file keeps the one-line error texts of CLI11's failures, the rules between flags
// (finish_config), and the layout of --help: the table's rows by group, then the exit codes.
#include "client/cli.hh"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>

#include "client/flag_table.hh"
#include "client/workload.hh"

namespace client {
namespace {

const std::vector<unsigned> kDefaultThreadCounts = {1, 2, 4, 8, 16};

constexpr const char* kHelpIntro = R"(usage: bench_client [options]
Load generator for the cache server: runs threaded_performance() once per client thread count and
prints one table row per count (latencies in microseconds, throughput in requests/second).
)";

constexpr const char* kHelpEnd = R"(
Durations are a decimal number with a unit, ms or s: 500ms, 2s, 0.5s.

bench_client merge A.json B.json ... --json OUT.json combines the results of several load machines
run at the same time with the same flags (bench_client merge --help).
bench_client place --targets LIST < keys prints the node of each key, as nginx places it
(bench_client place --help).

Exit status: 0 success (also when responses had errors, e.g. parse errors: see the errors
column); 1 bad flags; 2 server unreachable; 3 run aborted (a point failed, e.g. the server died or
an epoll_wait/socket call of the client failed; or the server refused the POST /reset: see
--admin-token-file) or interrupted (Ctrl-C/SIGTERM), the finished points saved; 4 output file
could not be written; 6 a wrong answer (mismatch): a point is invalid, all points saved.
)";

// One row of --help: "  -p, --port PORT" up to kHelpColumn (or a line of its own when longer),
// then the help with its continuation lines indented, and the shown default.
std::string help_entry(const FlagRow& row) {
  const std::string short_name = row.short_name();
  std::string names = "  " + (short_name.empty() ? "    " : short_name + ", ") + row.long_name();
  if (!row.value_name.empty()) names += " " + row.value_name;
  const std::string indent(kHelpColumn, ' ');
  names +=
      names.size() < kHelpColumn ? std::string(kHelpColumn - names.size(), ' ') : "\n" + indent;
  std::string text = row.help;
  if (!row.shown_default.empty()) {
    const std::string shown = "(default " + row.shown_default + ")";
    const std::size_t last_line = text.size() - (text.rfind('\n') + 1);
    text += kHelpColumn + last_line + 1 + shown.size() > kHelpWidth ? "\n" : " ";
    text += shown;
  }
  for (auto nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', nl + 1))
    text.insert(nl + 1, indent);
  return names + text + "\n";
}

// The value flags' "missing value" error for CLI11's message about `flag`: "--top-n needs a count".
std::string missing_value_error(const std::string& flag) {
  for (const FlagRow& row : flag_table())
    if (row.long_name() == flag && !row.needs.empty()) return flag + " needs " + row.needs;
  return flag + " needs a value";
}

void fail(const std::string& message) {
  throw FlagError(message);
}

// The sweep's thread counts: --threads, or the default counts, each capped by --max-threads.
void settle_thread_counts(Config& cfg, const GivenFlags& g) {
  if (cfg.thread_counts.empty()) {
    const unsigned cap = g.max_threads.value_or(Config::kDefaultMaxThreads);
    for (unsigned t : kDefaultThreadCounts)
      if (t <= cap) cfg.thread_counts.push_back(t);
    if (cfg.thread_counts.empty() || cap > cfg.thread_counts.back())
      cfg.thread_counts.push_back(cap);
  } else if (g.max_threads) {
    std::erase_if(cfg.thread_counts, [&](unsigned t) { return t > *g.max_threads; });
    if (cfg.thread_counts.empty()) fail("--max-threads removes every count of --threads");
  }
}

bool is_board(const WorkloadSpec& s) {
  return s.api == WorkloadApi::kBoards;
}
bool takes_top_n(const WorkloadSpec& s) {
  return s.has(kTakesTopN);
}

// The workload's defaults (its mix and miss ratio), and the flags only some workloads take.
void settle_workload(Config& cfg, const GivenFlags& g) {
  if (g.has("--path") && !g.has("--workload")) cfg.workload.kind = WorkloadKind::kFixedGet;
  const WorkloadSpec& w = workload_spec(cfg.workload.kind);
  cfg.workload.ratio = w.ratio;
  cfg.workload.miss_ratio = w.miss_ratio;
  const bool board = is_board(w);
  if (g.ratio) {
    if (!w.has(kTakesRatio)) fail(std::string("--ratio does not apply to workload ") + w.name);
    if (board && g.ratio->del != 0)
      fail(std::string("--ratio for ") + w.name +
           " is READS:UPDATES:0 (top-N reads : updates); board workloads send no deletes");
    cfg.workload.ratio = *g.ratio;
  }
  if (const std::string flag = g.last_of("--boards", "--members"); !flag.empty() && !board)
    fail(flag + " applies to the board workloads only (" + workload_names(is_board, ", ", ", ") +
         "), not to " + w.name);
  if (g.has("--top-n") && !w.has(kTakesTopN))
    fail("--top-n applies to " + workload_names(takes_top_n, ", ", " and ") + " only, not to " +
         w.name);
  if (g.has("--score-max") && !board)
    fail(std::string("--score-max applies to the board workloads only, not to ") + w.name);
  if (board &&
      std::uint64_t{cfg.workload.boards} * cfg.workload.members > WorkloadConfig::kMaxBoardMembers)
    fail("--boards x --members must be at most 1000000000 (got " +
         std::to_string(cfg.workload.boards) + " x " + std::to_string(cfg.workload.members) + ")");
  // A trace records keys: the board and fixed-path workloads have none.
  if (!cfg.record_trace_path.empty() && w.api != WorkloadApi::kKeys)
    fail(std::string("--record-trace records keys; workload ") + w.name + " has none");
  if (g.miss_ratio) {
    if (!w.has(kTakesMissRatio))
      fail(std::string("--miss-ratio does not apply to workload ") + w.name);
    cfg.workload.miss_ratio = *g.miss_ratio;
  }
}

// --targets and the flags that go with it (or not).
void check_targets(const Config& cfg, const GivenFlags& g) {
  if (!g.has("--targets")) {
    if (g.has("--target-weight")) fail("--target-weight applies to --targets only");
    return;
  }
  const std::string host_port = g.has("--host") ? "--host" : g.has("--port") ? "--port" : "";
  if (!host_port.empty())
    fail("--targets names the servers: it cannot be combined with " + host_port);
  const WorkloadSpec& w = workload_spec(cfg.workload.kind);
  if (w.api == WorkloadApi::kFixedPath)
    fail(std::string("--targets places requests by their key or board; workload ") + w.name +
         " has none (send it to one server with --host/--port)");
  if (!cfg.server_pids.empty() && cfg.server_pids.size() != cfg.targets.size())
    fail("--server-pid with --targets needs one PID per target, in --targets order (got " +
         std::to_string(cfg.server_pids.size()) + " PIDs for " +
         std::to_string(cfg.targets.size()) + " targets)");
}

// How much each point sends: the rate, the request counts and durations, and --slo's flags.
void check_load(Config& cfg, const GivenFlags& g) {
  if (cfg.workload.value_bytes > cfg.workload.max_value_bytes)
    cfg.workload.max_value_bytes = cfg.workload.value_bytes;
  const unsigned max_count = *std::max_element(cfg.thread_counts.begin(), cfg.thread_counts.end());
  if (cfg.rate_rps > 0 && cfg.rate_rps < max_count)
    fail("--rate must be at least one request/s per thread");
  if (g.has("--requests-total") && (g.has("--requests") || g.has("--duration")))
    fail(std::string("--requests-total sets each point's requests in all: it cannot be combined "
                     "with ") +
         (g.has("--requests") ? "-n/--requests" : "-d/--duration"));
  if (cfg.slo.text.empty()) {
    if (g.has("--slo-max-rate") || g.has("--slo-precision"))
      fail(std::string(g.has("--slo-max-rate") ? "--slo-max-rate" : "--slo-precision") +
           " applies to --slo only");
  } else {
    if (cfg.thread_counts.size() != 1)
      fail("--slo searches at one load level: give --threads N (one value)");
    if (cfg.rate_rps > 0) fail("--slo chooses the open-loop rates itself: it takes no --rate");
    if (!cfg.targets.empty()) fail("--slo searches against one server: not with --targets");
  }
}

// --protocol resp speaks the key commands only (resp.hh).
void check_protocol(const Config& cfg) {
  if (cfg.protocol != Config::Protocol::kResp) return;
  const WorkloadSpec& w = workload_spec(cfg.workload.kind);
  if (w.api != WorkloadApi::kKeys)
    fail(std::string("--protocol resp sends key commands (GET, SET, DEL); workload ") + w.name +
         " has no RESP form (use --protocol http)");
}

// Derived settings (default thread counts, workload defaults) and the rules between flags.
void finish_config(Config& cfg, const GivenFlags& g) {
  settle_thread_counts(cfg, g);
  settle_workload(cfg, g);
  check_protocol(cfg);
  check_targets(cfg, g);
  check_load(cfg, g);
}

// Adds `row` to `app`: its value (or, for a switch, its presence) goes to row.parse.
CLI::Option* add_flag(CLI::App& app, const FlagRow& row, Config& cfg, GivenFlags& given) {
  if (row.parse == nullptr) return app.set_help_flag(row.names, row.help);
  if (row.value_name.empty())
    return app.add_flag_callback(row.names, [&] { row.parse(cfg, given, ""); });
  CLI::Option* opt = app.add_option_function<std::string>(row.names, [&](const std::string& v) {
    if (!row.parse(cfg, given, v))
      throw FlagError("invalid value '" + v + "' for " + row.long_name() + " (expected " +
                      row.expected + ")");
  });
  opt->type_name("");
  return opt;
}

}  // namespace

std::string help_text() {
  std::string out = kHelpIntro;
  std::vector<std::string> groups;  // in the order of their first rows
  for (const FlagRow& row : flag_table())
    if (std::find(groups.begin(), groups.end(), row.group) == groups.end())
      groups.push_back(row.group);
  for (const std::string& group : groups) {
    out += "\n" + group + "\n";
    for (const FlagRow& row : flag_table())
      if (row.group == group) out += help_entry(row);
  }
  return out + kHelpEnd;
}

CliOutcome parse_args(const std::vector<std::string>& args, Config& cfg, std::string& error) {
  CLI::App app{"bench_client"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  GivenFlags given;
  std::map<const CLI::Option*, std::string> long_names;
  for (const FlagRow& row : flag_table())
    long_names[add_flag(app, row, cfg, given)] = row.long_name();
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them reversed
    for (const CLI::Option* opt : app.parse_order()) given.in_order.push_back(long_names.at(opt));
    finish_config(cfg, given);
  } catch (const CLI::CallForHelp&) {
    return CliOutcome::kHelp;
  } catch (const CLI::ExtrasError& e) {
    const auto extras = app.remaining();
    error = "unknown option '" + (extras.empty() ? std::string(e.what()) : extras.front()) +
            "' (see --help)";
    return CliOutcome::kError;
  } catch (const CLI::ArgumentMismatch& e) {
    const std::string what = e.what();  // "--top-n: 1 required TEXT missing"
    error = missing_value_error(what.substr(0, what.find(':')));
    return CliOutcome::kError;
  } catch (const CLI::ParseError& e) {
    error = e.what();
    return CliOutcome::kError;
  } catch (const FlagError& e) {
    error = e.what();
    return CliOutcome::kError;
  }
  return CliOutcome::kRun;
}

}  // namespace client
