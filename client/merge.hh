// `bench_client merge`: reading bench_client JSON results back and merging the runs of several load
// machines (same configuration, same server(s), run at the same time) into the result one run
// making all their requests would have given. Only what merges exactly is merged: counts are
// summed, percentiles come from the summed histograms (never from averaging percentiles), and what
// has no histogram in the JSON (open-loop uncorrected latency and send lag, the per-second p99) is
// written as null. docs/client.md ("Merging runs from several load machines") lists every field.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "client/result.hh"

namespace client {

// Why inputs cannot be merged: unreadable, not a bench_client result, no histograms (an older
// bench_client), or configurations that differ. The message names the file(s) and the field.
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One input: the run as read back. `result.points[i].histogram` (and each node's) is the exact
// histogram; the summaries read are kept as written (merge_runs() recomputes its own).
struct LoadedRun {
  std::string file;  // the name errors and meta.merged_from use
  SweepResult result;
};

// Parses one bench_client JSON document (`text`, reported as `file`). Throws MergeError.
LoadedRun read_run(const std::string& text, const std::string& file);
// Reads and parses the file at `path`. Throws MergeError (also when it cannot be read).
LoadedRun read_run_file(const std::string& path);

// Merges two or more runs. Throws MergeError when there are fewer than two or when their
// configurations differ (meta.workload, meta.mode, meta.target, meta.targets, the number of
// points, each point's threads, connections and open_loop, each point's node targets).
// `command_line` becomes the merged meta.command_line.
SweepResult merge_runs(const std::vector<LoadedRun>& runs, const std::string& command_line);

// The subcommand's flags: bench_client merge A.json B.json ... [--json OUT] [--csv OUT] [-q].
struct MergeOptions {
  std::vector<std::string> inputs;
  std::string json_path;
  std::string csv_path;
  bool quiet = false;  // no table on stdout
};
enum class MergeCliOutcome { kRun, kHelp, kError };
// `args` are the arguments after "merge".
MergeCliOutcome parse_merge_args(const std::vector<std::string>& args, MergeOptions& opts,
                                 std::string& error);
std::string merge_help_text();

}  // namespace client
