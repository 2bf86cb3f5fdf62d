// Run-time git revision (see git_revision.hh).
#include "client/git_revision.hh"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

extern char** environ;

namespace client {
namespace {

constexpr std::size_t kMaxOutput = 256;
constexpr const char* kUnknown = "unknown";

bool plausible_revision(const std::string& s) {
  if (s.size() < 4 || s.size() > 64) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Owns a file descriptor.
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string git_revision(const std::string& dir, std::chrono::milliseconds timeout) {
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return kUnknown;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return kUnknown;
  Fd read_end(fds[0]), write_end(fds[1]);

  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return kUnknown;
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.fd, 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::string git = "git", c = "-C", d = dir, rp = "rev-parse", sh = "--short", head = "HEAD";
  char* argv[] = {git.data(), c.data(), d.data(), rp.data(), sh.data(), head.data(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, "git", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return kUnknown;
  ::close(write_end.fd);
  write_end.fd = -1;

  std::string out;
  bool complete = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{read_end.fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char buf[128];
    const ssize_t n = ::read(read_end.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      complete = n == 0;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxOutput) break;
  }
  int status = 0;
  if (!complete) ::kill(pid, SIGKILL);  // overran or misbehaved: nothing it says is used
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return kUnknown;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return plausible_revision(out) ? out : kUnknown;
}

std::string run_time_git_revision() {
#ifdef BENCH_SOURCE_DIR
  if (std::string rev = git_revision(BENCH_SOURCE_DIR); rev != kUnknown) return rev;
#endif
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) return git_revision(exe.parent_path().string());
  return kUnknown;
}

}  // namespace client
