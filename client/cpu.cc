// Process CPU clocks, /proc and getrusage based CPU sampling (see cpu.hh).
#include "client/cpu.hh"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace client {

namespace {

// The process's CPU clock (clock_getcpuclockid): the scheduler's nanosecond count, summed over
// live threads and the ones that have exited. /proc/PID/stat's utime+stime counts in ticks of
// 1/CLK_TCK s (10 ms here): on a 0.13 s window that is +-8% of a core, more than the 15% margin
// a study's verdict reads. nullopt when the kernel refuses (the process is gone).
std::optional<double> process_clock_seconds(int pid) {
  clockid_t clock{};
  if (::clock_getcpuclockid(static_cast<pid_t>(pid), &clock) != 0) return std::nullopt;
  timespec now{};
  if (::clock_gettime(clock, &now) != 0) return std::nullopt;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

std::optional<double> stat_cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may contain spaces: skip past the last ')'.
  const std::size_t paren = line.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(paren + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // After ')': field 3 (state) is the first; utime and stime are fields 14 and 15.
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index == 14) utime = std::stoull(field);
    if (index == 15) stime = std::stoull(field);
  }
  if (!fields) return std::nullopt;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return static_cast<double>(utime + stime) / static_cast<double>(ticks > 0 ? ticks : 100);
}

}  // namespace

std::optional<double> process_cpu_seconds(int pid) {
  if (pid <= 0) return std::nullopt;
  if (auto seconds = process_clock_seconds(pid)) return seconds;
  return stat_cpu_seconds(pid);
}

double self_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double cpu_percent(std::optional<double> start, std::optional<double> end, double wall_s) {
  if (!start || !end || wall_s <= 0.0) return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * (*end - *start) / wall_s;
}

}  // namespace client
