// The benchmark programs' check of Google Benchmark's flags: one line for what is wrong, before
// Google Benchmark runs on a value it cannot use (--benchmark_format=nope ran, exit 0) or aborts
// on one (--benchmark_repetitions=-1: std::length_error in vector::reserve, exit 134).
#include "harness/bench_flags.h"

#include <gtest/gtest.h>

#include "support/run_process.h"

namespace pil {
namespace {

TEST(BenchFlags, GoogleBenchmarksOwnFlagsPass) {
  EXPECT_EQ(benchmark_flag_problem({}), "");
  EXPECT_EQ(benchmark_flag_problem({"--benchmark_filter=^eager/cpu/fp32/64/", "--benchmark_min_time=0.05s",
                                    "--benchmark_repetitions=3", "--benchmark_format=json",
                                    "--benchmark_out_format=csv", "--benchmark_time_unit=us",
                                    "--benchmark_list_tests", "--benchmark_counters_tabular=true",
                                    "--benchmark_color=auto", "--benchmark_context=run=a,b=c", "--v=1", "--help"}),
            "");
  EXPECT_EQ(benchmark_flag_problem({"--benchmark_min_time=10x"}), "");
  EXPECT_EQ(benchmark_flag_problem({"--benchmark_min_time=0.5"}), "");
}

TEST(BenchFlags, EachBadValueIsOneLineWithWhatIsAllowed) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--benchmark_repetitions=-1"}, "--benchmark_repetitions: -1 is out of range; allowed: a whole number from 1 to"},
      {{"--benchmark_repetitions=0"}, "--benchmark_repetitions: 0 is out of range"},
      {{"--benchmark_format=nope"}, "--benchmark_format: unknown value 'nope'; allowed: console|json|csv"},
      {{"--benchmark_out_format=nope"}, "--benchmark_out_format: unknown value 'nope'"},
      {{"--benchmark_time_unit=nope"}, "--benchmark_time_unit: unknown value 'nope'; allowed: ns|us|ms|s"},
      {{"--benchmark_list_tests=nope"}, "--benchmark_list_tests: unknown value 'nope'; allowed: true|false"},
      {{"--benchmark_min_time=abc"}, "--benchmark_min_time: 'abc' is not a time; allowed: seconds over 0"},
      {{"--benchmark_min_time=-1"}, "--benchmark_min_time: '-1' is not a time"},
      {{"--benchmark_filter=(("}, "--benchmark_filter: '((' is not a regular expression"},
      {{"--benchmark_filter=-*"}, "--benchmark_filter: '-*' is not a regular expression"},
      {{"--benchmark_out=/nonexistent/dir/x.json"}, "--benchmark_out: /nonexistent/dir/x.json: no folder /nonexistent/dir; allowed: a file to write"},
      {{"--benchmark_out=/"}, "--benchmark_out: /: a folder, not a file; allowed: a file to write"},
      {{"--benchmark_out="}, "--benchmark_out: an empty name; allowed: a file to write"},
      // A folder that takes no new file (the write's temporary one), root or not.
      {{"--benchmark_out=/proc/self/x.json"}, "--benchmark_out: /proc/self/x.json: cannot make a file in /proc/self: "},
      {{"--benchmark_filter"}, "--benchmark_filter: no value given; allowed: --benchmark_filter=VALUE"},
      {{"--size", "4"}, "--size: not a flag of the benchmarks; allowed: Google Benchmark's --benchmark_* flags"},
      {{"--benchmark_repetitions=2", "--benchmark_repetitions=3"},
       "--benchmark_repetitions: given 2 times (2, 3); allowed: once"},
      // In the lessons' words (base/command_line.h): a typo's flag named, a word with no flag.
      {{"--benchmark_filterr=x"}, "--benchmark_filterr: not a flag of the benchmarks (did you mean --benchmark_filter?); allowed: "},
      {{"extra"}, "'extra': a value with no flag before it; allowed: Google Benchmark's"},
  };
  for (const auto& [args, says] : cases) {
    const std::string p = benchmark_flag_problem(args);
    EXPECT_EQ(p.rfind(says, 0), 0u) << args.front() << ": " << p;
    EXPECT_EQ(p.find('\n'), std::string::npos) << p;
  }
}

// Read as Google Benchmark reads --benchmark_filter: "" and "all" select all, a leading '-' what
// the rest does not match, else a regular expression searched for in the full name.
TEST(BenchFlags, AFilterSelectsAsGoogleBenchmarkReadsIt) {
  const std::vector<std::string> names = {"slow/cpu/fp32/2/manual_time", "fast/cpu/bf16/2/manual_time"};
  for (const char* spec : {"", "all", ".", "slow", "^fast/cpu/", "bf16/2", "manual_time$", "-^slow", "-nothing"})
    EXPECT_TRUE(benchmark_filter_selects(spec, names)) << spec;
  for (const char* spec : {"nomatch", "/cuda/", "^cpu", "-.", "-manual", "slow/cpu/fp32/2$"})
    EXPECT_FALSE(benchmark_filter_selects(spec, names)) << spec;
  EXPECT_FALSE(benchmark_filter_selects("", {}));
}

}  // namespace
}  // namespace pil
