#pragma once
/// \file
/// Small helpers the reports' files share (gpu_reports.cpp, call_reports.cpp,
/// explain.cpp): a task beside the caller, a percent, intervals given as (start, end) pairs merged
/// and measured. Internal to the trace kit.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <future>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace pil::trace::report_helpers {

/// Runs `f` on a thread of its own when `parallel` (and a thread can be had), else when its
/// result is asked for.
template <typename F>
auto beside(bool parallel, F f) -> std::future<decltype(f())> {
  if (parallel) {
    try {
      return std::async(std::launch::async, std::move(f));
    } catch (const std::system_error&) {
    }
  }
  return std::async(std::launch::deferred, std::move(f));
}

inline std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

/// Merges intervals (start, end) into a sorted union (in place: no second copy).
inline std::vector<std::pair<int64_t, int64_t>> merge(std::vector<std::pair<int64_t, int64_t>> v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  size_t kept = 0;
  for (size_t k = 0; k < v.size(); ++k) {
    if (kept > 0 && v[k].first <= v[kept - 1].second)
      v[kept - 1].second = std::max(v[kept - 1].second, v[k].second);
    else
      v[kept++] = v[k];
  }
  v.resize(kept);
  return v;
}

/// Length of the union of `merged` (sorted, disjoint) clipped to [lo, hi].
inline int64_t covered(const std::vector<std::pair<int64_t, int64_t>>& merged, int64_t lo, int64_t hi) {
  int64_t sum = 0;
  // The first interval that ends after lo; intervals are disjoint, so ends are sorted too.
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const std::pair<int64_t, int64_t>& iv, int64_t v) { return iv.second <= v; });
  for (; it != merged.end() && it->first < hi; ++it) {
    const int64_t a = std::max(it->first, lo), b = std::min(it->second, hi);
    if (b > a) sum += b - a;
  }
  return sum;
}

}  // namespace pil::trace::report_helpers
