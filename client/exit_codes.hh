// bench_client's exit codes, as --help lists them: main.cc returns them, and so do the
// subcommands (`bench_client merge`, `bench_client place`).
#pragma once

namespace client {

enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 1,  // bad flags
  kExitUnreachable = 2,
  kExitAborted = 3,       // a point failed, or Ctrl-C/SIGTERM: the finished points saved
  kExitOutput = 4,        // an output file could not be written
  kExitNotMergeable = 5,  // bench_client merge: the inputs cannot be merged
  kExitWrongAnswer = 6,   // a point had a wrong answer (mismatch): it is invalid
};

}  // namespace client
