// bench_client entry point: parse flags, run the sweep, print the table as points complete, and
// save JSON/CSV (also the partial results of an aborted run). Exit codes are listed in --help.
#include <iostream>
#include <string>
#include <vector>

#include "cli.hh"
#include "interrupt.hh"
#include "output.hh"
#include "sweep.hh"
#include "trace_record.hh"

namespace {
constexpr int kExitOk = 0;
constexpr int kExitUsage = 1;
constexpr int kExitUnreachable = 2;
constexpr int kExitAborted = 3;
constexpr int kExitOutput = 4;
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bench::Config cfg;
  std::string error;
  switch (bench::parse_args(args, cfg, error)) {
    case bench::CliOutcome::kHelp:
      std::cout << bench::help_text();
      return kExitOk;
    case bench::CliOutcome::kError:
      std::cerr << "bench_client: " << error << "\n";
      return kExitUsage;
    case bench::CliOutcome::kRun:
      break;
  }
  // An unwritable --record-trace file is reported now, not after the whole run.
  if (!cfg.record_trace_path.empty() &&
      !bench::write_recorded_trace(cfg.workload, {}, cfg.record_trace_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    return kExitOutput;
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
    bench::write_table_header(std::cout, cfg.rate_rps > 0);
    std::cout.flush();
  };
  hooks.point_done = [&](const bench::PointResult& p) {
    bench::write_table_row(std::cout, p);
    bench::write_point_notes(std::cout, p);
    std::cout.flush();
  };
  bench::SweepResult result;
  const bench::SweepStatus status = bench::run_sweep(cfg, command_line, hooks, result);
  if (status == bench::SweepStatus::kUnreachable) {
    std::cerr << "bench_client: server unreachable: " << result.abort_reason << "\n";
    return kExitUnreachable;
  }
  int code = kExitOk;
  if (status == bench::SweepStatus::kInterrupted) {
    std::cerr << "bench_client: " << result.abort_reason << "; " << result.points.size()
              << " finished point(s)"
              << (cfg.json_path.empty() && cfg.csv_path.empty() ? "" : " saved") << "\n";
    code = kExitAborted;
  } else if (status == bench::SweepStatus::kAborted) {
    std::cerr << "bench_client: run aborted: " << result.abort_reason
              << (cfg.json_path.empty() && cfg.csv_path.empty() ? "" : " (partial results saved)")
              << "\n";
    code = kExitAborted;
  }
  if (!cfg.json_path.empty() && !bench::write_json(result, cfg.json_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = code == kExitOk ? kExitOutput : code;
  }
  if (!cfg.csv_path.empty() && !bench::write_csv(result, cfg.csv_path, error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = code == kExitOk ? kExitOutput : code;
  }
  if (!cfg.record_trace_path.empty() &&
      !bench::write_recorded_trace(cfg.workload, result.recorded_trace, cfg.record_trace_path,
                                   error)) {
    std::cerr << "bench_client: " << error << "\n";
    code = code == kExitOk ? kExitOutput : code;
  }
  return code;
}
