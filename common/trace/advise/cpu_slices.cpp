// The CPU slices nested once for advise's rules about the host's time (cpu_slices.h).
#include "trace/advise/cpu_slices.h"

#include <limits>
#include <map>
#include <stdexcept>

#include "trace/nesting.h"

namespace pil::trace::advise_rules {

CpuSlices::CpuSlices(const TraceIndex& index, int64_t basis_start, int64_t basis_end) : index_(index) {
  const Trace& t = index.trace();
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_thread;
  std::vector<size_t>* last = nullptr;  // a thread's events mostly come together: one lookup each run
  std::pair<int64_t, int64_t> last_key;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!is_cpu_slice(e.category)) continue;
    if (!last || last_key.first != e.pid || last_key.second != e.tid) {
      last_key = {e.pid, e.tid};
      last = &by_thread[last_key];
    }
    last->push_back(i);
  }
  size_t n = 0;
  for (const auto& entry : by_thread) n += entry.second.size();
  if (n >= size_t(std::numeric_limits<int32_t>::max()))
    throw std::length_error("pil-trace advise: more than 2 billion CPU slices");
  event_.reserve(n);
  parent_.reserve(n);
  step_.reserve(n);
  self_.reserve(n);
  std::vector<int32_t> slot_at_depth;  // the open slices' slots, outermost first
  for (auto& [key, idx] : by_thread) {
    order_for_nesting(t.events, idx);
    Thread th{key.first, key.second, event_.size(), 0};
    size_t started = 0;  // steps started by the last slice's start (in nesting order, starts rise)
    nest(t.events, idx, [&](size_t i, long up, int depth) {
      const Event& e = t.events[i];
      const int32_t slot = int32_t(event_.size());
      const int32_t up_slot = up >= 0 ? slot_at_depth[size_t(depth) - 1] : -1;
      event_.push_back(i);
      parent_.push_back(up_slot);
      step_.push_back(int32_t(index.step_at(e.start_ns, started)));
      self_.push_back(e.dur_ns);
      if (up_slot >= 0) self_[size_t(up_slot)] -= e.dur_ns;
      if (slot_at_depth.size() <= size_t(depth)) slot_at_depth.resize(size_t(depth) + 1);
      slot_at_depth[size_t(depth)] = slot;
      return true;
    });
    th.end = event_.size();
    threads.push_back(th);
  }
  no_steps_ = index.steps.empty();
  if (no_steps_) {
    basis_.push_back({basis_start, basis_end});
  } else {
    for (size_t s : index.steps) basis_.push_back({t.events[s].start_ns, t.events[s].end_ns()});
    merge(basis_);
  }
}

long CpuSlices::op_parent(size_t slot) const {
  const Trace& t = index_.trace();
  for (long p = parent_[slot]; p >= 0; p = parent_[size_t(p)])
    if (is_operator(t.events[event_[size_t(p)]])) return p;
  return -1;
}

long CpuSlices::caller(size_t slot) const {
  const Trace& t = index_.trace();
  for (long p = parent_[slot]; p >= 0; p = parent_[size_t(p)]) {
    const Event& e = t.events[event_[size_t(p)]];
    if (is_operator(e) || is_named_range(e)) return p;
  }
  return -1;
}

std::vector<int64_t> CpuSlices::launch_call_ns() const {
  const Trace& t = index_.trace();
  std::vector<int64_t> inside(size(), 0);
  for (size_t s = size(); s-- > 0;) {  // children come after their parents: each is done first
    if (parent_[s] < 0) continue;
    const Event& e = t.events[event_[s]];
    inside[size_t(parent_[s])] += is_launch_call(e.category) ? e.dur_ns : inside[s];
  }
  return inside;
}

// Walks the slots [begin, end) of one thread in nesting order with the stack of open slices:
// between two moments where the innermost open slice changes, the time belongs to that slice.
void CpuSlices::innermost(size_t begin, size_t end, const std::vector<char>& keep,
                          std::vector<Interval>& out) const {
  const Trace& t = index_.trace();
  std::vector<size_t> open;
  int64_t cursor = 0;
  auto give = [&](size_t slot, int64_t to) {  // [cursor, to) to `slot`
    if (keep[slot] && to > cursor) out.push_back({cursor, to});
    cursor = std::max(cursor, to);
  };
  for (size_t s = begin; s < end; ++s) {
    while (!open.empty() && long(open.back()) != parent_[s]) {
      give(open.back(), t.events[event_[open.back()]].end_ns());
      open.pop_back();
    }
    const int64_t start = t.events[event_[s]].start_ns;
    if (!open.empty()) give(open.back(), start);
    cursor = start;
    open.push_back(s);
  }
  while (!open.empty()) {
    give(open.back(), t.events[event_[open.back()]].end_ns());
    open.pop_back();
  }
}

int64_t length_within(std::vector<Interval> v, const std::vector<Interval>& basis) {
  merge(v);
  return overlap(v, basis);
}

}  // namespace pil::trace::advise_rules
