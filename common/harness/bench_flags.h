#pragma once
/// \file
/// The lessons' benchmark programs (NN_name_bench) take Google Benchmark's own flags. Google
/// Benchmark reads some values it cannot use without a word (--benchmark_format=nope runs, exit
/// 0; --benchmark_repetitions=-1 aborts in a std::length_error) and names an unknown flag on a
/// line per word; the benchmark programs check the flags first, and say what is wrong in one line
/// (exit 2), as the lessons do for theirs.
#include <string>
#include <vector>

namespace pil {

/// What is wrong with `args` (a benchmark program's words after its name) as Google Benchmark's
/// flags (--benchmark_*=VALUE, --v=N; --help), or "" when nothing is: "--benchmark_repetitions:
/// -1 is out of range; allowed: a whole number from 1 up", "--size: not a flag of the benchmarks;
/// allowed: Google Benchmark's --benchmark_* flags (--help lists them)". --benchmark_out is checked
/// as a file to write (pil::unwritable_reason).
std::string benchmark_flag_problem(const std::vector<std::string>& args);

/// Whether --benchmark_filter `spec` selects any of `names` (the registered benchmarks' full
/// names, "slow/cpu/fp32/2/manual_time"), read as Google Benchmark reads it: "" and "all" select
/// every one, a leading '-' those the rest does not match, else an extended regular expression
/// searched for in each name. Asked before the run, so that a filter that selects nothing is one
/// line (Google Benchmark's own "Failed to match any benchmarks" came with ours).
bool benchmark_filter_selects(const std::string& spec, const std::vector<std::string>& names);

}  // namespace pil
