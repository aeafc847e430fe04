// Copies between host and GPU from pageable memory: Kineto names them "Memcpy HtoD (Pageable ->
// Device)" and "Memcpy DtoH (Device -> Pageable)". The driver stages such a copy through a
// pinned buffer of its own, and the call returns only when the data is staged: the CPU is held
// for about the copy's length and the copy cannot overlap other work. (ROCm's traces name their
// copies "Host -> Device" without saying which memory: not counted.) A call that waited for the
// stream's earlier work before its copy could start held the CPU that long for that work, not for
// the copy: that part is a wait for the GPU (host_sync counts a copy to pageable host memory as
// one), and only the rest is counted here.
#include <algorithm>
#include <set>

#include "trace/advise/names.h"
#include "trace/advise/rules_gpu.h"

namespace pil::trace::advise_rules {
int64_t wait_before_copy(const RuleContext& c, size_t call, size_t copy) {
  const Event& e = c.trace.events[call];
  const int64_t free_at = c.index.stream_free_before(copy);
  return std::clamp<int64_t>(free_at == INT64_MIN ? 0 : free_at - e.start_ns, 0, e.dur_ns);
}

namespace {

/// The part of copy call `call`'s time that is its copy's: from when the stream's earlier work
/// had ended (or the call began, if later) to the call's end.
int64_t own_hold(const RuleContext& c, size_t call, size_t copy) {
  return c.trace.events[call].dur_ns - wait_before_copy(c, call, copy);
}

}  // namespace

void pageable_copy(const RuleContext& c, RuleResult& out) {
  if (!any_name(c.trace, is_pageable_copy)) return;
  const auto& ev = c.trace.events;
  int64_t copies = 0, to_device = 0, to_host = 0, bytes = 0, sized = 0, gpu_ns = 0, held = 0;
  std::set<size_t> calls;  // a call counted once, whatever it copied
  for (size_t i : c.index.device_work()) {
    const Event& e = ev[i];
    if (e.category != Category::Memcpy || !is_pageable_copy(e.name) || !c.in_basis_work(i)) continue;
    ++copies;
    to_device += is_copy_to_device(e.name);
    to_host += is_copy_to_host(e.name);
    gpu_ns += e.dur_ns;
    if (const int64_t b = c.trace.copy_bytes_of(e); b >= 0) bytes += b, ++sized;
    if (const long call = c.index.launch_of(i); call >= 0 && calls.insert(size_t(call)).second)
      held += own_hold(c, size_t(call), i);
  }
  if (copies == 0) return;
  // Small copies cost little either way; where the trace gives no sizes, the time decides.
  if (sized > 0 && bytes < threshold::kPageableMinBytes) return;
  if (double(held) < c.options.min_saved_share * double(c.basis_ns)) return;

  Symptom s;
  s.text = std::to_string(copies) + " cop" + (copies == 1 ? "y" : "ies") + " from pageable memory (" +
           std::to_string(to_device) + " to the GPU, " + std::to_string(to_host) + " to the host; " +
           (sized ? grouped(bytes) + " bytes" + (sized < copies ? " in the " + std::to_string(sized) +
                                                                      " that give their size"
                                                                : "")
                  : "the trace gives no sizes") +
           "): their calls held the CPU " + format_duration(held) + " for them, the copies ran " +
           format_duration(gpu_ns) + " on the GPU";
  s.figures = {{"copies", double(copies)}, {"to_device", double(to_device)},
               {"to_host", double(to_host)}, {"bytes", double(bytes)},
               {"held_ns", double(held)}, {"gpu_ns", double(gpu_ns)}};
  std::vector<size_t> worst(calls.begin(), calls.end());
  auto own = [&](size_t call) {
    const auto work = c.index.work_of(call);
    return work.empty() ? ev[call].dur_ns : own_hold(c, call, work.front());
  };
  std::stable_sort(worst.begin(), worst.end(), [&](size_t a, size_t b) { return own(a) > own(b); });
  for (size_t k = 0; k < worst.size() && k < c.options.examples; ++k) {
    std::string detail = "held the CPU " + format_duration(own(worst[k]));
    if (own(worst[k]) < ev[worst[k]].dur_ns)
      detail += " for its copy (" + format_duration(ev[worst[k]].dur_ns - own(worst[k])) +
                " more waiting for the stream's earlier work)";
    for (size_t w : c.index.work_of(worst[k])) {
      const Event& copy = ev[w];
      detail += " for " + std::string(copy.name);
      if (const int64_t b = c.trace.copy_bytes_of(copy); b >= 0) {
        detail += ", " + grouped(b) + " bytes";
        if (copy.dur_ns > 0) detail += " at " + fixed(double(b) / double(copy.dur_ns), 1) + " GB/s";
      }
      // A copy that started long into its call with nothing earlier on its stream in the trace
      // (a V100 sample's 2.9 ms copy began 42.9 ms into its call): a wait the trace does not
      // show, said beside the figure, which stays an upper bound.
      const int64_t waited = wait_before_copy(c, worst[k], w);
      const int64_t late = copy.start_ns - (ev[worst[k]].start_ns + waited);
      if (late > std::max<int64_t>(copy.dur_ns, 1'000'000))
        detail += "; the copy started " + format_duration(late) +
                  " after the call had begun with its stream free: a wait the trace does not show, maybe "
                  "not the copy's";
      break;  // one copy per call
    }
    s.examples.push_back(c.example(worst[k], detail));
  }
  s.saved_ns = held;
  s.how = "the CPU time the copies' calls held (" + format_duration(held) +
          "): from pinned memory with non_blocking the call returns at once and the copy "
          "overlaps other work";
  // The bound assumes work to overlap: where the calls held most of the basis, there is little,
  // and what pinned memory gains is its faster transfer, which the trace does not show.
  if (2 * held > c.basis_ns)
    s.how += "; here the calls held " + percent_text(std::min(1.0, double(held) / double(c.basis_ns))) + " of " +
             c.basis_noun() +
             ", with little beside them to overlap: the gain is then the pinned transfer's speed, "
             "which this trace cannot measure (far below this bound)";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
