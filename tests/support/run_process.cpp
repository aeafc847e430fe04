#include "support/run_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pil::test {
namespace {

// The TempDirs alive now, for exit_as_skip (the tests run on one thread).
std::set<const TempDir*>& live_dirs() {
  static std::set<const TempDir*> dirs;
  return dirs;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args) {
  TempDir tmp;
  const std::string out_path = tmp.path() + "/out", err_path = tmp.path() + "/err";
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ProcessResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "pil-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
  live_dirs().insert(this);
}

TempDir::~TempDir() {
  live_dirs().erase(this);
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void exit_as_skip() {
  for (const TempDir* dir : live_dirs()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir->path(), ignored);
  }
  std::exit(77);
}

int count_lines_starting_with(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) ++n;
  return n;
}

}  // namespace pil::test
