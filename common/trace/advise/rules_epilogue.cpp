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
// heuristic reads no tensor identities, which the trace does not have. Left out:
// - one followed by another elementwise operator, or one of fusion's chains (on a GPU, its
//   kernels one: the next pass may be in another range, or a copy's kernel): the fusion rule's,
//   whose fix is one fused kernel, not the product's epilogue (the two had claimed one add);
// - one followed by a softmax and a product after it (as close as naive_attention looks):
//   attention's mask or scale, that rule's pattern; a classifier's softmax after its bias stays;
// - one inside another operator than a product (a library's own: SDPA's math backend adds its
//   mask after its matmul, which an H200 trace of lesson 04 read as a bias to fold into addmm).
// Its cost: the GPU time of the work launched inside it on a GPU trace, else its CPU time with
// its children. Read from the CPU slices the rules share (nested once per trace).
void gemm_epilogue(const RuleContext& c, RuleResult& out) {
  const Trace& t = c.trace;
  const CpuSlices& cs = c.cpu();
  PerName<bool> gemm, epilogue, elementwise, view, softmax;
  using Slots = std::pair<long, long>;  // (the product, the epilogue after it)
  std::vector<Slots> found;
  // Slots come parents first (preorder), so the slices around the current one are a stack: each
  // frame holds its last operator child and the epilogue waiting to see what follows it. Memory
  // by nesting depth, not by slice: on a trace of millions of slices that is most of the cost.
  struct Frame {
    long slot = -1, last = -1;
    Slots wait{-1, -1};
    bool in_library = false;  // inside an operator other than a product
    bool after_softmax = false;  // the pending pass was followed by a softmax
    int since_softmax = 0;       // operators after it (a product within naive_attention's reach)
  };
  std::vector<Frame> stack;
  auto pop = [&] {
    if (stack.back().wait.second >= 0) found.push_back(stack.back().wait);
    stack.pop_back();
  };
  for (const CpuSlices::Thread& th : cs.threads) {
    stack.assign(1, Frame{});  // the thread's top level
    for (size_t s = th.begin; s < th.end; ++s) {
      const long p = cs.parent(s);
      while (stack.back().slot != p) pop();
      const Event& e = t.events[cs.event(s)];
      if (is_operator(e) && !view(e.name, is_view_op)) {
        Frame& f = stack.back();
        // What follows a pending pass decides it: an elementwise operator (fusion's chain), a
        // softmax then a product (attention's mask or scale; a dropout may come between) take it;
        // anything else leaves it an epilogue.
        bool pending = false;
        if (f.wait.second >= 0) {
          if (f.after_softmax) {
            // naive_attention's reach: a product within kAttentionAfter operators of the softmax.
            if (!gemm(e.name, is_gemm_op)) {
              if (++f.since_softmax < threshold::kAttentionAfter)
                pending = true;
              else
                found.push_back(f.wait);
            }
          } else if (softmax(e.name, is_softmax_op)) {
            pending = f.after_softmax = true;
            f.since_softmax = 0;
          } else if (!elementwise(e.name, is_elementwise_op)) {
            found.push_back(f.wait);
          }
        }
        if (!pending) {
          f.wait = {-1, -1};
          f.after_softmax = false;
          if (!f.in_library && f.last >= 0 && gemm(t.events[cs.event(size_t(f.last))].name, is_gemm_op) &&
              epilogue(e.name, is_epilogue_op) && cs.in_steps(s))
            f.wait = {f.last, long(s)};
        }
        f.last = long(s);
      }
      const bool library = stack.back().in_library || (is_operator(e) && !gemm(e.name, is_gemm_op));
      stack.push_back(Frame{long(s), -1, {-1, -1}, library});
    }
    while (!stack.empty()) pop();
  }
  if (found.empty()) return;
  // A pass that is one of fusion's chains (on a GPU, that launched one of its kernels) is its.
  const std::vector<FusionChain>& chains = c.fusion_chains();
  if (!chains.empty()) {
    std::vector<char> chained(t.events.size(), 0);
    for (const FusionChain& ch : chains)
      for (size_t i : ch.items) chained[i] = 1;
    auto in_chain = [&](const Slots& p) {
      const size_t s = size_t(p.second);
      if (!c.gpu()) return chained[cs.event(s)] != 0;
      for (size_t u = s; u < cs.size() && (u == s || cs.parent(u) >= long(s)); ++u)
        if (is_launch_call(t.events[cs.event(u)].category))
          for (size_t i : c.index.work_of(cs.event(u)))
            if (chained[i]) return true;
      return false;
    };
    found.erase(std::remove_if(found.begin(), found.end(), in_chain), found.end());
    if (found.empty()) return;
  }
  std::sort(found.begin(), found.end(), [](const Slots& x, const Slots& y) { return x.second < y.second; });

  // What each epilogue costs: its CPU time, or on a GPU trace the GPU time of the work launched
  // from inside it (its slots up to the first that is not under it).
  std::vector<int64_t> cost(found.size(), 0);
  for (size_t k = 0; k < found.size(); ++k) {
    const size_t s = size_t(found[k].second);
    if (!c.gpu()) {
      cost[k] = t.events[cs.event(s)].dur_ns;
      continue;
    }
    for (size_t u = s; u < cs.size() && (u == s || cs.parent(u) >= long(s)); ++u)
      if (is_launch_call(t.events[cs.event(u)].category))
        for (size_t i : c.index.work_of(cs.event(u))) cost[k] += t.events[i].dur_ns;
  }

  struct Pair {
    std::string_view product, pass;
    int64_t count = 0, cost_ns = 0;
  };
  // By the two names' addresses (interned: one per text); made into "aten::matmul -> aten::add"
  // once per pair below, not once per call.
  std::map<std::pair<const char*, const char*>, Pair> by_names;
  std::vector<std::pair<int64_t, size_t>> worst;  // cost, the elementwise op's event
  worst.reserve(found.size());
  int64_t total = 0;
  for (size_t k = 0; k < found.size(); ++k) {
    const size_t s = size_t(found[k].second);
    const std::string_view a = t.events[cs.event(size_t(found[k].first))].name, b = t.events[cs.event(s)].name;
    Pair& p = by_names.try_emplace({a.data(), b.data()}, Pair{a, b}).first->second;
    ++p.count;
    p.cost_ns += cost[k];
    worst.push_back({cost[k], cs.event(s)});
    total += cost[k];
  }
  std::map<std::string, Pair> pairs;  // "aten::matmul -> aten::add"
  for (const auto& [key, q] : by_names) {
    Pair& p = pairs[std::string(q.product) + " -> " + std::string(q.pass)];
    p.count += q.count;
    p.cost_ns += q.cost_ns;
  }
  if (pairs.empty() || total < int64_t(c.options.min_saved_share * double(c.basis_ns))) return;
  Symptom s;
  std::vector<std::pair<int64_t, std::string>> by_cost;
  for (auto& [name, p] : pairs) by_cost.push_back({p.cost_ns, name});
  std::sort(by_cost.rbegin(), by_cost.rend());
  s.text = "an elementwise pass right after a matrix product, ";
  for (size_t k = 0; k < by_cost.size(); ++k) {
    const Pair& p = pairs[by_cost[k].second];
    s.text += (k ? ", " : "") + by_cost[k].second + " (" + counted(p.count, "call") + ", " +
              format_duration(p.cost_ns) + ")";
  }
  s.text += ": " + percent_text(double(total) / double(c.basis_ns)) + " of " +
            (c.step_ns.empty() ? "the window's " : "the steps' ") + (c.gpu() ? "time as GPU time" : "CPU time");
  s.figures = {{"epilogue_ns", double(total)}, {"epilogue_share", double(total) / double(c.basis_ns)}};
  // The worst calls (the order is total: most cost, then the earliest event).
  const size_t shown = std::min(worst.size(), c.options.examples);
  std::partial_sort(worst.begin(), worst.begin() + long(shown), worst.end(),
                    [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  for (size_t k = 0; k < shown; ++k)
    s.examples.push_back(c.example(worst[k].second, "a separate pass over the product's output"));
  s.saved_ns = total;
  s.how = "the separate passes' " + std::string(c.gpu() ? "GPU" : "CPU") +
          " time, all of it (in the product's epilogue they would cost a little, not nothing)";
  // On the CPU the cause's fix without its GPU remedy (cuBLASLt's epilogues).
  if (!c.gpu())
    s.fix = "Let the product apply it on its way out: addmm for a bias (torch::linear on a 2-D input), or the "
            "compiled variant, which fuses it.";
  out.symptom(std::move(s));
}

}  // namespace

std::vector<Rule> operator_rules() {
  return {{"gemm_epilogue", "gemm_epilogue", "an elementwise pass a matrix product could do", false,
           gemm_epilogue, /*compares_clocks=*/false, /*host_time_is_cost=*/true, /*needs_cpu_side=*/true}};
}

}  // namespace pil::trace::advise_rules
