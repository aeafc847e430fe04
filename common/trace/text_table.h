#pragma once
/// \file
/// Aligned text tables in the layout of `nsys stats`: a header row, a rule, right-aligned numbers
/// and a left-aligned last column for names.
#include <string>
#include <vector>

namespace pil::trace {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// Every column right-aligned except the last (names), which is left-aligned.
  std::string str() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

/// Numbers for tables: "1,234,567" for nanoseconds, "12.3" for percentages.
std::string grouped(long long value);
std::string fixed(double value, int decimals = 1);
/// A count and its noun, the noun's plural an "s" added: "1 step", "12 steps", "1,234 launch calls".
std::string counted(long long n, const std::string& noun);
/// A count and its noun for a summary line, the digits not grouped: "1 launch", "3 launches".
std::string count_of(long long n, const std::string& one, const std::string& many);

/// A duration for people to read, three significant figures in the unit that keeps the number
/// between 1 and 1000: "812 ns", "26.0 us", "1.54 ms", "3.19 s" (past 1000 s, whole seconds).
/// For our own summary lines; the key_averages table keeps Python's format (format_time_ns).
std::string format_duration(int64_t ns);

/// A timestamp as the trace writes it: microseconds with three decimals ("1234.567", "-1.005"),
/// exactly: what Chrome-trace writers write and what reports quote of it.
std::string trace_ts(int64_t ns);

}  // namespace pil::trace
