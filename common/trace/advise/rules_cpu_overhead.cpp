// Operator overhead: operators so small that what every call costs whatever its size (the
// dispatcher, the aten:: frames, the profiler's own record) is most of what they cost, from the
// operators' self time on a CPU-only trace; and the same overhead gathered in one place, a loop
// that calls small operators one row or element at a time (op_loop), which the spread-out overhead
// leaves to it. On a GPU trace the host's time costs the step only while the GPU waits for it:
// the GPU rules judge the spread-out overhead there (the launch-bound loop); a loop is still
// op_loop's, at what the GPU spent on it (its wait for the loop's launches, and the work they
// launched), which the launch rules leave out.
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "trace/advise/rules_cpu.h"
#include "trace/name_ids.h"

namespace pil::trace::advise_rules {
namespace {

constexpr uint32_t kNoName = 0xffffffffu;

// How long a loop's call may take (with what it calls; on a GPU trace less its launch calls).
int64_t loop_call_ns(bool gpu) { return gpu ? threshold::kLoopCallGpuNs : threshold::kSmallOpNs; }

struct NameTotal {
  std::string_view name;
  int64_t calls = 0, ns = 0, median = 0;
  size_t first = 0;  // its first call's slot
};

// The loops worth a finding (the floor, AdviseOptions::min_saved_share, of the basis), or none:
// what op_loop reports and op_overhead leaves out (RuleContext::loops(), rules.h).
Loops find_loops(const RuleContext& c) {
  const CpuSlices& cs = c.cpu();
  const Trace& t = c.trace;
  Loops out;
  out.in_loop.assign(cs.size(), 0);
  std::vector<char> is_call(cs.size(), 0);
  std::map<std::pair<std::string_view, std::string_view>, LoopGroup> groups;
  NameIds ids;
  std::vector<uint32_t> count;  // by name id: the run's calls
  std::vector<char> seen;       // by name id: the run has a short call of it
  std::vector<size_t> run;      // the run's calls (slots), in start order
  std::string_view run_caller;
  long run_step = -1;
  // On a trace with GPU work a call is short under kLoopCallGpuNs less its CUDA runtime and
  // driver calls (CpuSlices::launch_call_ns: the launches are the launch-bound rules' to judge),
  // if it launches under kSmallOpNs of GPU work: a matrix product's call is as short on the host,
  // and its work is no loop's.
  const std::vector<int64_t> in_runtime = c.gpu() ? cs.launch_call_ns() : std::vector<int64_t>{};
  const int64_t short_ns = loop_call_ns(c.gpu());
  auto host_ns = [&](size_t s) { return t.events[cs.event(s)].dur_ns - (in_runtime.empty() ? 0 : in_runtime[s]); };
  std::vector<int64_t> gpu_work;  // by slot: the GPU time launched inside each of the program's own calls
  if (c.gpu()) {
    auto own_call = [&](size_t s) { return is_operator(t.events[cs.event(s)]) && cs.op_parent(s) < 0; };
    gpu_work = launched_work(c, outermost_roots(cs, own_call)).by_root;
  }
  auto is_long = [&](size_t s) {
    return host_ns(s) >= short_ns || (!gpu_work.empty() && gpu_work[s] >= threshold::kSmallOpNs);
  };
  auto close = [&] {
    int64_t most = 0;
    for (size_t s : run) {
      const uint32_t id = ids(t.events[cs.event(s)].name);
      if (id >= count.size()) count.resize(id + 1, 0);
      most = std::max<int64_t>(most, ++count[id]);
    }
    if (most >= threshold::kLoopMinCalls) {
      ++out.loops;
      const Event& first = t.events[cs.event(run.front())];
      std::vector<Interval>& mine = out.by_thread[{first.pid, first.tid}];  // a run is one thread's
      int64_t from = first.start_ns, last_end = from;
      for (size_t s : run) {
        const Event& e = t.events[cs.event(s)];
        if (e.start_ns - last_end >= threshold::kSmallOpNs) {
          mine.push_back({from, last_end});
          from = e.start_ns;
        }
        last_end = std::max(last_end, e.end_ns());
        is_call[s] = 1;
        LoopGroup& g = groups[{run_caller, e.name}];
        if (!g.calls) g = {run_caller, e.name, 0, 0, 0, {}, s};
        g.most_in_one = std::max<int64_t>(g.most_in_one, count[ids(e.name)]);
        ++g.calls;
        g.ns += e.dur_ns;
        g.durs.push_back(e.dur_ns);
      }
      mine.push_back({from, last_end});
    }
    for (size_t s : run) {
      const uint32_t id = ids(t.events[cs.event(s)].name);
      count[id] = 0;
      if (id < seen.size()) seen[id] = 0;
    }
    run.clear();
  };
  for (const CpuSlices::Thread& th : cs.threads) {
    for (size_t s = th.begin; s < th.end; ++s) {
      const Event& e = t.events[cs.event(s)];
      if (!is_operator(e) || cs.op_parent(s) >= 0) continue;  // the program's own calls
      if (!cs.in_steps(s)) {
        close();
        continue;
      }
      const long caller = cs.caller(s);
      // No caller: the step, or on a trace without steps the thread's top level.
      const std::string_view name = caller >= 0         ? t.events[cs.event(size_t(caller))].name
                                    : c.step_ns.empty() ? "the top level"
                                                        : "the step";
      if (!run.empty() && (name != run_caller || cs.step(s) != run_step)) close();
      // A long call ends the run, unless the run called its operator before, short: an
      // iteration of the loop that took longer (the thread preempted, a page fault).
      if (is_long(s)) {
        const uint32_t id = ids(e.name);
        if (!(id < seen.size() && seen[id])) {
          close();
          continue;
        }
      } else {
        const uint32_t id = ids(e.name);
        if (id >= seen.size()) seen.resize(id + 1, 0);
        seen[id] = 1;
      }
      run_caller = name;
      run_step = cs.step(s);
      run.push_back(s);
    }
    close();
  }
  // Inside the basis (a loop's last call can end after its step), merged.
  for (auto& [thread, v] : out.by_thread) {
    merge(v);
    v = intersect(v, cs.basis());
    out.time.insert(out.time.end(), v.begin(), v.end());
  }
  merge(out.time);
  out.ns = length(out.time);
  // What a slot's loop call is (-1: none).
  const std::vector<long> root = outermost_roots(cs, [&](size_t s) { return is_call[s] != 0; });
  for (size_t s = 0; s < cs.size(); ++s) out.in_loop[s] = root[s] >= 0;
  if (c.gpu() && out.loops > 0) {
    out.launched_ns = launched_work(c, root).union_ns;
    for (const HostGap& g : c.host_gaps()) out.gpu_wait_ns += out.inside(t.events[g.call], g.start, g.end);
  }
  // Worth a finding: past the floor, and costing something (on a GPU, a loop that launched
  // nothing while earlier work kept the GPU busy costs nothing).
  const int64_t cost = out.cost(c.gpu());
  if (cost <= 0 || double(cost) < c.options.min_saved_share * double(c.basis_ns)) return Loops{};
  for (auto& [key, g] : groups) out.groups.push_back(std::move(g));
  std::sort(out.groups.begin(), out.groups.end(), [](const LoopGroup& a, const LoopGroup& b) {
    return a.ns != b.ns ? a.ns > b.ns : std::tie(a.caller, a.name) < std::tie(b.caller, b.name);
  });
  return out;
}

// CPU-only: operators whose median call has under kSmallOpNs of self time, and the share of the
// steps their calls under it take in self time (their few long calls, a large copy among many
// small ones, are work, not overhead; time two threads spend in them at once counted once).
// The loops' calls, and what they call, are op_loop's: this is the overhead spread over the
// program.
void overhead_on_cpu(const RuleContext& c, RuleResult& out) {
  const CpuSlices& cs = c.cpu();
  const std::vector<char>& in_loop = c.loops().in_loop;  // op_loop's (empty: none)
  const Trace& t = c.trace;
  NameIds ids;
  std::vector<uint32_t> id_of(cs.size(), kNoName);  // operators in the steps: their name's id
  std::vector<std::vector<int64_t>> self_by_name;
  int64_t op_calls = 0;
  for (size_t s = 0; s < cs.size(); ++s) {
    const Event& e = t.events[cs.event(s)];
    if (!is_operator(e) || !cs.in_steps(s) || (!in_loop.empty() && in_loop[s])) continue;
    ++op_calls;
    id_of[s] = ids(e.name);
    if (id_of[s] >= self_by_name.size()) self_by_name.resize(id_of[s] + 1);
    self_by_name[id_of[s]].push_back(cs.self_ns(s));
  }
  std::vector<NameTotal> by_id(self_by_name.size());
  std::vector<char> small(self_by_name.size(), 0);
  for (uint32_t k = 0; k < self_by_name.size(); ++k) {
    by_id[k] = {ids.name(k), 0, 0, median_ns(std::move(self_by_name[k])), 0};
    small[k] = by_id[k].median < threshold::kSmallOpNs;
  }
  auto small_call = [&](size_t s) {
    return id_of[s] != kNoName && small[id_of[s]] && cs.self_ns(s) < threshold::kSmallOpNs;
  };
  for (size_t s = 0; s < cs.size(); ++s)
    if (small_call(s)) {
      NameTotal& n = by_id[id_of[s]];
      if (!n.calls) n.first = s;
      ++n.calls;
      n.ns += cs.self_ns(s);
    }
  const int64_t overhead = length_within(cs.self_intervals_if(small_call), cs.basis());
  const double share = c.basis_ns > 0 ? double(overhead) / double(c.basis_ns) : 0;
  if (share < threshold::kOverheadShare) return;

  std::vector<NameTotal> names;
  int64_t calls = 0;
  for (const NameTotal& n : by_id)
    if (n.calls) {
      names.push_back(n);
      calls += n.calls;
    }
  std::sort(names.begin(), names.end(), [](const NameTotal& a, const NameTotal& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
  });
  Symptom s;
  std::string top;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    top += (i ? ", " : "") + std::string(names[i].name);
  s.text = std::to_string(calls) + " short calls (under " + format_duration(threshold::kSmallOpNs) +
           " of self time) of " + std::to_string(names.size()) +
           " operators whose median call is that short (" + top +
           (names.size() > 3 ? ", ..." : "") + ") took " + percent_text(share) +
           " of " + c.basis_noun() + " in self time (" + format_duration(overhead) + ")";
  s.figures = {{"overhead_share", share},
               {"overhead_ns", double(overhead)},
               {"small_calls", double(calls)},
               {"small_operators", double(names.size())},
               {"operator_calls", double(op_calls)}};
  for (size_t i = 0; i < names.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(cs.event(names[i].first),
                                   std::to_string(names[i].calls) + " calls, median self time " +
                                       format_duration(names[i].median) + ", " +
                                       format_duration(names[i].ns) + " in all"));
  // Matrix products this short, against the CPU's peak when one is given, beside the best
  // placed product of the trace.
  cite_roofline(c, s, [](const RooflineRow& r) {
    return !r.on_gpu && r.calls > 0 && r.time_ns / r.calls < threshold::kSmallOpNs;
  }, true);
  s.saved_ns = overhead;
  s.how = "the short calls' self time (" + format_duration(overhead) +
          "), an upper bound: fewer, larger operators save what each call costs, not the work "
          "the calls did";
  out.symptom(std::move(s));
}

// The loops of small operators (find_loops), and what they cost as the share of the steps: their
// time on the CPU, what the GPU spent on them on a trace with GPU work.
void loops_found(const RuleContext& c, RuleResult& out) {
  const Loops& loops = c.loops();
  if (loops.groups.empty()) return;
  const int64_t ns = loops.ns, cost = loops.cost(c.gpu());
  const double share = c.basis_ns > 0 ? double(ns) / double(c.basis_ns) : 0;
  const double cost_share = c.basis_ns > 0 ? double(cost) / double(c.basis_ns) : 0;
  int64_t calls = 0, calls_ns = 0;
  std::vector<std::string_view> callers;
  std::vector<const LoopGroup*> looping;  // the operators a loop calls kLoopMinCalls times or more
  const LoopGroup* most = &loops.groups.front();
  for (const LoopGroup& g : loops.groups) {
    calls += g.calls;
    calls_ns += g.ns;
    if (g.most_in_one > most->most_in_one) most = &g;
    if (g.most_in_one >= threshold::kLoopMinCalls) looping.push_back(&g);
    if (std::find(callers.begin(), callers.end(), g.caller) == callers.end()) callers.push_back(g.caller);
  }
  // Where the loops ran: directly in the step (or a stepless trace's top level), and the named
  // ranges around them ("in the step and loss" read as the step and the loss).
  std::string bare, ranges;
  size_t named = 0;
  for (std::string_view caller : callers)
    if (caller == "the step" || caller == "the top level") {
      bare = caller == "the step" ? "directly in the step" : "at the top level";
    } else if (named++ < 3) {
      ranges += std::string(named > 1 ? ", " : "") + std::string(caller);
    }
  if (named > 3) ranges += ", ...";
  if (const size_t comma = ranges.rfind(", "); named >= 2 && named <= 3 && comma != std::string::npos)
    ranges.replace(comma, 2, " and ");
  const std::string where =
      bare + (bare.empty() || ranges.empty() ? "" : " and ") +
      (ranges.empty() ? "" : (named == 1 ? "in the range " : "in the ranges ") + ranges);
  Symptom s;
  s.text = "a loop of small operators " + where + ": " + grouped(calls) +
           " short calls one after another (each under " + format_duration(loop_call_ns(c.gpu())) +
           (c.gpu() ? ", with what it calls less its launch calls" : ", with what it calls") + "), up to " +
           grouped(most->most_in_one) + " of " +
           std::string(most->name) + " in one loop; " + format_duration(calls_ns) + " in the calls, " +
           format_duration(ns) + " (" + percent_text(share) + " of " + c.basis_noun() + ") with the time between them";
  if (c.gpu())
    s.text += "; the GPU waited " + format_duration(loops.gpu_wait_ns) + " for the loops' launches and ran " +
              format_duration(loops.launched_ns) + " of the work they launched: " + format_duration(cost) +
              " together, " + percent_text(cost_share) + " of " + c.basis_noun();
  s.figures = {{"loop_share", share},
               {"loop_ns", double(ns)},
               {"loop_calls_ns", double(calls_ns)},
               {"loop_calls", double(calls)},
               {"looping_operators", double(looping.size())},
               {"loops", double(loops.loops)},
               {"most_calls_in_one", double(most->most_in_one)}};
  if (c.gpu())
    s.figures.insert(s.figures.end(), {{"gpu_wait_ns", double(loops.gpu_wait_ns)},
                                       {"launched_ns", double(loops.launched_ns)},
                                       {"cost_share", cost_share}});
  for (size_t i = 0; i < looping.size() && i < c.options.examples; ++i) {
    const LoopGroup& g = *looping[i];
    s.examples.push_back(c.example(c.cpu().event(g.first),
                                   grouped(g.calls) + " calls under " + std::string(g.caller) +
                                       " (up to " + grouped(g.most_in_one) + " in one loop), median " +
                                       format_duration(median_ns(g.durs)) + ", " +
                                       format_duration(g.ns) + " in all"));
  }
  s.saved_ns = cost;
  s.how = c.gpu() ? "what the GPU spent on the loops (" + format_duration(cost) +
                        "): its idle time waiting for their launches and the work they launched, an "
                        "upper bound: one operator over the whole tensor launches once, and still "
                        "does the loop's arithmetic"
                  : "the loops' time (" + format_duration(ns) +
                        "): their calls and the time between them, an upper bound: one operator over "
                        "the whole tensor still does the loop's arithmetic";
  out.symptom(std::move(s));
}

}  // namespace

const Loops& RuleContext::loops() const {
  return loops_.get([&] { return find_loops(*this); });
}

void op_overhead(const RuleContext& c, RuleResult& out) {
  if (c.gpu()) {
    out.unable(kGpuJudgesHostTime);
    return;
  }
  overhead_on_cpu(c, out);
}

void op_loop(const RuleContext& c, RuleResult& out) { loops_found(c, out); }

}  // namespace pil::trace::advise_rules
