#include "support/lesson_run.h"

#include <cstdlib>
#include <regex>

namespace pil::test {

std::string line_value(const std::string& out, const std::string& key) {
  std::smatch m;
  if (std::regex_search(out, m, std::regex("(^|\n)" + key + ": ([^\n]+)"))) return m[2];
  return {};
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

LessonRun::LessonRun(const std::string& exe, std::vector<std::string> args) {
  args.insert(args.end(), {"--device", "cpu", "--out", dir.path()});
  r = run_process(exe, args);
  trace = line_value(r.out, "trace");
}

GpuLessonRun::GpuLessonRun(const std::string& exe, std::vector<std::string> args) {
  args.insert(args.end(), {"--device", "cuda", "--out", dir.path()});
  r = run_process(exe, args);
  if (r.exit_code == 77) std::exit(77);
  trace = line_value(r.out, "trace");
  if (!trace.empty()) slices = read_trace_slices(trace);
}

size_t GpuLessonRun::count(const std::string& cat, const std::string& prefix) const {
  size_t n = 0;
  for (const auto& s : slices)
    if (s.cat == cat && s.name.rfind(prefix, 0) == 0) ++n;
  return n;
}

}  // namespace pil::test
