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
#include <iterator>
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

/// A ScalarType as torch names it ("torch.bool"), from the number a trace records for a dtype
/// argument (c10's ScalarType order: 11 is Bool); "" for one it does not know.
std::string dtype_name(std::string_view number) {
  static constexpr const char* kNames[] = {
      "uint8",   "int8",    "int16",    "int32",      "int64",     "float16",     "float32",
      "float64", "complex32", "complex64", "complex128", "bool",    "qint8",       "quint8",
      "qint32",  "bfloat16", "quint4x2", "quint2x4",   "bits1x8",   "bits2x4",     "bits4x2",
      "bits8",   "bits16",  "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz",
      "uint16",  "uint32",  "uint64"};
  size_t n = 0;
  if (number.empty() || number.size() > 2) return "";
  for (char ch : number) {
    if (ch < '0' || ch > '9') return "";
    n = n * 10 + size_t(ch - '0');
  }
  return n < std::size(kNames) ? std::string("torch.") + kNames[n] : "";
}

/// The names of a constant factory's arguments after its first, in the order the trace records
/// them (ATen's schemas: aten::ones(size, *, dtype, layout, device, pin_memory), full(size,
/// fill_value, *, ...), arange(end | start, end[, step], *, ...), triu(self, diagonal)); empty
/// when the count fits no schema of that name (an overload this does not know: values unnamed).
std::vector<std::string_view> argument_names(std::string_view op, size_t count) {
  using V = std::vector<std::string_view>;
  const V options{"dtype", "layout", "device", "pin_memory"};
  auto with_options = [&](V first) {
    first.insert(first.end(), options.begin(), options.end());
    return first;
  };
  V names;
  if (op == "aten::ones" || op == "aten::zeros") names = with_options({"size"});
  if (op == "aten::full") names = with_options({"size", "fill_value"});
  if (op == "aten::triu" || op == "aten::tril") names = {"self", "diagonal"};
  if (op == "aten::arange") {
    if (count == 5) names = with_options({"end"});
    if (count == 6) names = with_options({"start", "end"});
    if (count == 7) names = with_options({"start", "end", "step"});
  }
  return names.size() == count ? names : V{};
}

/// The call `id` (an index into Trace::input_shapes) as the evidence shows it: read with their
/// concrete values, the first argument's value, then each other one as name=value, a dtype by
/// torch's name and None left out ("[2, 4, 1024, 1024], dtype=torch.bool" for
/// aten::ones(sizes, dtype=torch.bool); "[1024, 1024], diagonal=1" for aten::triu(mask, 1)), the
/// layout and pin_memory left out where they are torch's defaults (strided, False); a value as
/// "Concrete Inputs" writes it, a tensor by its sizes. An overload whose arguments it cannot
/// name shows the values alone. In parentheses as a call writes them; else (not read) the Input
/// Dims' text, as the operator table shows it ("[[], [], [], [], []]").
std::string inputs_text(const Trace& t, std::string_view op, uint32_t id) {
  if (id < t.op_inputs.size() && t.op_inputs[id].has_concrete) {
    const std::vector<InputArg>& args = t.op_inputs[id].args;
    const std::vector<std::string_view> names = argument_names(op, args.size());
    std::string out;
    for (size_t i = 0; i < args.size(); ++i) {
      const InputArg& a = args[i];
      const std::string_view name = names.empty() || i == 0 ? std::string_view() : names[i];
      std::string value;
      if (!a.concrete.empty()) {
        value = std::string(a.concrete);
        if (name == "dtype" && !dtype_name(a.concrete).empty()) value = dtype_name(a.concrete);
        if ((name == "layout" && a.concrete == "0") || (name == "pin_memory" && a.concrete == "False")) continue;
      } else if (a.is_list) {
        value = "[";
        for (size_t k = 0; k < a.list.size(); ++k) value += (k ? ", " : "") + sizes_text(a.list[k]);
        value += "]";
      } else if (!a.dims.empty() || (!a.type.empty() && a.type != "Scalar" && a.type != "ScalarList")) {
        value = sizes_text(a.dims);  // a tensor
      } else {
        continue;  // None, or a value not recorded
      }
      out += (out.empty() ? "" : ", ") + (name.empty() ? value : std::string(name) + "=" + value);
    }
    return "(" + out + ")";
  }
  return std::string(t.input_shapes[id]);
}

/// The operator with its inputs: "aten::ones([2, 4], dtype=torch.bool)", or without their
/// values "aten::ones [[], [], [], [], []]".
std::string call_text(const Trace& t, std::string_view op, uint32_t id) {
  const std::string inputs = inputs_text(t, op, id);
  return std::string(op) + (inputs.rfind('(', 0) == 0 ? "" : " ") + inputs;
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
    what += (i ? "; " : "") + call_text(t, rebuilt[i]->first.first, rebuilt[i]->first.second);
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
        "inputs " + inputs_text(t, rebuilt[i]->first.first, rebuilt[i]->first.second) + ", " +
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
