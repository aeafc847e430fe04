// The lessons' check support: what a failed GPU check keeps of its runs (keep_trace), and that
// a test process ending as a skip leaves no folder behind.
#include "support/lesson_run.h"
#include "support/run_process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(KeepTrace, CopiesTheTraceWholeUnderTheTestsNameAndNeverOverTheLastOne) {
  pil::test::TempDir dir;
  const std::string trace = dir.path() + "/fix2_cuda_bf16_n2.pt.trace.json";
  std::ofstream(trace) << R"({"traceEvents": []})";
  const std::string keep = dir.path() + "/kept/deeper";  // made if missing
  const std::string first = pil::test::keep_trace(trace, keep, "Suite.Check");
  const std::string second = pil::test::keep_trace(trace, keep, "Suite.Check");
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  EXPECT_NE(first, second);
  EXPECT_EQ(std::filesystem::path(first).parent_path(), std::filesystem::path(keep));
  EXPECT_EQ(std::filesystem::path(first).filename().string().rfind("Suite.Check.", 0), 0u) << first;
  EXPECT_NE(first.find("fix2_cuda_bf16_n2.pt.trace.json"), std::string::npos) << first;
  EXPECT_EQ(read(first), R"({"traceEvents": []})");
  EXPECT_EQ(read(second), R"({"traceEvents": []})");
}

TEST(KeepTrace, NothingToKeepOrNowhereToKeepItKeepsNothing) {
  pil::test::TempDir dir;
  const std::string trace = dir.path() + "/t.pt.trace.json";
  std::ofstream(trace) << "{}";
  EXPECT_EQ(pil::test::keep_trace(trace, "", "T.t"), "");
  EXPECT_EQ(pil::test::keep_trace("", dir.path() + "/kept", "T.t"), "");
  EXPECT_EQ(pil::test::keep_trace(dir.path() + "/missing.json", dir.path() + "/kept", "T.t"), "");
  std::ofstream(dir.path() + "/a-file") << "x";  // a file where the folder would be
  EXPECT_EQ(pil::test::keep_trace(trace, dir.path() + "/a-file", "T.t"), "");
}

// A GPU test with no GPU ends its process as a skip (exit 77, std::exit: no stack unwound). The
// TempDirs alive then are removed first: before, each such skip left an empty folder in /tmp.
TEST(TempDir, ASkipRemovesEveryFolderStillAlive) {
  std::string parent = (std::filesystem::temp_directory_path() / "pil-skip-XXXXXX").string();
  ASSERT_NE(::mkdtemp(parent.data()), nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the child: no exception may reach gtest, whose suite it would go on running
    try {
      ::setenv("TMPDIR", parent.c_str(), 1);
      pil::test::TempDir a, b;
      if (a.path().rfind(parent, 0) != 0 || b.path().rfind(parent, 0) != 0) ::_exit(3);  // not where looked
      std::ofstream(a.path() + "/out") << "a run's output";
      pil::test::exit_as_skip();
    } catch (...) {
      ::_exit(1);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 77);
  EXPECT_TRUE(std::filesystem::is_empty(parent)) << parent;
  std::filesystem::remove_all(parent);
}

}  // namespace
