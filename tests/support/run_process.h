#pragma once
// Runs a program and captures what it printed and how it exited, for end-to-end checks.
#include <string>
#include <vector>

namespace pil::test {

struct ProcessResult {
  int exit_code = -1;
  std::string out;  ///< standard output
  std::string err;  ///< standard error
};

/// Runs `program` with `args` (no shell), waits, returns its exit code and output.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args);

/// A fresh empty folder under the system's temporary folder, removed by the destructor (or by
/// exit_as_skip, whose std::exit unwinds no stack).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Ends the test process as ctest's skip (exit 77) after removing every TempDir still alive:
/// std::exit unwinds no stack, so a folder of a test in progress would stay behind in /tmp.
[[noreturn]] void exit_as_skip();

/// Number of lines in `text` that start with `prefix`.
int count_lines_starting_with(const std::string& text, const std::string& prefix);

}  // namespace pil::test
