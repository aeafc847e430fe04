// The optimizer's share of the step. Read from its ranges where the trace has them: Python's
// optimizers record `Optimizer.step#<Class>.step`, the lessons name theirs `optimizer_step`
// (LibTorch's C++ optimizers record none). Else from the optimizer's own operators, which only
// an optimizer calls: the multi-tensor `aten::_foreach_*` and the fused `aten::_fused_adam_`,
// `_fused_adamw_`, `_fused_sgd_`, `_fused_adagrad_`. A trace with neither has no optimizer seen.
// On the CPU, the optimizer's wall time; on a GPU trace, the GPU time of the work it launched
// and the GPU's idle time while the host ran it (its CPU time costs only while the GPU waits):
// a per-parameter optimizer over small tensors (a public LoRA run's Adam over 28 rank-8
// matrices, 224 kernels of about 1 us in 7.87 ms of host time) keeps the GPU idle while it
// launches, which a foreach or fused optimizer removes and a larger batch does not.
#include <algorithm>
#include <map>
#include <string_view>

#include "trace/advise/names.h"  // any_name
#include "trace/advise/rules_cpu.h"

namespace pil::trace::advise_rules {
namespace {

bool is_optimizer_range_name(std::string_view n) {
  return n.rfind("Optimizer.step#", 0) == 0 || n == "optimizer_step";
}

bool is_optimizer_op_name(std::string_view n) {
  return n.rfind("aten::_foreach_", 0) == 0 || n == "aten::_fused_adam_" ||
         n == "aten::_fused_adamw_" || n == "aten::_fused_sgd_" || n == "aten::_fused_adagrad_";
}

bool is_optimizer_range(const Event& e) {
  return is_named_range(e) && is_optimizer_range_name(e.name);
}

bool is_optimizer_op(const Event& e) { return is_operator(e) && is_optimizer_op_name(e.name); }

}  // namespace

void optimizer(const RuleContext& c, RuleResult& out) {
  if (!any_name(c.trace, [](std::string_view n) {
        return is_optimizer_range_name(n) || is_optimizer_op_name(n);
      }))
    return;  // a look at the distinct names first
  const CpuSlices& cs = c.cpu();
  const Trace& t = c.trace;
  std::vector<size_t> ranges, ops;
  for (size_t s = 0; s < cs.size(); ++s) {
    if (!cs.in_steps(s)) continue;
    const Event& e = t.events[cs.event(s)];
    if (is_optimizer_range(e))
      ranges.push_back(s);
    else if (is_optimizer_op(e))
      ops.push_back(s);
  }
  const bool by_range = !ranges.empty();
  std::vector<size_t> outer;  // the outermost of the kind chosen
  for (size_t s : by_range ? ranges : ops) {
    bool nested = false;
    for (long p = cs.parent(s); p >= 0 && !nested; p = cs.parent(size_t(p))) {
      const Event& e = t.events[cs.event(size_t(p))];
      nested = by_range ? is_optimizer_range(e) : is_optimizer_op(e);
    }
    if (!nested) outer.push_back(s);
  }
  if (outer.empty()) return;
  // Everything inside it: the outermost optimizer slice around each slot, or -1.
  std::vector<char> is_outer(cs.size(), 0);
  for (size_t s : outer) is_outer[s] = 1;
  const std::vector<long> root = outermost_roots(cs, [&](size_t s) { return is_outer[s] != 0; });
  // On the CPU its wall time; on a GPU trace the GPU time of the work it launched.
  const bool gpu = c.gpu();
  std::vector<int64_t> cost(cs.size(), 0);
  int64_t opt_ns = 0, items = 0, idle_ns = 0;
  std::vector<Interval> spans;  // its slices' spans
  for (size_t s : outer) {
    const Event& e = t.events[cs.event(s)];
    spans.push_back({e.start_ns, e.end_ns()});
    cost[s] = e.dur_ns;
  }
  // The GPU idle inside its spans (in the basis) from `from` on.
  auto gpu_idle_in_spans = [&](int64_t from) {
    std::vector<Interval> in = intersect(clip(spans, from, INT64_MAX), cs.basis());
    int64_t n = 0;
    for (const Interval& i : in) n += (i.to - i.from) - c.gpu_busy_in(i.from, i.to);
    return n;
  };
  if (gpu) {
    LaunchedWork w = launched_work(c, root);
    cost = std::move(w.by_root);
    merge(spans);
    idle_ns = gpu_idle_in_spans(INT64_MIN);
    opt_ns = w.union_ns + idle_ns;
    items = w.items;
  } else {
    opt_ns = length_within(spans, cs.basis());
  }
  const double share = c.basis_ns > 0 ? double(opt_ns) / double(c.basis_ns) : 0;
  // A first step far slower than the rest (first_step's: warm-up, compiling) dilutes the share
  // over all the steps: judged again over the steps after it, the steady ones.
  double later_share = 0;
  int64_t later_ns = 0;
  if (c.first_step_slow()) {
    const int64_t first_end = t.events[c.index.steps[0]].end_ns();
    if (gpu) {  // the union of the later slices' work, as the share's (two streams overlap)
      std::vector<long> later = root;
      for (long& r : later)
        if (r >= 0 && t.events[cs.event(size_t(r))].start_ns < first_end) r = -1;
      later_ns = launched_work(c, later).union_ns + gpu_idle_in_spans(first_end);
    } else {
      later_ns = length_within(spans, clip(cs.basis(), first_end, INT64_MAX));
    }
    const int64_t later_basis = c.basis_ns - c.step_ns[0];
    later_share = later_basis > 0 ? double(later_ns) / double(later_basis) : 0;
  }
  if (share < threshold::kOptimizerShare && later_share < threshold::kOptimizerShare) return;
  // Its gain is over the whole basis, and held to the floor every finding's is.
  if (double(opt_ns) < c.options.min_saved_share * double(c.basis_ns)) return;

  // What it runs: the operators under it by self time, and how many calls a step makes.
  std::map<std::string_view, int64_t> time_by_op;  // self time of everything under it
  int64_t op_calls = 0;                            // its outermost operators' calls
  for (size_t s = 0; s < cs.size(); ++s) {
    const Event& e = t.events[cs.event(s)];
    if (root[s] < 0 || !is_operator(e)) continue;
    time_by_op[e.name] += cs.self_ns(s);
    const long op = cs.op_parent(s);
    if (op < 0 || root[size_t(op)] < 0) ++op_calls;
  }
  int64_t cpu_ns = 0;
  for (size_t s : outer) cpu_ns += t.events[cs.event(s)].dur_ns;
  std::vector<std::pair<std::string_view, int64_t>> top(time_by_op.begin(), time_by_op.end());
  std::stable_sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string what;
  for (size_t i = 0; i < top.size() && i < 3; ++i)
    what += (i ? ", " : "") + std::string(top[i].first) + " " +
            percent_text(double(top[i].second) / double(std::max<int64_t>(cpu_ns, 1)));
  const int64_t steps = std::max<int64_t>(int64_t(c.step_ns.size()), 1);

  Symptom s;
  s.text = std::string("the optimizer (") +
           (by_range ? "its ranges, " + std::string(t.events[cs.event(outer[0])].name)
                     : std::string("its own operators, aten::_foreach_* and aten::_fused_*")) +
           ") took " + percent_text(share) + " of " + c.basis_noun() +
           (gpu ? " on the GPU, its work and the GPU's idle while the host ran it (" : " (") + format_duration(opt_ns) +
           (idle_ns > 0 ? ", of it " + format_duration(idle_ns) + " idle" : std::string()) +
           ", " + std::to_string(op_calls / steps) + " operator calls" +
           (c.step_ns.empty() ? "" : " a step") +
           (gpu ? ", " + std::to_string(items / steps) + " GPU work items" + (c.step_ns.empty() ? "" : " a step")
                : std::string()) +
           (what.empty() ? std::string() : "; by self CPU time " + what) + ")" +
           (share < threshold::kOptimizerShare
                ? "; " + percent_text(later_share) + " of the steps after the first (" + format_duration(later_ns) +
                      "), whose slow first step dilutes the share over all"
                : std::string());
  s.figures = {{"optimizer_share", share},
               {"optimizer_ns", double(opt_ns)},
               {"gpu_idle_ns", double(idle_ns)},
               {"operator_calls_per_step", double(op_calls) / double(steps)},
               {"from_ranges", by_range ? 1.0 : 0.0}};
  if (later_share > 0) s.figures.push_back({"after_first_step_share", later_share});
  std::vector<size_t> worst = outer;
  std::stable_sort(worst.begin(), worst.end(),
                   [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  for (size_t i = 0; i < worst.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(cs.event(worst[i])));
  s.saved_ns = opt_ns;
  s.how = std::string(gpu ? "the optimizer's GPU time and the GPU's idle time while the host ran it (" : "the optimizer's time (") +
          format_duration(opt_ns) +
          "), an upper bound: a fused optimizer or fewer optimizer steps save part of it, not all";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
