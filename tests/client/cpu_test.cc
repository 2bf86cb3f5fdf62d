// process_cpu_seconds(): the server's CPU read at nanosecond resolution (its CPU clock), so that
// a short window is not rounded to /proc/PID/stat's 10 ms ticks; exited threads still count; a
// process that is gone reads as nullopt; cpu_percent() over a window.
#include "client/cpu.hh"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <thread>

namespace client {
namespace {

double clock_seconds(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Spins until `clock` (a CPU clock of this process or thread) has advanced by `seconds`.
void spin_for_cpu(clockid_t clock, double seconds) {
  const double start = clock_seconds(clock);
  volatile unsigned sink = 0;
  while (clock_seconds(clock) - start < seconds) sink = sink + 1;
}

// A child that spends `cpu_s` of CPU, says so on a pipe and then sleeps until killed.
struct SpinningChild {
  pid_t pid = -1;
  explicit SpinningChild(double cpu_s) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      spin_for_cpu(CLOCK_PROCESS_CPUTIME_ID, cpu_s);
      const char done = 'x';
      (void)!::write(fds[1], &done, 1);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    char done = 0;
    if (pid > 0) (void)!::read(fds[0], &done, 1);
    ::close(fds[0]);
  }
  ~SpinningChild() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

TEST(ProcessCpuSeconds, ReadsAnotherProcessFinerThanClockTicks) {
  // 15 ms of CPU: /proc/PID/stat would say 10 ms (its ticks are 1/100 s), the clock 15.x ms.
  SpinningChild child(0.015);
  ASSERT_GT(child.pid, 0);
  const auto seconds = process_cpu_seconds(child.pid);
  ASSERT_TRUE(seconds.has_value());
  EXPECT_GE(*seconds, 0.015);
  EXPECT_LT(*seconds, 0.0195);  // start-up and the write: well under a millisecond
}

TEST(ProcessCpuSeconds, CountsThreadsThatHaveExited) {
  const auto before = process_cpu_seconds(::getpid());
  ASSERT_TRUE(before.has_value());
  std::thread spinner([] { spin_for_cpu(CLOCK_THREAD_CPUTIME_ID, 0.02); });
  spinner.join();
  const auto after = process_cpu_seconds(::getpid());
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(*after - *before, 0.02);
}

TEST(ProcessCpuSeconds, AProcessThatIsGoneReadsAsNothing) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ASSERT_GT(pid, 0);
  ::waitpid(pid, nullptr, 0);
  EXPECT_FALSE(process_cpu_seconds(pid).has_value());
  EXPECT_FALSE(process_cpu_seconds(0).has_value());
  EXPECT_FALSE(process_cpu_seconds(-1).has_value());
}

TEST(CpuPercent, IsCpuOverWallAndNanWhenASampleIsMissing) {
  EXPECT_DOUBLE_EQ(cpu_percent(1.0, 1.5, 0.5), 100.0);
  EXPECT_NEAR(cpu_percent(2.0, 2.013, 0.13), 10.0, 1e-9);
  EXPECT_TRUE(std::isnan(cpu_percent(std::nullopt, 1.0, 1.0)));
  EXPECT_TRUE(std::isnan(cpu_percent(1.0, std::nullopt, 1.0)));
  EXPECT_TRUE(std::isnan(cpu_percent(1.0, 2.0, 0.0)));
}

}  // namespace
}  // namespace client
