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

}  // namespace pil::trace
