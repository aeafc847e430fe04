#pragma once
/// \file
/// How the slices of one CPU thread nest (a range holds operators, an operator holds the calls it
/// makes): the rule the operator table, the chain of a range and the timeline's rows share.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "trace/event.h"

namespace pil::trace {

/// Nesting order: by start, the longer first where two start together, so a parent always comes
/// before its children.
inline bool nests_before(const Event& a, const Event& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  return a.dur_ns > b.dur_ns;
}

/// Puts the slices `idx` of one thread in nesting order: by start, the longer first where two
/// start together, so a parent always comes before its children. Sorts only when needed (traces
/// mostly come in time order).
inline void order_for_nesting(const std::vector<Event>& ev, std::vector<size_t>& idx) {
  auto before = [&](size_t a, size_t b) { return nests_before(ev[a], ev[b]); };
  if (!std::is_sorted(idx.begin(), idx.end(), before)) std::stable_sort(idx.begin(), idx.end(), before);
}

/// Walks the slices `idx` of one thread, in nesting order, calling `visit(i, parent, depth)`
/// with the innermost slice still open around i (-1 for none) and how many are open. `visit`
/// returns whether i may hold later slices (false for an instant such as an allocation).
/// Python's rule (EventList._populate_cpu_children): a slice is no longer open for one that
/// starts at or after its end, or ends after it; so a zero-length slice holds nothing, and one
/// that starts where another ends is its sibling (a MacBook trace's integer-microsecond
/// aten::empty calls, nested then merged as duplicates: 1,786 calls where Python counts 1,902).
template <typename Visit>
void nest(const std::vector<Event>& ev, const std::vector<size_t>& idx, Visit visit) {
  std::vector<size_t> open;
  for (size_t i : idx) {
    while (!open.empty() &&
           (ev[i].start_ns >= ev[open.back()].end_ns() || ev[i].end_ns() > ev[open.back()].end_ns()))
      open.pop_back();
    if (visit(i, open.empty() ? -1L : long(open.back()), int(open.size()))) open.push_back(i);
  }
}

}  // namespace pil::trace
