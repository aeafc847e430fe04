#include "trace/tool/value_checks.h"

#include "base/atomic_file.h"
#include "base/command_line.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <system_error>

namespace pil::trace::tool {

namespace {

std::string shown(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

CLI::Validator whole_number(long long min, long long max) {
  const bool bounded = max != std::numeric_limits<long long>::max();
  return CLI::Validator(
      [=](std::string& text) {
        int64_t value = 0;
        return pil::whole_number_problem(text, min, bounded ? max : std::numeric_limits<int64_t>::max(), value);
      },
      "from " + std::to_string(min) + (bounded ? " to " + std::to_string(max) : " up"));
}

namespace {

/// A finite number in [min, max], described by `range`.
CLI::Validator finite_number(double min, double max, const std::string& range) {
  const std::string allowed = "; allowed: a number" + (range.empty() ? "" : " " + range);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc::invalid_argument || ptr != end || !std::isfinite(value))
          return "'" + text + "' is not a number" + allowed;
        if (ec == std::errc::result_out_of_range || value < min || value > max)
          return text + " is out of range" + allowed;
        return "";
      },
      range);
}

}  // namespace

CLI::Validator number(double min, double max) {
  if (std::isinf(min)) return finite_number(min, max, "");
  return finite_number(min, max, "from " + shown(min) + (std::isinf(max) ? " up" : " to " + shown(max)));
}

CLI::Validator non_empty(const std::string& what) {
  return CLI::Validator(
      [=](std::string& text) -> std::string { return text.empty() ? "an empty name; allowed: " + what : ""; },
      what);
}

CLI::Validator one_of(const std::vector<std::string>& names) {
  std::string allowed;
  for (const auto& n : names) allowed += (allowed.empty() ? "" : "|") + n;
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        size_t i = 0;
        std::string problem = pil::choice_problem(text, names, i);
        if (problem.empty()) text = names[i];
        return problem;
      },
      allowed);
}

std::string output_problem(const std::string& flag, const std::string& out,
                           const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  if (out.empty()) return flag + ": an empty name; allowed: a file to write";
  const std::string said = flag + " " + out + ": ";
  // Its folder too must take a new file (/proc's does not, nor a read-only folder's), said before
  // the trace is read rather than after the report.
  if (const std::string why = pil::unwritable_reason(out); !why.empty()) return said + why + "; allowed: a file to write";
  std::error_code ec;
  for (const std::string& in : inputs)
    if (!in.empty() && fs::equivalent(out, in, ec))
      return said + (in == out ? "the trace" : "the trace " + in) + " this command reads; allowed: another file";
  return "";
}

}  // namespace pil::trace::tool
