// Copies: aten::copy_, contiguous, to, _to_copy and clone taking a large share of the steps, and
// who asked for them. A copy nests (to -> _to_copy -> copy_; contiguous -> clone -> copy_): each
// outermost copy counts once, with everything under it. On the CPU, their time; on a GPU trace,
// the GPU time of the device copies and kernels they launched.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "base/command_line.h"  // shell_word
#include "trace/advise/names.h"  // any_name
#include "trace/advise/rules_cpu.h"

namespace pil::trace::advise_rules {
namespace {

bool is_copy(std::string_view name) {
  return name == "aten::copy_" || name == "aten::contiguous" || name == "aten::to" ||
         name == "aten::_to_copy" || name == "aten::clone";
}


}  // namespace

void copies(const RuleContext& c, RuleResult& out) {
  if (!any_name(c.trace, is_copy)) return;  // a look at the distinct names first
  const CpuSlices& cs = c.cpu();
  const Trace& t = c.trace;
  auto copy_op = [&](size_t s) {
    const Event& e = t.events[cs.event(s)];
    return is_operator(e) && is_copy(e.name);
  };
  // A copy directly under addmm or baddbmm (or AOTInductor's shim for them) is the product's starting value (the bias written into
  // the output before the GEMM adds to it): part of the product, not a copy to avoid.
  auto bias_start = [&](size_t s) {
    const long p = cs.parent(s);
    if (p < 0) return false;
    const std::string_view n = t.events[cs.event(size_t(p))].name;
    auto ends = [&](std::string_view tail) {
      return n.size() >= tail.size() && n.substr(n.size() - tail.size()) == tail;
    };
    return n == "aten::addmm" || n == "aten::baddbmm" || n == "aten::_addmm_activation" ||
           ends("_addmm_out") || ends("_baddbmm_out");  // AOTInductor's aoti_torch_cpu_addmm_out
  };
  // The outermost copies, and each one's time less the runtime calls inside it (on a GPU trace
  // a copy's cudaMemcpy waits for the copy itself, or for earlier work: that is the GPU rules'
  // pageable copies and synchronizes, not the CPU's copying).
  const std::vector<long> root =  // the outermost copy around each slot
      outermost_roots(cs, [&](size_t s) { return copy_op(s) && cs.in_steps(s) && !bias_start(s); });
  std::vector<size_t> outer;
  std::vector<int64_t> own(cs.size(), 0);
  const std::vector<int64_t> in_runtime = cs.launch_call_ns();
  for (size_t s = 0; s < cs.size(); ++s) {
    if (root[s] != long(s)) continue;
    own[s] = t.events[cs.event(s)].dur_ns - in_runtime[s];
    outer.push_back(s);
  }
  if (outer.empty()) return;
  // On a GPU trace, the GPU time of the work they launched: device-to-device copies and copy
  // kernels (a copy between host and GPU is the pageable-copy and synchronize rules').
  const bool gpu = c.gpu();
  std::vector<int64_t> cost = own;
  int64_t copy_ns = 0;
  if (gpu) {
    LaunchedWork w = launched_work(c, root, [](const Event& e) { return !is_link_copy(e); });
    cost = std::move(w.by_root);
    copy_ns = w.union_ns;
  } else {
    copy_ns = length_within(cs.self_intervals_if([&](size_t s) {
      return root[s] >= 0 && !is_launch_call(t.events[cs.event(s)].category);
    }),
                            cs.basis());
  }
  const double share = c.basis_ns > 0 ? double(copy_ns) / double(c.basis_ns) : 0;
  if (share < threshold::kCopyShare) return;

  // Who called them: the operator or named range directly around each outermost copy; none
  // around it is the step itself on a thread that records the steps, the thread's top level on
  // another (autograd's, a loader's) or on a trace without steps.
  std::set<std::pair<int64_t, int64_t>> step_threads;
  for (size_t k : c.index.steps) step_threads.insert({t.events[k].pid, t.events[k].tid});
  auto caller_name = [&](size_t s) {
    const long p = cs.caller(s);
    if (p >= 0) return std::string(t.events[cs.event(size_t(p))].name);
    const Event& e = t.events[cs.event(s)];
    return std::string(step_threads.count({e.pid, e.tid}) ? "the step itself" : "the top level");
  };
  std::map<std::string, int64_t> by_caller;
  int64_t total = 0;
  for (size_t s : outer) {
    by_caller[caller_name(s)] += cost[s];
    total += cost[s];
  }
  std::vector<std::pair<std::string, int64_t>> callers(by_caller.begin(), by_caller.end());
  std::stable_sort(callers.begin(), callers.end(),
                   [](auto& a, auto& b) { return a.second > b.second; });
  std::string from;
  for (size_t i = 0; i < callers.size() && i < 3; ++i)
    from += (i ? ", " : "") + callers[i].first + " " +
            percent_text(double(callers[i].second) / double(std::max<int64_t>(total, 1)));

  // Copies made by an operator or range that then launches a CUDA graph (torch.compile's
  // CompiledFunction with cudagraphs): the graph's inputs copied into the fixed buffers it
  // replays from, the price of the graph, not a layout to fix.
  int64_t into_graphs = 0;
  if (gpu && any_name(t, is_graph_launch)) {
    auto launches_a_graph = [&](long p) {
      if (p < 0) return false;
      const Event& in = t.events[cs.event(size_t(p))];
      const auto it = c.calls_by_thread().find({in.pid, in.tid});
      if (it == c.calls_by_thread().end()) return false;
      auto k = std::lower_bound(it->second.begin(), it->second.end(), in.start_ns,
                                [&](size_t a, int64_t v) { return t.events[a].start_ns < v; });
      for (; k != it->second.end() && t.events[*k].start_ns < in.end_ns(); ++k)
        if (is_graph_launch(t.events[*k].name)) return true;
      return false;
    };
    std::map<long, bool> known;  // per caller
    for (size_t o : outer) {
      const long p = cs.caller(o);
      const auto [at, fresh] = known.try_emplace(p, false);
      if (fresh) at->second = launches_a_graph(p);
      if (at->second) into_graphs += cost[o];
    }
  }
  Symptom s;
  s.text = std::to_string(outer.size()) +
           " copies (copy_, contiguous, to, _to_copy, clone; the outermost of each nest) took " +
           (gpu ? "GPU time for " : "") + percent_text(share) + " of " + c.basis_noun() + " (" +
           format_duration(copy_ns) + "); called from " + from;
  if (2 * into_graphs >= total && into_graphs > 0)
    s.text += "; " + percent_text(double(into_graphs) / double(std::max<int64_t>(total, 1))) +
              " of it by operators or ranges that then launch a CUDA graph: its inputs copied into "
              "the fixed buffers it replays from (torch.compile's cudagraphs), the graph's price, not a "
              "layout to fix: inputs that already live in those buffers (or no graph) save it";
  s.figures = {
      {"copy_share", share},
      {"copy_ns", double(copy_ns)},
      {"copies", double(outer.size())},
      {"top_caller_share", double(callers[0].second) / double(std::max<int64_t>(total, 1))},
      {"into_graphs_ns", double(into_graphs)}};
  std::vector<size_t> worst = outer;
  std::stable_sort(worst.begin(), worst.end(),
                   [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  for (size_t i = 0; i < worst.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(cs.event(worst[i]), "called from " + caller_name(worst[i])));
  s.saved_ns = copy_ns;
  // What the first caller runs, where it is a range or an operator (not the step or a thread's
  // top level, which chain cannot take).
  if (callers[0].first != "the step itself" && callers[0].first != "the top level")
    s.command = "build/bin/pil-trace chain traces/TRACE.pt.trace.json --range " + shell_word(callers[0].first);
  s.how = std::string(gpu ? "the copies' GPU time (" : "the copies' time (") +
          format_duration(copy_ns) +
          "), an upper bound: a copy avoided saves all of it, a cheaper one part";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
