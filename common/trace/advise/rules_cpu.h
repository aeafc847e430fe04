#pragma once
/// \file
/// The rules of `pil-trace advise` that run on every trace, one function each, in the file that
/// names its job; cpu_rules() (rules_cpu.cpp) lists them. Each reads the trace through the
/// RuleContext and reports a symptom, nothing, or the field the trace lacks (rules.h).
#include <functional>
#include <vector>

#include "trace/advise/rules.h"

namespace pil::trace::advise_rules {

/// Operators too small for their dispatch cost (rules_cpu_overhead.cpp).
void op_overhead(const RuleContext& c, RuleResult& out);
/// A loop calling small operators one row or element at a time (rules_cpu_overhead.cpp).
void op_loop(const RuleContext& c, RuleResult& out);
/// Copies (copy_, contiguous, to, _to_copy, clone) and who asked for them (rules_cpu_copies.cpp).
void copies(const RuleContext& c, RuleResult& out);
/// The optimizer's share of the step (rules_cpu_optimizer.cpp).
void optimizer(const RuleContext& c, RuleResult& out);
/// Time in a step that no operator or range covers (rules_cpu_untraced.cpp).
void untraced(const RuleContext& c, RuleResult& out);
/// The DataLoader's fetches on the training thread (rules_cpu_untraced.cpp).
void data_loading(const RuleContext& c, RuleResult& out);
/// The same constant tensor built in every step (rules_cpu_constants.cpp).
void rebuilt_constant(const RuleContext& c, RuleResult& out);
/// Memory peaks near the device's capacity (rules_memory.cpp).
void memory_peak(const RuleContext& c, RuleResult& out);
/// Communication not hidden behind computation on this rank (rules_comm.cpp).
void exposed_comm(const RuleContext& c, RuleResult& out);

/// Why a rule about the host's time does not run on a trace with GPU work: there the host's
/// time costs the step only while the GPU waits for it, which the GPU rules measure from the
/// GPU's side (the launch-bound loop, host stalls, synchronizes).
inline constexpr const char* kGpuJudgesHostTime =
    "the trace has GPU work: the host's time there is judged by the GPU's wait for it "
    "(launch-bound loop, host stalls)";

/// On a trace with GPU work, what a family of host slices (the copies, the optimizer) costs the
/// step is the GPU time of the work launched from inside them: their CPU time costs only while
/// the GPU waits, which the GPU rules judge. `root` marks, by slot, the family's outermost slice
/// each slot is inside (-1: none); the work of the runtime calls inside one goes to it.
struct LaunchedWork {
  std::vector<int64_t> by_root;  ///< by slot: the GPU time of the work launched inside it
  int64_t union_ns = 0;          ///< all of it, time two items overlap counted once
  int64_t items = 0;             ///< GPU work items (kernels, copies, sets)
};
/// `keep`: which GPU work items count (all of them when empty).
LaunchedWork launched_work(const RuleContext& c, const std::vector<long>& root,
                           const std::function<bool(const Event&)>& keep = {});

/// By slot, the outermost slot around it (itself included) that `is_root` marks, or -1 where none
/// does: the `root` launched_work takes. `is_root` is asked only of slots outside every marked one.
std::vector<long> outermost_roots(const CpuSlices& cs, const std::function<bool(size_t)>& is_root);

}  // namespace pil::trace::advise_rules
