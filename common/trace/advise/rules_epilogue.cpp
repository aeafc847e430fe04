// The rule of `pil-trace advise` about an elementwise pass right after a matrix product that the
// product itself could do (a bias, an activation): lesson 01's matmul + add against addmm, lesson
// 03's gelu after the gate GEMM against cuBLASLt's epilogue and the compiled variant. Read from the
// operators, so it runs on CPU traces and GPU traces alike.
#include <algorithm>
#include <map>
#include <string_view>

#include "trace/advise/names.h"
#include "trace/advise/cpu_slices.h"
#include "trace/advise/rules.h"
#include "trace/advise/rules_cpu.h"  // launched_work

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
// cost: the GPU time of the work launched inside it on a GPU trace, else its CPU time with its
// children. Read from the CPU slices the rules share (nested once per trace).
void gemm_epilogue(const RuleContext& c, RuleResult& out) {
  const Trace& t = c.trace;
  const CpuSlices& cs = c.cpu();
  PerName<bool> gemm, epilogue, elementwise, view;
  // Per parent slot (and per thread for its top-level slices): its latest operator child, and
  // an epilogue that waits to see whether another elementwise operator follows it.
  using Slots = std::pair<long, long>;  // (the product, the epilogue after it)
  std::vector<long> last(cs.size(), -1);
  std::vector<Slots> pending(cs.size(), {-1, -1});
  std::vector<Slots> found;
  for (const CpuSlices::Thread& th : cs.threads) {
    long top_last = -1;
    Slots top_pending{-1, -1};
    for (size_t s = th.begin; s < th.end; ++s) {
      const Event& e = t.events[cs.event(s)];
      if (!is_operator(e) || view(e.name, is_view_op)) continue;
      const long p = cs.parent(s);
      long& prev = p >= 0 ? last[size_t(p)] : top_last;
      Slots& wait = p >= 0 ? pending[size_t(p)] : top_pending;
      if (wait.second >= 0 && !elementwise(e.name, is_elementwise_op)) found.push_back(wait);
      wait = {-1, -1};
      if (prev >= 0 && gemm(t.events[cs.event(size_t(prev))].name, is_gemm_op) &&
          epilogue(e.name, is_epilogue_op) && cs.in_steps(s))
        wait = {prev, long(s)};
      prev = long(s);
    }
    if (top_pending.second >= 0) found.push_back(top_pending);
  }
  for (const Slots& w : pending)
    if (w.second >= 0) found.push_back(w);
  if (found.empty()) return;

  std::vector<int64_t> cost(cs.size(), 0);
  if (c.gpu()) {
    std::vector<long> root(cs.size(), -1);  // the epilogue operator each slot is inside
    for (const auto& [product, s] : found) root[size_t(s)] = s;
    for (size_t s = 0; s < cs.size(); ++s)  // parents come before their children
      if (root[s] < 0 && cs.parent(s) >= 0) root[s] = root[size_t(cs.parent(s))];
    cost = launched_work(c, root).by_root;
  } else {
    for (const auto& [product, s] : found) cost[size_t(s)] = t.events[cs.event(size_t(s))].dur_ns;
  }

  struct Pair {
    int64_t count = 0, cost_ns = 0;
    std::vector<std::pair<int64_t, size_t>> worst;  // cost, the elementwise op's event
  };
  std::map<std::string, Pair> pairs;  // "aten::matmul -> aten::add"
  int64_t total = 0;
  for (const auto& [prev, epi] : found) {
    const size_t s = size_t(epi);
    Pair& pr = pairs[std::string(t.events[cs.event(size_t(prev))].name) + " -> " +
                     std::string(t.events[cs.event(s)].name)];
    ++pr.count;
    pr.cost_ns += cost[s];
    pr.worst.push_back({cost[s], cs.event(s)});
    total += cost[s];
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
