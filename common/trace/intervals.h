#pragma once
/// \file
/// Time as lists of intervals: merged into disjoint, sorted lists, then measured, clipped,
/// subtracted and intersected. What the ranks report counts computation and communication with,
/// and what `pil-trace advise` counts a share of the steps with (time two threads spend at once
/// counted once).
#include <algorithm>
#include <cstdint>
#include <vector>

namespace pil::trace {

struct Interval {
  int64_t from = 0, to = 0;  ///< [from, to), ns
};

/// Sorts and merges into disjoint intervals (empty ones dropped). Intervals already in order
/// (one thread's, walked in time) are not sorted again.
inline void merge(std::vector<Interval>& v) {
  auto by_start = [](const Interval& a, const Interval& b) { return a.from < b.from; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
  size_t out = 0;
  for (const Interval& i : v) {
    if (i.to <= i.from) continue;
    if (out && i.from <= v[out - 1].to)
      v[out - 1].to = std::max(v[out - 1].to, i.to);
    else
      v[out++] = i;
  }
  v.resize(out);
}

/// The parts of merged `v` inside [from, to).
inline std::vector<Interval> clip(const std::vector<Interval>& v, int64_t from, int64_t to) {
  std::vector<Interval> out;
  auto it = std::upper_bound(v.begin(), v.end(), from,
                             [](int64_t x, const Interval& i) { return x < i.to; });
  for (; it != v.end() && it->from < to; ++it)
    out.push_back({std::max(it->from, from), std::min(it->to, to)});
  return out;
}

/// Total length of merged `v`.
inline int64_t length(const std::vector<Interval>& v) {
  int64_t n = 0;
  for (const Interval& i : v) n += i.to - i.from;
  return n;
}

/// Merged `a` with merged `b` taken out.
inline std::vector<Interval> subtract(const std::vector<Interval>& a,
                                      const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t j = 0;
  for (Interval i : a) {
    while (j < b.size() && b[j].to <= i.from) ++j;
    for (size_t k = j; k < b.size() && b[k].from < i.to; ++k) {
      if (b[k].from > i.from) out.push_back({i.from, b[k].from});
      i.from = std::max(i.from, b[k].to);
    }
    if (i.from < i.to) out.push_back(i);
  }
  return out;
}

/// The intersection of two merged lists, merged.
inline std::vector<Interval> intersect(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const int64_t from = std::max(a[i].from, b[j].from), to = std::min(a[i].to, b[j].to);
    if (from < to) out.push_back({from, to});
    (a[i].to < b[j].to) ? ++i : ++j;
  }
  return out;
}

/// Length of the intersection of two merged lists.
inline int64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t n = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    n += std::max<int64_t>(0, std::min(a[i].to, b[j].to) - std::max(a[i].from, b[j].from));
    (a[i].to < b[j].to) ? ++i : ++j;
  }
  return n;
}

}  // namespace pil::trace
