// The git revision recorded in the JSON metadata, read when bench_client runs (not when it was
// configured, which would go stale as soon as the checkout moves on): `git -C DIR rev-parse
// --short HEAD`, spawned without a shell, its output read with a deadline, the child killed if
// it overruns. "unknown" when git is missing, DIR is not in a work tree, git fails or overruns.
#pragma once

#include <chrono>
#include <string>

namespace client {

constexpr std::chrono::milliseconds kGitRevisionTimeout{2000};

// The short revision of the work tree holding dir, or "unknown".
std::string git_revision(const std::string& dir,
                         std::chrono::milliseconds timeout = kGitRevisionTimeout);

// The revision of bench_client's own source tree (the directory it was built from, then the
// directory of the executable), or "unknown".
std::string run_time_git_revision();

}  // namespace client
