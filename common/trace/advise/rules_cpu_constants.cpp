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
#include <optional>
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

/// A number a trace records for an enum argument as torch names it ("11" as a dtype:
/// "torch.bool"), from the enum's order in c10 (`names`); "" for a number past it or not one.
template <size_t N>
std::string enum_name(std::string_view number, const char* const (&names)[N]) {
  size_t n = 0;
  if (number.empty() || number.size() > 2) return "";
  for (char ch : number) {
    if (ch < '0' || ch > '9') return "";
    n = n * 10 + size_t(ch - '0');
  }
  return n < N ? std::string("torch.") + names[n] : "";
}

// c10's ScalarType and Layout, in their order (torch/headeronly/core/ScalarType.h, Layout.h).
constexpr const char* kDtypes[] = {
    "uint8",       "int8",          "int16",           "int32",           "int64",   "float16",
    "float32",     "float64",       "complex32",       "complex64",       "complex128", "bool",
    "qint8",       "quint8",        "qint32",          "bfloat16",        "quint4x2", "quint2x4",
    "bits1x8",     "bits2x4",       "bits4x2",         "bits8",           "bits16",  "float8_e5m2",
    "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz", "uint16",      "uint32",  "uint64",
    "uint1",       "uint2",         "uint3",           "uint4",           "uint5",   "uint6",
    "uint7",       "int1",          "int2",            "int3",            "int4",    "int5",
    "int6",        "int7",          "float8_e8m0fnu",  "float4_e2m1fn_x2"};
constexpr const char* kLayouts[] = {"strided",    "sparse_coo", "sparse_csr", "_mkldnn",
                                    "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged"};

/// The names of a constant factory's arguments, in the order the trace records them (ATen's
/// schemas: aten::ones(size, *, dtype, layout, device, pin_memory), full(size, fill_value, *,
/// ...), arange(end | start, end[, step], *, ...), triu(self, diagonal)); empty when the count
/// fits no schema of that name (an overload this does not know: values unnamed).
std::vector<std::string_view> argument_names(std::string_view op, size_t count) {
  using V = std::vector<std::string_view>;
  auto with_options = [](V first) {
    for (std::string_view o : {"dtype", "layout", "device", "pin_memory"}) first.push_back(o);
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

/// The arguments of the call `id` (an index into Trace::input_shapes) as a call writes them,
/// read with their concrete values: the first argument's value, then each other one as
/// name=value, a dtype and a layout by torch's names, None and torch's defaults (strided,
/// pin_memory False) left out ("[2, 4, 1024, 1024], dtype=torch.bool" for aten::ones(sizes,
/// dtype=torch.bool); "[1024, 1024], diagonal=1" for aten::triu(mask, 1)); a value as "Concrete
/// Inputs" writes it, a tensor by its sizes; the values alone for an overload it cannot name.
/// Nothing when the values were not read or the first argument has none (its sizes unknown):
/// the evidence shows the Input Dims then.
std::optional<std::string> call_arguments(const Trace& t, std::string_view op, uint32_t id) {
  if (id >= t.op_inputs.size() || !t.op_inputs[id].has_concrete) return std::nullopt;
  const std::vector<InputArg>& args = t.op_inputs[id].args;
  const std::vector<std::string_view> names = argument_names(op, args.size());
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const InputArg& a = args[i];
    const std::string_view name = names.empty() || i == 0 ? std::string_view() : names[i];
    std::string value;
    if (!a.concrete.empty()) {
      value = std::string(a.concrete);
      if ((name == "layout" && a.concrete == "0") || (name == "pin_memory" && a.concrete == "False")) continue;
      const std::string named = name == "dtype"    ? enum_name(a.concrete, kDtypes)
                                : name == "layout" ? enum_name(a.concrete, kLayouts)
                                                   : "";
      if (!named.empty()) value = named;
    } else if (a.is_list) {
      value = "[";
      for (size_t k = 0; k < a.list.size(); ++k) value += (k ? ", " : "") + sizes_text(a.list[k]);
      value += "]";
    } else if (!a.dims.empty() || (!a.type.empty() && a.type != "Scalar" && a.type != "ScalarList")) {
      value = sizes_text(a.dims);  // a tensor
    } else if (i == 0) {
      return std::nullopt;  // the first argument (a factory's sizes) not recorded
    } else {
      continue;  // None, or a value not recorded
    }
    out += (out.empty() ? "" : ", ") + (name.empty() ? value : std::string(name) + "=" + value);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

/// The operator with its inputs: "aten::ones([2, 4], dtype=torch.bool)", or without their
/// values "aten::ones [[], [], [], [], []]" (the Input Dims, as the operator table shows them).
std::string call_text(const Trace& t, std::string_view op, uint32_t id) {
  const auto args = call_arguments(t, op, id);
  return std::string(op) + (args ? "(" + *args + ")" : " " + std::string(t.input_shapes[id]));
}

/// The inputs alone, as an example's detail shows them: "([2, 4], dtype=torch.bool)", or the
/// Input Dims.
std::string inputs_text(const Trace& t, std::string_view op, uint32_t id) {
  const auto args = call_arguments(t, op, id);
  return args ? "(" + *args + ")" : std::string(t.input_shapes[id]);
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
    std::vector<char> built(cs.size(), 0);
    for (const auto& [key, k] : by_call)
      for (size_t s : k.slots) built[s] = 1;
    const LaunchedWork w = launched_work(c, outermost_roots(cs, [&](size_t s) { return built[s] != 0; }));
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
  s.text = counted(int64_t(rebuilt.size()), "constant tensor") +
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
