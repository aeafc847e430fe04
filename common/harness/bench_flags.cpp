#include "harness/bench_flags.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <regex>

#include "base/atomic_file.h"
#include "base/command_line.h"

namespace pil {
namespace {

enum class Kind { Bool, Color, Count, MinTime, Seconds, Format, TimeUnit, File, Regex, Context, Verbosity };

struct Flag {
  const char* name;
  Kind kind;
};

// Google Benchmark 1.7's flags, as its --help lists them.
constexpr Flag kFlags[] = {
    {"--benchmark_list_tests", Kind::Bool},
    {"--benchmark_filter", Kind::Regex},
    {"--benchmark_min_time", Kind::MinTime},
    {"--benchmark_min_warmup_time", Kind::Seconds},
    {"--benchmark_repetitions", Kind::Count},
    {"--benchmark_enable_random_interleaving", Kind::Bool},
    {"--benchmark_report_aggregates_only", Kind::Bool},
    {"--benchmark_display_aggregates_only", Kind::Bool},
    {"--benchmark_format", Kind::Format},
    {"--benchmark_out", Kind::File},
    {"--benchmark_out_format", Kind::Format},
    {"--benchmark_color", Kind::Color},
    {"--benchmark_counters_tabular", Kind::Bool},
    {"--benchmark_context", Kind::Context},
    {"--benchmark_time_unit", Kind::TimeUnit},
    {"--v", Kind::Verbosity},
};

/// --benchmark_filter's expression, as Google Benchmark reads the flag: "" and "all" are ".", a
/// leading '-' (select what the rest does not match) taken off and said in `negative`.
std::string filter_expression(std::string spec, bool& negative) {
  if (spec.empty() || spec == "all") spec = ".";
  negative = spec[0] == '-';
  if (negative) spec.erase(0, 1);
  return spec;
}

/// A number of seconds, "0.5" (Google Benchmark 1.8 takes "0.5s" and "10x" iterations too, and
/// those pass; 1.7, Debian 12's, says itself that it wants a plain number), "" when it is one.
std::string seconds_problem(const std::string& text, bool strict_positive) {
  std::string digits = text;
  if (!digits.empty() && digits.back() == 's') digits.pop_back();
  char* end = nullptr;
  const double v = digits.empty() ? -1 : std::strtod(digits.c_str(), &end);
  if (digits.empty() || end != digits.c_str() + digits.size() || !(v == v) ||
      (strict_positive ? v <= 0 : v < 0) || v > 1e9)
    return "'" + text + "' is not a time; allowed: seconds " + (strict_positive ? "over 0" : "from 0 up") +
           " (0.5)";
  return "";
}

std::string value_problem(const Flag& f, const std::string& value) {
  switch (f.kind) {
    case Kind::Bool: {
      static const std::vector<std::string> kWords = {"true", "false", "yes", "no", "on", "off", "1", "0"};
      if (std::find(kWords.begin(), kWords.end(), lowercase(value)) == kWords.end())
        return "unknown value '" + value + "'; allowed: true|false";
      return "";
    }
    case Kind::Color: {
      size_t i = 0;
      return choice_problem(value, {"auto", "true", "false"}, i);
    }
    case Kind::Count: {
      int64_t n = 0;
      return whole_number_problem(value, 1, std::numeric_limits<int32_t>::max(), n);
    }
    case Kind::MinTime: {
      // "10x": that many iterations; else seconds.
      if (value.size() > 1 && value.back() == 'x') {
        int64_t n = 0;
        const std::string p = whole_number_problem(value.substr(0, value.size() - 1), 1,
                                                   std::numeric_limits<int64_t>::max(), n);
        return p.empty() ? "" : "'" + value + "' is not an iteration count; allowed: seconds over 0 (0.5)";
      }
      return seconds_problem(value, true);
    }
    case Kind::Seconds: return seconds_problem(value, false);
    case Kind::Format: {
      size_t i = 0;
      return choice_problem(value, {"console", "json", "csv"}, i);
    }
    case Kind::TimeUnit: {
      size_t i = 0;
      return choice_problem(value, {"ns", "us", "ms", "s"}, i);
    }
    case Kind::File: {
      if (value.empty()) return "an empty name; allowed: a file to write";
      const std::string why = unwritable_reason(value);
      return why.empty() ? "" : value + ": " + why + "; allowed: a file to write";
    }
    case Kind::Regex: {
      try {
        // As Google Benchmark compiles it ("-*" is no expression: "*" alone repeats nothing).
        bool negative = false;
        std::regex(filter_expression(value, negative), std::regex_constants::extended);
      } catch (const std::regex_error&) {
        return "'" + value + "' is not a regular expression; allowed: an extended regular expression (^eager/cpu/)";
      }
      return "";
    }
    case Kind::Context:
      if (value.empty() || value.find('=') == std::string::npos)
        return "'" + value + "' is not KEY=VALUE pairs; allowed: key=value,key2=value2";
      return "";
    case Kind::Verbosity: {
      int64_t n = 0;
      return whole_number_problem(value, 0, 1000, n);
    }
  }
  return "";
}

}  // namespace

bool benchmark_filter_selects(const std::string& spec, const std::vector<std::string>& names) {
  bool negative = false;
  std::regex re;
  try {
    re = std::regex(filter_expression(spec, negative), std::regex_constants::extended);
  } catch (const std::regex_error&) {
    return true;  // benchmark_flag_problem said so already; Google Benchmark's answer stands
  }
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return std::regex_search(n, re) != negative; });
}

std::string benchmark_flag_problem(const std::vector<std::string>& args) {
  const char* allowed = "Google Benchmark's --benchmark_* flags, each as --flag=VALUE (--help lists them)";
  std::vector<std::string> names;
  for (const Flag& k : kFlags) names.push_back(k.name);
  std::vector<std::string> seen;
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") continue;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const auto f = std::find_if(std::begin(kFlags), std::end(kFlags), [&](const Flag& k) { return name == k.name; });
    if (f == std::end(kFlags)) return word_not_taken(arg, names, "the benchmarks", allowed, allowed);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      std::vector<std::string> values;  // every value it was given, in order
      for (const std::string& a : args)
        if (a.substr(0, a.find('=')) == name) values.push_back(a.find('=') == std::string::npos ? "" : a.substr(a.find('=') + 1));
      return given_more_than_once(name, values);
    }
    seen.push_back(name);
    if (eq == std::string::npos) {
      if (f->kind == Kind::Bool) continue;  // a bare boolean flag is true
      return name + ": no value given; allowed: " + name + "=VALUE";
    }
    if (const std::string p = value_problem(*f, arg.substr(eq + 1)); !p.empty()) return name + ": " + p;
  }
  return "";
}

}  // namespace pil
