// bench_client entry point: parse flags, run the sweep, print the table as points complete, and
// save JSON/CSV (also the partial results of an aborted run); or, with `merge` first, merge the
// results of several load machines (merge.hh). Exit codes are listed in --help (merge --help).
#include <iostream>
#include <string>
#include <vector>

#include "cli.hh"
#include "exit_codes.hh"
#include "interrupt.hh"
#include "merge.hh"
#include "output.hh"
#include "place.hh"
#include "sweep.hh"
#include "trace_record.hh"

namespace {
// Whether any point of the run saw a wrong answer (docs/client.md, "Validity of a point").
bool any_wrong_answer(const bench::SweepResult& r) {
  for (const auto& p : r.points) {
    const auto it = p.errors_by_code.find("mismatch");
    if (it != p.errors_by_code.end() && it->second > 0) return true;
  }
  return false;
}

// `bench_client merge A.json B.json ...`: read the runs, merge them, print the table, write
// --json/--csv (merge.hh).
int merge_main(const std::vector<std::string>& args) {
  bench::MergeOptions opts;
  std::string error;
  switch (bench::parse_merge_args(args, opts, error)) {
    case bench::MergeCliOutcome::kHelp:
      std::cout << bench::merge_help_text();
      return bench::kExitOk;
    case bench::MergeCliOutcome::kError:
      std::cerr << "bench_client: " << error << "\n";
      return bench::kExitUsage;
    case bench::MergeCliOutcome::kRun:
      break;
  }
  std::string command_line = "bench_client merge";
  for (const auto& a : args) command_line += " " + a;
  bench::SweepResult merged;
  try {
    std::vector<bench::LoadedRun> runs;
    for (const auto& path : opts.inputs) runs.push_back(bench::read_run_file(path));
    merged = bench::merge_runs(runs, command_line);
  } catch (const bench::MergeError& e) {
    std::cerr << "bench_client: merge: " << e.what() << "\n";
    return bench::kExitNotMergeable;
  }
  if (!opts.quiet) {
    bench::write_table_preamble(std::cout, merged);
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
    bench::write_table_header(std::cout, open_loop);
    for (const auto& p : merged.points) {
      bench::write_table_row(std::cout, p);
      bench::write_point_notes(std::cout, p);
    }
    std::cout.flush();
  }
  int code = bench::kExitOk;
  if (!opts.json_path.empty() && !bench::write_json(merged, opts.json_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = bench::kExitOutput;
  }
  if (!opts.csv_path.empty() && !bench::write_csv(merged, opts.csv_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = bench::kExitOutput;
  }
  return code;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "merge")
    return merge_main(std::vector<std::string>(args.begin() + 1, args.end()));
  if (!args.empty() && args.front() == "place")
    return bench::run_place(std::vector<std::string>(args.begin() + 1, args.end()), std::cin,
                            std::cout, std::cerr);
  bench::Config cfg;
  std::string error;
  switch (bench::parse_args(args, cfg, error)) {
    case bench::CliOutcome::kHelp:
      std::cout << bench::help_text();
      return bench::kExitOk;
    case bench::CliOutcome::kError:
      std::cerr << "bench_client: " << error << "\n";
      return bench::kExitUsage;
    case bench::CliOutcome::kRun:
      break;
  }
  // An unwritable --record-trace file is reported now, not after the whole run.
  if (!cfg.record_trace_path.empty() &&
      !bench::write_recorded_trace(cfg.workload, {}, cfg.record_trace_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    return bench::kExitOutput;
  }
  // Ctrl-C / SIGTERM: the sweep stops, the finished points are written, exit 3.
  bench::install_interrupt_handlers();
  std::string command_line = "bench_client";
  for (const auto& a : args) command_line += " " + a;

  bench::SweepHooks hooks;
  hooks.message = [&](const std::string& m) {
    if (!cfg.quiet) std::cerr << m << "\n";
  };
  hooks.started = [&](const bench::SweepResult& r) {
    bench::write_table_preamble(std::cout, r);
    bench::write_table_header(std::cout, cfg.rate_rps > 0 || !cfg.slo.text.empty());
    std::cout.flush();
  };
  hooks.point_done = [&](const bench::PointResult& p) {
    bench::write_table_row(std::cout, p);
    bench::write_point_notes(std::cout, p);
    std::cout.flush();
  };
  hooks.slo_step = [&](const bench::SloReport& s, const bench::SloStepRecord& step) {
    bench::write_slo_step(std::cout, s, step);
    std::cout.flush();
  };
  hooks.slo_done = [&](const bench::SloReport& s) {
    bench::write_slo_summary(std::cout, s);
    std::cout.flush();
  };
  bench::SweepResult result;
  const bench::SweepStatus status = bench::run_sweep(cfg, command_line, hooks, result);
  if (status == bench::SweepStatus::kUnreachable) {
    std::cerr << "bench_client: server unreachable: " << result.abort_reason << "\n";
    return bench::kExitUnreachable;
  }
  int code = bench::kExitOk;
  if (status == bench::SweepStatus::kInterrupted) {
    std::cerr << "bench_client: " << result.abort_reason << "; " << result.points.size()
              << " finished point(s)"
              << (cfg.json_path.empty() && cfg.csv_path.empty() ? "" : " saved") << "\n";
    code = bench::kExitAborted;
  } else if (status == bench::SweepStatus::kAborted) {
    std::cerr << "bench_client: run aborted: " << result.abort_reason
              << (cfg.json_path.empty() && cfg.csv_path.empty() ? "" : " (partial results saved)")
              << "\n";
    code = bench::kExitAborted;
  } else if (any_wrong_answer(result)) {
    std::cerr << "bench_client: wrong answers (mismatch): the point(s) are invalid\n";
    code = bench::kExitWrongAnswer;
  }
  if (!cfg.json_path.empty() && !bench::write_json(result, cfg.json_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = code == bench::kExitOk ? bench::kExitOutput : code;
  }
  if (!cfg.csv_path.empty() && !bench::write_csv(result, cfg.csv_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = code == bench::kExitOk ? bench::kExitOutput : code;
  }
  if (!cfg.record_trace_path.empty() &&
      !bench::write_recorded_trace(cfg.workload, result.recorded_trace, cfg.record_trace_path,
                                   error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = code == bench::kExitOk ? bench::kExitOutput : code;
  }
  return code;
}
