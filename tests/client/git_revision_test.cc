// git_revision(): read when called (a new commit shows at once, nothing is cached or baked in at
// configure time), "unknown" outside a work tree or for a missing directory.
#include "client/git_revision.hh"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace client {
namespace {

// Runs a shell command (test set-up only) and returns its stdout, trimmed.
std::string run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return {};
  std::string out;
  std::array<char, 256> buf;
  while (std::fgets(buf.data(), buf.size(), pipe.get()) != nullptr) out += buf.data();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("git_revision_test." + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(GitRevision, ReadWhenCalled) {
  if (std::system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "git not installed";
  TempDir dir;
  const std::string git = "git -C '" + dir.path.string() +
                          "' -c user.name=t -c user.email=t@t -c commit.gpgsign=false ";
  ASSERT_EQ(std::system((git + "init -q").c_str()), 0);
  EXPECT_EQ(git_revision(dir.path.string()), "unknown");  // no commit yet
  ASSERT_EQ(std::system((git + "commit -q --allow-empty -m one").c_str()), 0);
  const std::string first = run(git + "rev-parse --short HEAD");
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(git_revision(dir.path.string()), first);
  ASSERT_EQ(std::system((git + "commit -q --allow-empty -m two").c_str()), 0);
  const std::string second = run(git + "rev-parse --short HEAD");
  ASSERT_NE(first, second);
  EXPECT_EQ(git_revision(dir.path.string()), second);
  // A subdirectory of the work tree names the same revision.
  std::filesystem::create_directories(dir.path / "sub");
  EXPECT_EQ(git_revision((dir.path / "sub").string()), second);
}

TEST(GitRevision, UnknownOutsideAWorkTree) {
  TempDir dir;
  const std::string plain = (dir.path / "plain").string();
  std::filesystem::create_directories(plain);
  // GIT_CEILING_DIRECTORIES stops git from finding a repository above the temp directory.
  ::setenv("GIT_CEILING_DIRECTORIES", dir.path.string().c_str(), 1);
  EXPECT_EQ(git_revision(plain), "unknown");
  ::unsetenv("GIT_CEILING_DIRECTORIES");
  EXPECT_EQ(git_revision((dir.path / "missing").string()), "unknown");
  EXPECT_EQ(git_revision(""), "unknown");
}

}  // namespace
}  // namespace client
