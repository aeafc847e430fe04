// Time in a step that no operator, range or runtime call covers: work the profiler does not see
// (data preparation, the program's own code between operators) on the training thread.
// Every thread of the step's process counts as covering: during a GPU backward Python's main
// thread waits while autograd's thread runs the operators, and that wait is not untraced work.
// A trace without steps is judged over its window (its first event to its last), every thread
// of every process covering: a forward and a backward recorded with 10.7 ms of 13.6 ms between
// them that the profiler did not see (a public CPU trace) had no word on it before.
// Gaps shorter than kUntracedMinGapNs are left out: between two operators there is always a
// little time (the profiler's own record, the interpreter's next line), which the operator
// overhead rule is about. On a trace with GPU work the host's time costs the step only while
// the GPU waits for it: the GPU rules judge it there (host stalls name what the host ran, the
// DataLoader's fetches or nothing recorded).
#include <algorithm>
#include <map>

#include "trace/advise/names.h"  // any_name
#include "trace/advise/rules_cpu.h"

namespace pil::trace::advise_rules {

void untraced(const RuleContext& c, RuleResult& out) {
  if (c.gpu()) {
    out.unable(kGpuJudgesHostTime);
    return;
  }
  const bool window = c.index.steps.empty();
  const CpuSlices& cs = c.cpu();
  const Trace& t = c.trace;
  // Per process: the outermost slices that are not steps, as intervals; and their slots by
  // start and by end, to name what comes before and after a gap.
  struct Process {
    std::vector<Interval> covered;
    std::vector<std::pair<int64_t, size_t>> by_start, by_end;
  };
  std::map<int64_t, Process> procs;
  for (size_t s = 0; s < cs.size(); ++s) {
    const Event& e = t.events[cs.event(s)];
    if (is_step(e)) continue;
    const long p = cs.parent(s);
    if (p >= 0 && !is_step(t.events[cs.event(size_t(p))])) continue;  // inside another slice
    Process& pr = procs[window ? 0 : e.pid];  // without steps, one: every process covers
    pr.covered.push_back({e.start_ns, e.end_ns()});
    pr.by_start.push_back({e.start_ns, s});
    pr.by_end.push_back({e.end_ns(), s});
  }
  for (auto& [pid, pr] : procs) {
    merge(pr.covered);
    std::sort(pr.by_start.begin(), pr.by_start.end());
    std::sort(pr.by_end.begin(), pr.by_end.end());
  }
  // The spans judged: each step, on its process's slices; or the window, on all of them.
  struct Span {
    Interval at;
    int64_t pid = 0;        // whose slices cover it (procs' key)
    const Event* step = nullptr;  // null: the window
  };
  std::vector<Span> spans;
  for (size_t s : c.index.steps) spans.push_back({{t.events[s].start_ns, t.events[s].end_ns()}, t.events[s].pid, &t.events[s]});
  if (window) spans.push_back({{c.basis_start, c.basis_end}, 0, nullptr});
  struct Gap {
    Interval at;
    size_t span;
  };
  std::vector<Gap> gaps;
  int64_t untraced_ns = 0;
  static const Process kNone;
  auto process_of = [&](const Span& sp) -> const Process& {
    const auto it = procs.find(sp.pid);
    return it == procs.end() ? kNone : it->second;
  };
  for (size_t k = 0; k < spans.size(); ++k)
    for (const Interval& g : subtract({spans[k].at}, process_of(spans[k]).covered)) {
      if (g.to - g.from < threshold::kUntracedMinGapNs) continue;
      gaps.push_back({g, k});
      untraced_ns += g.to - g.from;
    }
  const double share = c.basis_ns > 0 ? double(untraced_ns) / double(c.basis_ns) : 0;
  if (share < threshold::kUntracedShare) return;

  auto name_of = [&](size_t slot) { return std::string(t.events[cs.event(slot)].name); };
  std::stable_sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) {
    return a.at.to - a.at.from > b.at.to - b.at.from;
  });
  Symptom s;
  s.text = std::to_string(gaps.size()) + " stretches of at least " +
           format_duration(threshold::kUntracedMinGapNs) +
           (window ? " with no operator, range or runtime call on any thread took "
                   : " with no operator, range or runtime call on any thread of the step's process took ") +
           percent_text(share) + " of " + c.basis_noun() + " (" + format_duration(untraced_ns) + ")";
  s.figures = {{"untraced_share", share},
               {"untraced_ns", double(untraced_ns)},
               {"gaps", double(gaps.size())}};
  // What the profiler did record there, where it recorded more than operators: the innermost
  // slice of another kind (a Python frame with with_stack, an nn.Module with with_modules)
  // on the step's thread (without steps, any thread) around the gap's middle, shorter than the
  // step (the window). One pass for all the examples.
  const size_t shown = std::min(gaps.size(), c.options.examples);
  std::vector<long> around(shown, -1);
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.category != Category::Other || e.dur_ns <= 0) continue;
    for (size_t k = 0; k < shown; ++k) {
      const Span& sp = spans[gaps[k].span];
      const int64_t mid = gaps[k].at.from + (gaps[k].at.to - gaps[k].at.from) / 2;
      if (sp.step && (e.pid != sp.step->pid || e.tid != sp.step->tid)) continue;
      if (e.start_ns > mid || e.end_ns() <= mid || e.dur_ns >= sp.at.to - sp.at.from) continue;
      if (around[k] < 0 || e.dur_ns < t.events[size_t(around[k])].dur_ns) around[k] = long(i);
    }
  }
  for (size_t i = 0; i < shown; ++i) {
    const Gap& g = gaps[i];
    const Span& sp = spans[g.span];
    const Process& pr = process_of(sp);
    std::string before = sp.step ? "the step's start" : "the window's start",
                after = sp.step ? "the step's end" : "the window's end";
    auto b =
        std::upper_bound(pr.by_end.begin(), pr.by_end.end(), std::make_pair(g.at.from, cs.size()));
    if (b != pr.by_end.begin() && std::prev(b)->first == g.at.from)
      before = name_of(std::prev(b)->second);
    auto a = std::lower_bound(pr.by_start.begin(), pr.by_start.end(),
                              std::make_pair(g.at.to, size_t(0)));
    if (a != pr.by_start.end() && a->first == g.at.to) after = name_of(a->second);
    AdviceExample x;
    x.name = "(untraced)";
    x.ts_ns = g.at.from;
    x.dur_ns = g.at.to - g.at.from;
    if (sp.step) {
      x.where = std::string(sp.step->name);
      const auto lane = t.lane_names.find({sp.step->pid, sp.step->tid});
      x.where += ", " + (lane != t.lane_names.end() ? lane->second : "thread " + std::to_string(sp.step->tid));
    } else {
      x.where = "the window";
    }
    x.detail = "after " + before + ", before " + after;
    if (around[i] >= 0)
      x.detail += "; the profiler recorded " + std::string(t.events[size_t(around[i])].name) + " around it";
    s.examples.push_back(std::move(x));
  }
  s.saved_ns = untraced_ns;
  s.how = "the untraced time (" + format_duration(untraced_ns) +
          "), an upper bound: work moved off the training thread (a loader thread) stops "
          "costing " + (window ? "the window" : "the step") + ", work made faster saves part of it";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules

namespace pil::trace::advise_rules {

// Data loading on the training thread: Python's DataLoader records each batch's fetch as a range
// (enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, or _MultiProcessingDataLoaderIter
// when worker processes prepare the data and the training thread waits for them). Its time,
// and the operators in it, is data preparation the step waits for: the same cause as untraced
// time, seen where the program says so.
void data_loading(const RuleContext& c, RuleResult& out) {
  if (c.gpu()) {
    out.unable(kGpuJudgesHostTime);
    return;
  }
  if (!any_name(c.trace, is_data_loading_name)) return;  // a look at the distinct names first
  const CpuSlices& cs = c.cpu();
  const Trace& t = c.trace;
  std::vector<size_t> loads;
  std::vector<Interval> spans;
  for (size_t s = 0; s < cs.size(); ++s) {
    const Event& e = t.events[cs.event(s)];
    if (!cs.in_steps(s) || !is_data_loading(e)) continue;
    loads.push_back(s);
    spans.push_back({e.start_ns, e.end_ns()});
  }
  if (loads.empty()) return;
  // The worker processes starting: the first fetch from them, far longer than the others, while
  // they start (each epoch's first unless persistent_workers; by spawn on Windows and macOS, the
  // program imported again in each: a public Windows trace's first fetch took 12.5 s). A one-time
  // cost, said apart from the steady fetches (loader_startup), not "workers that do not keep up".
  {
    size_t first = loads.front();  // in time order: CpuSlices keep each thread's in start order
    for (size_t l : loads)
      if (t.events[cs.event(l)].start_ns < t.events[cs.event(first)].start_ns) first = l;
    const Event& f = t.events[cs.event(first)];
    std::vector<int64_t> rest;
    for (size_t l : loads)
      if (l != first) rest.push_back(t.events[cs.event(l)].dur_ns);
    if (loads_in_workers(f.name) && rest.size() >= 2) {
      const int64_t median = median_ns(rest);
      const int64_t first_ns = length_within({{f.start_ns, f.end_ns()}}, cs.basis());
      if (double(f.dur_ns) > threshold::kLoaderStartupRatio * double(std::max<int64_t>(median, 1)) &&
          double(first_ns) >= c.options.min_saved_share * double(c.basis_ns)) {
        Symptom st;
        st.text = "the DataLoader's first fetch (" + std::string(f.name) + ") took " + format_duration(f.dur_ns) +
                  ", " + fixed(double(f.dur_ns) / double(std::max<int64_t>(median, 1)), 1) +
                  "x the median of the other " + std::to_string(rest.size()) + " (" + format_duration(median) +
                  "): its worker processes starting";
        st.figures = {{"first_fetch_ns", double(f.dur_ns)}, {"median_other_ns", double(median)},
                      {"other_fetches", double(rest.size())}};
        st.examples.push_back(c.example(cs.event(first)));
        st.saved_ns = first_ns;
        st.how = "the first fetch's time (" + format_duration(first_ns) + "), an upper bound: workers kept between "
                 "epochs start once a run, and a recording that begins after the first batch shows none of it";
        out.symptom(std::move(st), "loader_startup");
        // The steady fetches are judged without it.
        spans.erase(std::remove_if(spans.begin(), spans.end(),
                                   [&](const Interval& i) { return i.from == f.start_ns && i.to == f.end_ns(); }),
                    spans.end());
        loads.erase(std::find(loads.begin(), loads.end(), first));
      }
    }
  }
  const int64_t load_ns = length_within(spans, cs.basis());
  const double share = c.basis_ns > 0 ? double(load_ns) / double(c.basis_ns) : 0;
  if (share < threshold::kUntracedShare) return;
  std::stable_sort(loads.begin(), loads.end(), [&](size_t a, size_t b) {
    return t.events[cs.event(a)].dur_ns > t.events[cs.event(b)].dur_ns;
  });
  const std::string name(t.events[cs.event(loads[0])].name);
  const bool workers = loads_in_workers(name);
  Symptom s;
  s.text = "the DataLoader's fetches (" + name + ", " + std::to_string(loads.size()) +
           " in " + c.basis_noun() + ") took " + percent_text(share) + " of " + c.basis_noun() + " (" +
           format_duration(load_ns) + ") on the training thread" +
           (workers ? ", waiting for its worker processes" : ", which prepares the data itself");
  s.figures = {{"loading_share", share},
               {"loading_ns", double(load_ns)},
               {"fetches", double(loads.size())},
               {"workers", workers ? 1.0 : 0.0}};
  for (size_t i = 0; i < loads.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(cs.event(loads[i])));
  s.saved_ns = load_ns;
  s.how = "the fetches' time (" + format_duration(load_ns) + "), an upper bound: " +
          (workers ? "with workers that keep up, only the hand-off of a ready batch stays on the step"
                   : "prepared ahead by loader workers, only the hand-off stays on the step");
  // Workers that do not keep up are no call for a loader: theirs is a cause of its own.
  out.symptom(std::move(s), workers ? "loader_behind" : nullptr);
}

}  // namespace pil::trace::advise_rules
