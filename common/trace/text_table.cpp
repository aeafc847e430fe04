#include "trace/text_table.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace pil::trace {

std::string format_duration(int64_t ns) {
  static const char* const kUnits[] = {"ns", "us", "ms", "s"};
  const bool negative = ns < 0;
  double v = negative ? -double(ns) : double(ns);
  size_t unit = 0;
  char buf[48];
  for (;;) {
    // The digits after the point that leave three significant figures; the unit moves up
    // when rounding reaches 1000 ("999.7 us" reads "1.00 ms").
    const int decimals = unit == 0 ? 0 : v < 10 ? 2 : v < 100 ? 1 : 0;
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    if (std::strtod(buf, nullptr) < 1000 || unit == 3) break;
    v /= 1000;
    ++unit;
  }
  return std::string(negative ? "-" : "") + buf + " " + kUnits[unit];
}

std::string TextTable::str() const {
  std::vector<size_t> width(headers_.size(), 0);
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      const bool last = c + 1 == width.size();
      out += last ? cell : pad + cell + "  ";
    }
    return out + "\n";
  };
  std::string out = line(headers_);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  out += line(rule);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string grouped(long long value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (value < 0 ? "-" : "") + out;
}

std::string counted(long long n, const std::string& noun) {
  return grouped(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string count_of(long long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string trace_ts(int64_t ns) {
  const bool negative = ns < 0;
  const uint64_t a = negative ? uint64_t(0) - uint64_t(ns) : uint64_t(ns);
  std::string frac = std::to_string(a % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  return (negative ? "-" : "") + std::to_string(a / 1000) + "." + frac;
}

}  // namespace pil::trace
