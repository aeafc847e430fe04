#include "support/lesson_run.h"

#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

namespace pil::test {

std::string line_value(const std::string& out, const std::string& key) {
  std::smatch m;
  if (std::regex_search(out, m, std::regex("(^|\n)" + key + ": ([^\n]+)"))) return m[2];
  return {};
}

nlohmann::json read_summary(const std::string& out) {
  std::ifstream in(line_value(out, "summary"));
  return nlohmann::json::parse(in);
}

std::vector<TraceSlice> named(const std::vector<TraceSlice>& all, const std::string& prefix) {
  std::vector<TraceSlice> out;
  for (const auto& s : all)
    if (s.name.rfind(prefix, 0) == 0) out.push_back(s);
  return out;
}

size_t count_inside(const std::vector<TraceSlice>& all, const TraceSlice& outer,
                    const std::string& name) {
  size_t n = 0;
  for (const auto& s : all)
    if (s.name == name && outer.contains(s)) ++n;
  return n;
}

ProcessResult expect_usage_error(const std::string& exe, std::vector<std::string> args) {
  TempDir dir;
  const std::string out = dir.path() + "/out";
  const std::string first = args.empty() ? std::string() : args[0];
  args.insert(args.end(), {"--device", "cpu", "--out", out});
  const auto r = run_process(exe, args);
  SCOPED_TRACE(first + " " + (args.size() > 1 ? args[1] : ""));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(first), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "something was written";
  return r;
}

LessonRun::LessonRun(const std::string& exe, std::vector<std::string> args,
                     const std::vector<std::string>& shape) {
  args.insert(args.end(), shape.begin(), shape.end());
  args.insert(args.end(), {"--device", "cpu", "--out", dir.path()});
  // The tests check the whole result (a learner's default run checks a sample of rows).
  if (std::find(args.begin(), args.end(), "--verify") == args.end()) args.insert(args.end(), {"--verify", "full"});
  r = run_process(exe, args);
  trace = line_value(r.out, "trace");
}

Listed listed_variants(const std::string& exe, std::vector<std::string> args) {
  args.insert(args.begin(), "--list");
  const ProcessResult r = run_process(exe, args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Listed l;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;  // a variant left out, and why
    l.variants.push_back(line.substr(0, line.find('\t')));
    if (line.find(" [agrees with ") != std::string::npos) ++l.agreeing;
  }
  return l;
}

GpuLessonRun::GpuLessonRun(const std::string& exe, std::vector<std::string> args) {
  args.insert(args.end(), {"--device", "cuda", "--out", dir.path()});
  if (std::find(args.begin(), args.end(), "--verify") == args.end()) args.insert(args.end(), {"--verify", "full"});
  r = run_process(exe, args);
  // No GPU here: the whole suite is a skip. A variant the library lacks on this GPU also exits
  // 77, but that is this test's answer (its assertions report it), not a reason to skip the rest.
  if (r.exit_code == 77 && r.out.find("no usable CUDA GPU") != std::string::npos) exit_as_skip();
  trace = line_value(r.out, "trace");
  if (!trace.empty()) slices = read_trace_slices(trace);
}

std::string keep_trace(const std::string& trace, const std::string& keep_dir, const std::string& test) {
  if (keep_dir.empty() || trace.empty()) return {};
  static int kept = 0;
  const std::filesystem::path to =
      std::filesystem::path(keep_dir) /
      (test + "." + std::to_string(++kept) + "." + std::filesystem::path(trace).filename().string());
  std::error_code ec;
  std::filesystem::create_directories(keep_dir, ec);
  if (!ec) std::filesystem::copy_file(trace, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    std::cerr << "could not keep the trace " << trace << " in " << keep_dir << ": " << ec.message() << "\n";
    return {};
  }
  std::cerr << "kept the trace " << trace << " as " << to.string() << "\n";
  return to.string();
}

GpuLessonRun::~GpuLessonRun() {
  const char* keep = std::getenv("PIL_GPU_KEEP_DIR");
  if (!keep || !::testing::Test::HasFailure()) return;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  keep_trace(trace, keep, test ? std::string(test->test_suite_name()) + "." + test->name() : "test");
}

size_t GpuLessonRun::count(const std::string& cat, const std::string& prefix) const {
  size_t n = 0;
  for (const auto& s : slices)
    if (s.cat == cat && s.name.rfind(prefix, 0) == 0) ++n;
  return n;
}

size_t GpuLessonRun::count_containing(const std::string& cat, const std::string& part) const {
  size_t n = 0;
  for (const auto& s : slices)
    if (s.cat == cat && s.name.find(part) != std::string::npos) ++n;
  return n;
}

std::vector<TraceSlice> GpuLessonRun::kernels_of(const std::string& op) const {
  std::set<int64_t> ids;
  for (const auto& s : slices)
    if (s.cat == "cpu_op" && s.name == op && s.external_id >= 0) ids.insert(s.external_id);
  std::vector<TraceSlice> kernels;
  for (const auto& s : slices)
    if (s.cat == "kernel" && ids.count(s.external_id)) kernels.push_back(s);
  return kernels;
}

bool compiled_run_passed(const LessonRun& run, const std::string& agrees_with, bool built) {
  if (!built) {
    EXPECT_EQ(run.r.exit_code, 77) << run.r.out << run.r.err;
    EXPECT_NE(run.r.out.find("--variant compiled: no AOTInductor package: "), std::string::npos) << run.r.out;
    return false;
  }
  EXPECT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), 1);
  EXPECT_NE(run.r.out.find("agrees with " + agrees_with), std::string::npos) << run.r.out;
  return run.r.exit_code == 0;
}

}  // namespace pil::test
