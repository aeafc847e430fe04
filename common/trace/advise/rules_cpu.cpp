// The rules of `pil-trace advise` that run on every trace, CPU-only ones included: where the
// host's time goes. Their list, and the first step's rule; each other rule is in the file that
// names its job (rules_cpu.h). Thresholds in thresholds.h; causes in causes.cpp.
#include "trace/advise/rules_cpu.h"

#include <algorithm>

namespace pil::trace::advise_rules {
namespace {

// A first step far slower than the rest: warm-up, the allocator, loading, compiling. Needs at
// least three steps (a first and two to compare it with).
void first_step(const RuleContext& c, RuleResult& out) {
  if (c.step_ns.size() < 3) {
    out.unable("fewer than 3 profiled steps (ProfilerStep#N)");
    return;
  }
  if (!c.first_step_slow()) return;
  const int64_t rest = c.median_after_first_step_ns();
  const double ratio = double(c.step_ns[0]) / double(rest);
  Symptom s;
  const Event& first = c.trace.events[c.index.steps[0]];
  s.text = "the first step (" + std::string(first.name) + ") took " +
           format_duration(first.dur_ns) + ", " + fixed(ratio, 1) + "x the others' median (" +
           format_duration(rest) + ")";
  s.figures = {
      {"first_step_ns", double(first.dur_ns)}, {"median_other_ns", double(rest)}, {"ratio", ratio}};
  s.examples.push_back(c.example(c.index.steps[0]));
  s.saved_ns = first.dur_ns - rest;
  s.how = "the first step's time beyond the others' median";
  out.symptom(std::move(s));
}

}  // namespace

LaunchedWork launched_work(const RuleContext& c, const std::vector<long>& root,
                           const std::function<bool(const Event&)>& keep) {
  const CpuSlices& cs = c.cpu();
  LaunchedWork w;
  w.by_root.assign(cs.size(), 0);
  std::vector<Interval> spans;
  for (size_t s = 0; s < cs.size(); ++s) {
    if (root[s] < 0 || !is_launch_call(c.trace.events[cs.event(s)].category)) continue;
    for (size_t i : c.index.work_of(cs.event(s))) {
      const Event& e = c.trace.events[i];
      if (keep && !keep(e)) continue;
      w.by_root[size_t(root[s])] += e.dur_ns;
      spans.push_back({e.start_ns, e.end_ns()});
      ++w.items;
    }
  }
  merge(spans);
  w.union_ns = length(spans);
  return w;
}

std::vector<long> outermost_roots(const CpuSlices& cs, const std::function<bool(size_t)>& is_root) {
  std::vector<long> root(cs.size(), -1);
  for (size_t s = 0; s < cs.size(); ++s) {  // parents come before their children
    const long p = cs.parent(s);
    if (p >= 0 && root[size_t(p)] >= 0) root[s] = root[size_t(p)];
    else if (is_root(s)) root[s] = long(s);
  }
  return root;
}

std::vector<Rule> cpu_rules() {
  // host_time_is_cost: the rule reads the host's time as the cost on a trace without GPU work.
  constexpr bool kClocks = false, kHostCost = true, kCpuSide = true;
  // Read from the steps, memory events or collectives alone, or the host's time (which a GPU
  // trace leaves to the GPU rules: they answer kGpuJudgesHostTime there): run whatever the
  // launch links.
  constexpr bool kNoLinks = false;
  return {
      {"first_step", "first_step", "a first step far slower than the rest", false, first_step, kClocks, false,
       false, kNoLinks},
      {"op_overhead", "op_overhead", "operators too small for their dispatch cost", false, op_overhead, kClocks,
       kHostCost, kCpuSide, kNoLinks},
      {"op_loop", "op_loop", "a loop calling small operators one row or element at a time", false, op_loop,
       kClocks, kHostCost, kCpuSide},
      {"copies", "copies", "copies (copy_, contiguous, to, clone) taking a large share", false, copies, kClocks,
       kHostCost, kCpuSide},
      {"optimizer", "optimizer", "the optimizer's share of the step", false, optimizer, kClocks, kHostCost,
       kCpuSide},
      {"untraced", "untraced", "time in a step outside every operator and range", false, untraced, kClocks,
       kHostCost, kCpuSide, kNoLinks},
      {"data_loading", "untraced", "data loading on the training thread", false, data_loading, kClocks,
       kHostCost, kCpuSide, kNoLinks},
      {"rebuilt_constant", "rebuilt_constant", "the same constant tensor built in every step", false,
       rebuilt_constant, kClocks, kHostCost, kCpuSide},
      {"memory_peak", "memory_peak", "memory peaks near the device's capacity", false, memory_peak, kClocks,
       false, false, kNoLinks},
      {"exposed_comm", "exposed_comm", "communication not hidden behind computation", false,
       exposed_comm, kClocks, false, false, kNoLinks},
  };
}

}  // namespace pil::trace::advise_rules
