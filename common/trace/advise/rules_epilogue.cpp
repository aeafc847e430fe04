// The rule of `pil-trace advise` about an elementwise pass right after a matrix product that the
// product itself could do (a bias, an activation): lesson 01's matmul + add against addmm, lesson
// 03's gelu after the gate GEMM against cuBLASLt's epilogue and the compiled variant. Read from the
// operators, so it runs on CPU traces and GPU traces alike.
#include <algorithm>
#include <map>
#include <string_view>

#include "trace/advise/names.h"
#include "trace/advise/rules.h"
#include "trace/nesting.h"

namespace pil::trace::advise_rules {
namespace {

// What a GEMM's epilogue can apply to its output: a bias added, an activation. A binary product
// of two tensors (gelu(a) * b) is not one.
bool is_epilogue_op(std::string_view n) {
  static constexpr std::string_view kOps[] = {"aten::add",  "aten::add_",  "aten::relu",
                                              "aten::relu_", "aten::gelu", "aten::gelu_",
                                              "aten::silu", "aten::silu_", "aten::sigmoid",
                                              "aten::tanh"};
  return std::find(std::begin(kOps), std::end(kOps), n) != std::end(kOps);
}

// An elementwise operator that follows a matrix product directly (the next operator under the
// same parent on the same thread, views read through) is taken to work on its output: the
// heuristic reads no tensor identities, which the trace does not have. One followed by another
// elementwise operator is left to the fusion rule (a chain, whose fix is one fused kernel). Its
// cost: its GPU work's time on a GPU trace (the work items carrying its External id), else its
// CPU time with its children.
void gemm_epilogue(const RuleContext& c, RuleResult& out) {
  const Trace& t = c.trace;
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> threads;
  for (size_t i = 0; i < t.events.size(); ++i)
    if (is_cpu_slice(t.events[i].category)) threads[{t.events[i].pid, t.events[i].tid}].push_back(i);
  std::map<uint64_t, int64_t> device_time;  // by External id, on a GPU trace
  if (c.gpu())
    for (size_t w : c.index.device_work())
      if (t.events[w].external_id) device_time[t.events[w].external_id] += t.events[w].dur_ns;

  struct Pair {
    int64_t count = 0, cost_ns = 0;
    std::vector<std::pair<int64_t, size_t>> worst;  // cost, the elementwise op
  };
  std::map<std::string, Pair> pairs;  // "aten::matmul -> aten::add"
  int64_t total = 0;
  PerName<bool> gemm, epilogue, elementwise, view;
  for (auto& [lane, idx] : threads) {
    order_for_nesting(t.events, idx);
    std::map<long, std::vector<size_t>> children;  // parent -> its operators, views left out
    nest(t.events, idx, [&](size_t i, long parent, int) {
      const Event& e = t.events[i];
      if (e.category == Category::CpuOp && !view(e.name, is_view_op)) children[parent].push_back(i);
      return true;
    });
    for (const auto& [parent, ops] : children)
      for (size_t k = 1; k < ops.size(); ++k) {
        const Event& prev = t.events[ops[k - 1]];
        const Event& e = t.events[ops[k]];
        if (!gemm(prev.name, is_gemm_op) || !epilogue(e.name, is_epilogue_op)) continue;
        if (k + 1 < ops.size() && elementwise(t.events[ops[k + 1]].name, is_elementwise_op)) continue;
        const int64_t cost = c.gpu() ? (e.external_id ? device_time[e.external_id] : 0) : e.dur_ns;
        Pair& p = pairs[std::string(prev.name) + " -> " + std::string(e.name)];
        ++p.count;
        p.cost_ns += cost;
        p.worst.push_back({cost, ops[k]});
        total += cost;
      }
  }
  if (pairs.empty() || total < int64_t(threshold::kMinSavedShare * double(c.basis_ns))) return;
  Symptom s;
  std::vector<std::pair<int64_t, std::string>> by_cost;
  for (auto& [name, p] : pairs) by_cost.push_back({p.cost_ns, name});
  std::sort(by_cost.rbegin(), by_cost.rend());
  s.text = "an elementwise pass right after a matrix product, ";
  for (size_t k = 0; k < by_cost.size(); ++k) {
    const Pair& p = pairs[by_cost[k].second];
    s.text += (k ? ", " : "") + by_cost[k].second + " (" + std::to_string(p.count) + " calls, " +
              format_duration(p.cost_ns) + ")";
  }
  s.text += ": " + percent_text(double(total) / double(c.basis_ns)) + " of " +
            (c.gpu() ? "the steps' time as GPU time" : "the steps' CPU time");
  s.figures = {{"epilogue_ns", double(total)}, {"epilogue_share", double(total) / double(c.basis_ns)}};
  std::vector<std::pair<int64_t, size_t>> worst;
  for (auto& [name, p] : pairs) worst.insert(worst.end(), p.worst.begin(), p.worst.end());
  std::sort(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; k < worst.size() && k < c.options.examples; ++k)
    s.examples.push_back(c.example(worst[k].second, "a separate pass over the product's output"));
  s.saved_ns = total;
  s.how = "the separate passes' " + std::string(c.gpu() ? "GPU" : "CPU") +
          " time, all of it (in the product's epilogue they would cost a little, not nothing)";
  out.symptom(std::move(s));
}

}  // namespace

std::vector<Rule> operator_rules() {
  return {{"gemm_epilogue", "gemm_epilogue", "an elementwise pass a matrix product could do", false,
           gemm_epilogue}};
}

}  // namespace pil::trace::advise_rules
