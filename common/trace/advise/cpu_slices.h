#pragma once
/// \file
/// The CPU slices of a trace (operators, ranges, runtime and driver calls) nested once per
/// thread, for the rules of `pil-trace advise` about the host's time: each slice's parent, its
/// self time, the profiled step it starts in, and the stretches of time each slice is the
/// innermost one on its thread (what its self time is made of).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/intervals.h"
#include "trace/reports.h"

namespace pil::trace::advise_rules {

/// A named range: a user_annotation other than a step, or, in torch 1.8-1.9's traces, which
/// wrote every CPU slice as an operator, one of Python's own ranges, told by the '#' in their
/// names ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
/// "Optimizer.step#SGD.step"): no operator's name has one.
inline bool is_named_range(const Event& e) {
  if (e.category == Category::UserAnnotation) return !is_step(e);
  return e.category == Category::CpuOp && e.name.find('#') != std::string_view::npos;
}
/// The DataLoader's fetch of a batch, as Python's DataLoader records it
/// ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__").
inline bool is_data_loading_name(std::string_view name) { return name.rfind("enumerate(DataLoader)#", 0) == 0; }
inline bool is_data_loading(const Event& e) { return is_named_range(e) && is_data_loading_name(e.name); }
/// A fetch that waits for the DataLoader's worker processes (_MultiProcessingDataLoaderIter),
/// not one the training thread prepares itself (_SingleProcessDataLoaderIter).
inline bool loads_in_workers(std::string_view fetch) { return fetch.find("MultiProcessing") != std::string_view::npos; }
/// An operator (cpu_op), not a range written as one.
inline bool is_operator(const Event& e) {
  return e.category == Category::CpuOp && e.name.find('#') == std::string_view::npos;
}

class CpuSlices {
 public:
  /// [basis_start, basis_end): the basis of a trace without steps (RuleContext's).
  CpuSlices(const TraceIndex& index, int64_t basis_start, int64_t basis_end);

  /// One thread's slices: slots [begin, end), parents before children.
  struct Thread {
    int64_t pid = 0, tid = 0;
    size_t begin = 0, end = 0;
  };
  std::vector<Thread> threads;

  size_t size() const { return event_.size(); }
  /// The slot's event (index into Trace::events).
  size_t event(size_t slot) const { return event_[slot]; }
  /// The slot of the slice directly around it on its thread, or -1.
  long parent(size_t slot) const { return parent_[slot]; }
  /// Its duration less its direct children's.
  int64_t self_ns(size_t slot) const { return self_[slot]; }
  /// The profiled step (index into TraceIndex::steps) whose range holds its start, or -1.
  long step(size_t slot) const { return step_[slot]; }
  /// It starts inside the basis: in a profiled step, or anywhere in a trace without steps.
  bool in_steps(size_t slot) const { return no_steps_ || step_[slot] >= 0; }
  /// The innermost operator around it (is_operator), or -1.
  long op_parent(size_t slot) const;
  /// The innermost slice around it that is an operator or a named range other than a step:
  /// who called it, as a user names it. -1 when only the step (or nothing) is around it.
  long caller(size_t slot) const;
  /// Each stretch of time in which a slot's slice is the innermost slice on its thread (its self
  /// time, cut where its children run), for every slot that `keep(slot)` accepts, all threads
  /// together, in order of start (not merged: two threads' stretches may overlap).
  template <typename Keep>
  std::vector<Interval> self_intervals_if(Keep keep) const;

  /// Each slot's time in the CUDA runtime and driver calls inside it (the outermost of each
  /// nest), by slot: what a slice's length holds of launches, copies' and synchronizes' waits,
  /// which the GPU rules judge, not the host's own work.
  std::vector<int64_t> launch_call_ns() const;

  /// The steps' ranges merged (the advice's basis), or the trace's window where it has no steps.
  const std::vector<Interval>& basis() const { return basis_; }

 private:
  const TraceIndex& index_;
  std::vector<size_t> event_;
  std::vector<int32_t> parent_, step_;
  std::vector<int64_t> self_;
  std::vector<Interval> basis_;
  bool no_steps_ = false;
  void innermost(size_t begin, size_t end, const std::vector<char>& keep,
                 std::vector<Interval>& out) const;
};

/// The length of `v` (any intervals) inside the merged `basis`: time counted once however many
/// intervals cover it.
int64_t length_within(std::vector<Interval> v, const std::vector<Interval>& basis);

template <typename Keep>
std::vector<Interval> CpuSlices::self_intervals_if(Keep keep) const {
  std::vector<char> k(size(), 0);
  bool any = false;
  for (size_t s = 0; s < size(); ++s) any |= (k[s] = keep(s) ? 1 : 0);
  std::vector<Interval> out;
  if (!any) return out;
  for (const Thread& t : threads) {  // each thread's stretches come in time order
    const size_t from = out.size();
    innermost(t.begin, t.end, k, out);
    std::inplace_merge(out.begin(), out.begin() + long(from), out.end(),
                       [](const Interval& a, const Interval& b) { return a.from < b.from; });
  }
  return out;
}

}  // namespace pil::trace::advise_rules
