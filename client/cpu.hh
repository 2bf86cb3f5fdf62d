// CPU time sampling: a process's CPU seconds from its CPU clock, in nanoseconds (the server; from
// /proc/<pid>/stat's ticks if the clock cannot be read), and this process's own from getrusage
// (the client), turned into "% of one core" over a window.
#pragma once

#include <optional>

namespace client {

// pid's CPU seconds (all its threads, exited ones included), or nullopt if the process is gone or
// unreadable.
std::optional<double> process_cpu_seconds(int pid);
// This process's user + system CPU seconds (all threads).
double self_cpu_seconds();
// 100 * cpu / wall; NaN when either sample is missing or wall <= 0.
double cpu_percent(std::optional<double> start, std::optional<double> end, double wall_s);

}  // namespace client
