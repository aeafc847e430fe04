// The same constant tensor built in every step: a factory operator (aten::ones, full, zeros,
// arange) or a mask made from one (aten::triu, tril) called by the program itself (no operator
// around it: ATen's own calls inside an operator are not the user's to move) with the same
// recorded inputs in every profiled step. Needs the operators' input shapes (record_shapes).
// A factory's sizes are not in its "Input Dims" ([[], [], [], [], []] for aten::ones) but in its
// "Concrete Inputs" ("[2, 4, 1024, 1024]"): read with them (ParseOptions::read_concrete, as
// `pil-trace advise` reads), calls of other sizes have other inputs, and the evidence shows the
// values; a trace read without them (or made in process) compares the Input Dims only. Their
// cost: their CPU time, or on a GPU trace the GPU time of what they launched (their CPU time
// costs only while the GPU waits, which the GPU rules judge).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trace/advise/names.h"  // any_name
#include "trace/advise/rules_cpu.h"

namespace pil::trace::advise_rules {

namespace {

std::string sizes_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t d = 0; d < dims.size(); ++d) out += (d ? ", " : "") + std::to_string(dims[d]);
  return out + "]";
}

/// The inputs `id` (an index into Trace::input_shapes) as the evidence shows them: read with
/// their concrete values, each argument's value, None left out ("[2, 4, 1024, 1024], 11" for
/// aten::ones(sizes, dtype=torch.bool); "[1024, 1024], 1" for aten::triu(mask, 1)): a value as
/// "Concrete Inputs" writes it, a tensor by its sizes. Else the Input Dims' text.
std::string inputs_text(const Trace& t, uint32_t id) {
  if (id < t.op_inputs.size() && t.op_inputs[id].has_concrete) {
    std::string out;
    for (const InputArg& a : t.op_inputs[id].args) {
      std::string value;
      if (!a.concrete.empty()) {
        value = std::string(a.concrete);
      } else if (a.is_list) {
        value = "[";
        for (size_t k = 0; k < a.list.size(); ++k) value += (k ? ", " : "") + sizes_text(a.list[k]);
        value += "]";
      } else if (!a.dims.empty() || (!a.type.empty() && a.type != "Scalar" && a.type != "ScalarList")) {
        value = sizes_text(a.dims);  // a tensor
      } else {
        continue;  // None, or a value not recorded
      }
      out += (out.empty() ? "" : ", ") + value;
    }
    if (!out.empty()) return out;
  }
  return std::string(t.input_shapes[id]);
}

}  // namespace

void rebuilt_constant(const RuleContext& c, RuleResult& out) {
  const Trace& t = c.trace;
  // A look at the distinct names first. Advise reads the inputs of these operators only
  // (needs_input_shapes): without one of them there is nothing to judge, shapes or not.
  const bool factories = any_name(t, is_constant_factory);
  if (factories && t.input_shapes.empty()) {
    out.unable("the trace has no input shapes: record with record_shapes");
    return;
  }
  const size_t steps = c.index.steps.size();
  if (steps < size_t(threshold::kRebuiltMinSteps)) {
    out.unable("fewer than " + std::to_string(threshold::kRebuiltMinSteps) +
               " profiled steps (ProfilerStep#N)");
    return;
  }
  if (!factories) return;
  const CpuSlices& cs = c.cpu();
  struct Calls {
    std::set<long> steps;
    std::vector<size_t> slots;
    int64_t ns = 0;
  };
  std::map<std::pair<std::string_view, uint32_t>, Calls> by_call;  // (name, inputs) -> its calls
  for (size_t s = 0; s < cs.size(); ++s) {
    const Event& e = t.events[cs.event(s)];
    if (!is_operator(e) || !is_constant_factory(e.name) || cs.step(s) < 0) continue;
    if (e.input_shapes >= t.input_shapes.size() || cs.op_parent(s) >= 0) continue;
    Calls& k = by_call[{e.name, e.input_shapes}];
    k.steps.insert(cs.step(s));
    k.slots.push_back(s);
    k.ns += e.dur_ns;
  }
  if (c.gpu()) {  // on a GPU trace, the GPU time of the work they launched (the fills)
    std::vector<long> root(cs.size(), -1);
    for (const auto& [key, k] : by_call)
      for (size_t s : k.slots) root[s] = long(s);
    for (size_t s = 0; s < cs.size(); ++s)
      if (const long p = cs.parent(s); p >= 0 && root[size_t(p)] >= 0) root[s] = root[size_t(p)];
    const LaunchedWork w = launched_work(c, root);
    for (auto& [key, k] : by_call) {
      k.ns = 0;
      for (size_t s : k.slots) k.ns += w.by_root[s];
    }
  }
  std::vector<const std::pair<const std::pair<std::string_view, uint32_t>, Calls>*> rebuilt;
  int64_t rebuilt_ns = 0, calls = 0;
  for (const auto& entry : by_call)
    if (entry.second.steps.size() == steps) {
      rebuilt.push_back(&entry);
      rebuilt_ns += entry.second.ns;
      calls += int64_t(entry.second.slots.size());
    }
  const double share = c.basis_ns > 0 ? double(rebuilt_ns) / double(c.basis_ns) : 0;
  if (rebuilt.empty() || share < c.options.min_saved_share) return;
  std::stable_sort(rebuilt.begin(), rebuilt.end(),
                   [](auto* a, auto* b) { return a->second.ns > b->second.ns; });

  Symptom s;
  std::string what;
  for (size_t i = 0; i < rebuilt.size() && i < 3; ++i)
    what += (i ? "; " : "") + std::string(rebuilt[i]->first.first) + " " +
            inputs_text(t, rebuilt[i]->first.second);
  s.text = std::to_string(rebuilt.size()) + " constant tensor" + (rebuilt.size() == 1 ? "" : "s") +
           " built again in every one of the " + std::to_string(steps) + " steps (" +
           std::to_string(calls) + " calls, " + format_duration(rebuilt_ns) + ", " +
           percent_text(share) + " of " + c.basis_noun() + "): " + what;
  s.figures = {{"rebuilt", double(rebuilt.size())},
               {"calls", double(calls)},
               {"rebuilt_ns", double(rebuilt_ns)},
               {"rebuilt_share", share}};
  for (size_t i = 0; i < rebuilt.size() && i < c.options.examples; ++i) {
    const Calls& k = rebuilt[i]->second;
    s.examples.push_back(c.example(
        cs.event(k.slots.front()),
        "inputs " + inputs_text(t, rebuilt[i]->first.second) + ", " +
            std::to_string(k.slots.size()) + " calls, " + format_duration(k.ns) + " in all"));
  }
  s.saved_ns = rebuilt_ns;
  s.how = std::string(c.gpu() ? "the GPU time building them in the steps ("
                              : "the time building them in the steps (") +
          format_duration(rebuilt_ns) +
          "): built once before the loop, none of it is left in a step";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
