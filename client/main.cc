// bench_client entry point: parse flags, run the sweep, print the table as points complete, and
// save JSON/CSV (also the partial results of an aborted run); or, with `merge` first, merge the
// results of several load machines (merge.hh). Exit codes are listed in --help (merge --help).
#include <iostream>
#include <string>
#include <vector>

#include "client/cli.hh"
#include "client/exit_codes.hh"
#include "client/interrupt.hh"
#include "client/merge.hh"
#include "client/output.hh"
#include "client/place.hh"
#include "client/sweep.hh"
#include "client/trace_record.hh"

namespace {
// Whether any point of the run saw a wrong answer (docs/client.md, "Validity of a point").
bool any_wrong_answer(const client::SweepResult& r) {
  for (const auto& p : r.points) {
    const auto it = p.errors_by_code.find("mismatch");
    if (it != p.errors_by_code.end() && it->second > 0) return true;
  }
  return false;
}

// `bench_client merge A.json B.json ...`: read the runs, merge them, print the table, write
// --json/--csv (merge.hh).
int merge_main(const std::vector<std::string>& args) {
  client::MergeOptions opts;
  std::string error;
  switch (client::parse_merge_args(args, opts, error)) {
    case client::MergeCliOutcome::kHelp:
      std::cout << client::merge_help_text();
      return client::kExitOk;
    case client::MergeCliOutcome::kError:
      std::cerr << "bench_client: " << error << "\n";
      return client::kExitUsage;
    case client::MergeCliOutcome::kRun:
      break;
  }
  std::string command_line = "bench_client merge";
  for (const auto& a : args) command_line += " " + a;
  client::SweepResult merged;
  try {
    std::vector<client::LoadedRun> runs;
    for (const auto& path : opts.inputs) runs.push_back(client::read_run_file(path));
    merged = client::merge_runs(runs, command_line);
  } catch (const client::MergeError& e) {
    std::cerr << "bench_client: merge: " << e.what() << "\n";
    return client::kExitNotMergeable;
  }
  if (!opts.quiet) {
    client::write_table_preamble(std::cout, merged);
    // "# merged 2 runs: host-a (a.json), host-b (b.json)"
    const auto& from = merged.meta.merged_from.as_array();
    std::cout << "# merged " << from.size() << " runs:";
    for (std::size_t i = 0; i < from.size(); ++i) {
      const auto& o = from[i].as_object();
      std::cout << (i ? ", " : " ") << o.at("client_host").as_string().c_str() << " ("
                << o.at("file").as_string().c_str() << ")";
    }
    std::cout << "\n";
    bool open_loop = false;
    for (const auto& p : merged.points) open_loop = open_loop || p.open_loop;
    client::write_table_header(std::cout, open_loop);
    for (const auto& p : merged.points) {
      client::write_table_row(std::cout, p);
      client::write_point_notes(std::cout, p);
    }
    std::cout.flush();
  }
  int code = client::kExitOk;
  if (!opts.json_path.empty() && !client::write_json(merged, opts.json_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = client::kExitOutput;
  }
  if (!opts.csv_path.empty() && !client::write_csv(merged, opts.csv_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = client::kExitOutput;
  }
  return code;
}

// The table on stdout as the sweep goes, and its progress on stderr unless --quiet.
client::SweepHooks table_hooks(const client::Config& cfg) {
  client::SweepHooks hooks;
  hooks.message = [&cfg](const std::string& m) {
    if (!cfg.quiet) std::cerr << m << "\n";
  };
  hooks.started = [&cfg](const client::SweepResult& r) {
    client::write_table_preamble(std::cout, r);
    client::write_table_header(std::cout, cfg.rate_rps > 0 || !cfg.slo.text.empty());
    std::cout.flush();
  };
  hooks.point_done = [](const client::PointResult& p) {
    client::write_table_row(std::cout, p);
    client::write_point_notes(std::cout, p);
    std::cout.flush();
  };
  hooks.slo_step = [](const client::SloReport& s, const client::SloStepRecord& step) {
    client::write_slo_step(std::cout, s, step);
    std::cout.flush();
  };
  hooks.slo_done = [](const client::SloReport& s) {
    client::write_slo_summary(std::cout, s);
    std::cout.flush();
  };
  return hooks;
}

// The exit status of a sweep that ran (exit_codes.hh), said on stderr when it is not 0.
int sweep_exit_code(client::SweepStatus status, const client::SweepResult& result,
                    const client::Config& cfg) {
  const bool saved = !cfg.json_path.empty() || !cfg.csv_path.empty();
  if (status == client::SweepStatus::kInterrupted) {
    std::cerr << "bench_client: " << result.abort_reason << "; " << result.points.size()
              << " finished point(s)" << (saved ? " saved" : "") << "\n";
    return client::kExitAborted;
  }
  if (status == client::SweepStatus::kAborted) {
    std::cerr << "bench_client: run aborted: " << result.abort_reason
              << (saved ? " (partial results saved)" : "") << "\n";
    return client::kExitAborted;
  }
  if (any_wrong_answer(result)) {
    std::cerr << "bench_client: wrong answers (mismatch): the point(s) are invalid\n";
    return client::kExitWrongAnswer;
  }
  return client::kExitOk;
}

// --json, --csv and --record-trace; a failed write makes a 0 status kExitOutput.
int write_outputs(const client::Config& cfg, const client::SweepResult& result, int code) {
  std::string error;
  auto failed = [&] {
    std::cerr << "bench_client: " << error << "\n";
    code = code == client::kExitOk ? client::kExitOutput : code;
  };
  if (!cfg.json_path.empty() && !client::write_json(result, cfg.json_path, error)) failed();
  if (!cfg.csv_path.empty() && !client::write_csv(result, cfg.csv_path, error)) failed();
  if (!cfg.record_trace_path.empty() &&
      !client::write_recorded_trace(cfg.workload, result.recorded_trace, cfg.record_trace_path,
                                    error))
    failed();
  return code;
}

// `bench_client [options]`: the sweep, its table, and its files.
int sweep_main(const std::vector<std::string>& args) {
  client::Config cfg;
  std::string error;
  switch (client::parse_args(args, cfg, error)) {
    case client::CliOutcome::kHelp:
      std::cout << client::help_text();
      return client::kExitOk;
    case client::CliOutcome::kError:
      std::cerr << "bench_client: " << error << "\n";
      return client::kExitUsage;
    case client::CliOutcome::kRun:
      break;
  }
  // An unwritable --record-trace file is reported now, not after the whole run.
  if (!cfg.record_trace_path.empty() &&
      !client::write_recorded_trace(cfg.workload, {}, cfg.record_trace_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    return client::kExitOutput;
  }
  // Ctrl-C / SIGTERM: the sweep stops, the finished points are written, exit 3.
  client::install_interrupt_handlers();
  std::string command_line = "bench_client";
  for (const auto& a : args) command_line += " " + a;
  client::SweepResult result;
  const client::SweepStatus status = client::run_sweep(cfg, command_line, table_hooks(cfg), result);
  if (status == client::SweepStatus::kUnreachable) {
    std::cerr << "bench_client: server unreachable: " << result.abort_reason << "\n";
    return client::kExitUnreachable;
  }
  return write_outputs(cfg, result, sweep_exit_code(status, result, cfg));
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "merge")
    return merge_main(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args.front() == "place")
    return client::run_place(std::vector<std::string>(args.begin() + 1, args.end()), std::cin,
                             std::cout, std::cerr);
  return sweep_main(args);
}
