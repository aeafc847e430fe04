// The GPU waiting on the host, three ways: idle between launches (a launch-bound loop), kernels
// shorter than their launch on an idle stream (the same cause seen from the CPU), and idle for
// long stretches while the host does something else (a stall: data loading, a first call that
// loads a kernel or a library, setup). Idle time is the GPU's as a whole: every stream idle.
// What falls inside a loop of small operators is op_loop's (RuleContext::loops()): the GPU's wait
// there, and the launches made there, are left out here.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_set>

#include "trace/advise/names.h"
#include "trace/advise/rules_gpu.h"
#include "trace/check.h"  // trace_ts
#include "trace/intervals.h"

namespace pil::trace::advise_rules {
namespace {

/// The GPU's waits on the host; `captured`, where given, gets the time left out of them as
/// stream captures' (in the basis).
std::vector<HostGap> find_host_gaps(const RuleContext& c, int64_t* captured = nullptr) {
  std::vector<HostGap> gaps;
  // Without steps the basis leaves out the set-up recorded before the GPU's first work
  // (RuleContext::set_up_ns): no wait between launches.
  int64_t prev_end = c.step_ns.empty() ? std::max(c.index.gpu_window_start, c.basis_start) : c.index.gpu_window_start;
  // A gap's time inside a stream capture of the thread whose launch ended it is the capture's:
  // the launches made then ran nothing (a public vLLM start-up trace's 56.1 ms capture read as a
  // host stall, "53x faster"). The rest of the gap, before or after the capture, waits on the
  // host. Another thread's capture leaves this thread's launches waited for.
  for (const BusySpan& s : c.busy_spans()) {
    if (s.start > prev_end) {
      const long call = c.index.launch_of(s.first);
      const int64_t returned = call >= 0 ? c.trace.events[size_t(call)].end_ns() : prev_end;
      if (returned > prev_end) {
        const int64_t end = host_wait_end(returned, s.start);
        std::vector<Interval> parts{{prev_end, end}};
        if (call >= 0 && !c.captures.empty()) {
          const Event& e = c.trace.events[size_t(call)];
          if (const auto it = c.captures.find({e.pid, e.tid}); it != c.captures.end()) {
            parts = subtract(parts, it->second);
            if (captured)
              for (const Interval& cap : clip(it->second, prev_end, end)) *captured += c.basis_overlap(cap.from, cap.to);
          }
        }
        for (const Interval& p : parts)
          if (p.to > p.from) gaps.push_back({p.from, p.to, s.first, size_t(call)});
      }
    }
    prev_end = std::max(prev_end, s.end);
  }
  return gaps;
}

bool is_stall(const HostGap& g) { return g.dur() > threshold::kHostStallNs; }

// What a stall's host time went to, where a family of slices says so on the launching thread:
// the DataLoader's fetches (the step waiting for its batch), torch.compile compiling (its
// "(dynamo_timed)" ranges: the first call of a compiled function, recorded) or the first launches
// of kernels that load them (first_slow_launches). Each family's slices per thread, merged.
struct HostRanges {
  const char* figure;  // "data_loading_ns"
  std::string (*what)(const std::string& longest);  // where the stall's time went, in words
  bool one_time;       // a first call's cost: not in a warmed-up step
  std::function<std::string(const Event&)> label;  // how the longest is named (its name when empty)
  std::map<std::pair<int64_t, int64_t>, std::vector<Interval>> by_thread;     // merged
  std::map<std::pair<int64_t, int64_t>, std::vector<const Event*>> ranges;  // as recorded
  int64_t stalled = 0;  // the stalls' counted time inside them
  std::string name;     // the longest of them a counted stall overlapped
  int64_t longest = -1;

  template <typename NameTest, typename EventTest>
  HostRanges(const Trace& t, const char* figure_name, std::string (*what_it_is)(const std::string&),
             bool first_calls, NameTest name_test, EventTest is_one,
             std::function<std::string(const Event&)> label_of = {})
      : figure(figure_name), what(what_it_is), one_time(first_calls), label(std::move(label_of)) {
    if (!any_name(t, name_test)) return;
    for (const Event& e : t.events) {
      if (!is_one(e)) continue;
      by_thread[{e.pid, e.tid}].push_back({e.start_ns, e.end_ns()});
      ranges[{e.pid, e.tid}].push_back(&e);
    }
    for (auto& [thread, spans] : by_thread) merge(spans);
  }
  // Adds the part of a stall [from, to) that counts (inside the basis, outside the loops of
  // `call`'s thread: host_stall's own measure) and that thread spent inside one of them.
  void add(const RuleContext& c, const Loops& loops, const Event& call, int64_t from, int64_t to) {
    const auto it = by_thread.find({call.pid, call.tid});
    if (it == by_thread.end()) return;
    int64_t n = 0;
    for (const Interval& p : clip(it->second, from, to))
      n += std::max<int64_t>(0, c.basis_overlap(p.from, p.to) - loops.inside(call, p.from, p.to));
    if (n <= 0) return;
    stalled += n;
    for (const Event* e : ranges.at({call.pid, call.tid}))
      if (e->start_ns < to && e->end_ns() > from && e->dur_ns > longest)
        longest = e->dur_ns, name = label ? label(*e) : std::string(e->name);
  }
};

// torch.compile's own ranges: user_annotation in the traces of 2025's torch seen, cpu_op in torch
// 2.11's (checked on the CPU: "_compile.compile_inner (dynamo_timed)" and 50 more, all cpu_op).
bool is_compiling_name(std::string_view name) {
  constexpr std::string_view kSuffix = " (dynamo_timed)";
  return name.size() > kSuffix.size() && name.substr(name.size() - kSuffix.size()) == kSuffix;
}
bool is_compiling(const Event& e) {
  return (e.category == Category::UserAnnotation || e.category == Category::CpuOp) && is_compiling_name(e.name);
}

std::string loading_text(const std::string& longest) {
  return "inside the DataLoader's fetches (" + longest + "): " +
         (loads_in_workers(longest) ? "its worker processes did not have the batch ready"
                                    : "the training thread prepared the data itself");
}

std::string compiling_text(const std::string& longest) {
  return "compiling (torch.compile's \"(dynamo_timed)\" ranges, the longest " + longest +
         "): a first call compiled inside the recorded window, not the steady state";
}

std::string first_launch_text(const std::string& longest) {
  return "in the first launches of their kernels (the longest " + longest +
         "): the GPU's runtime loads a kernel's code at its first launch (lazy loading: CUDA_MODULE_LOADING=LAZY "
         "on CUDA), and a library (cuBLAS, cuDNN; rocBLAS, MIOpen) sets itself up at its first call: a one-time "
         "cost inside the recorded window, not the steady state";
}

std::string first_call_text(const std::string& longest) {
  return "in first calls far slower than their later ones (the longest " + longest +
         "): a library setting itself up, a first allocation, loading: a one-time cost inside the recorded window, "
         "not the steady state";
}

std::string one_time_text(const std::string& longest) {
  return "paying one-time costs: first launches of kernels, first calls far slower than their later ones, "
         "compiling (the longest " + longest + "): not the steady state";
}

// The operators and CUDA calls that are their name's first on their thread, longer than a stall,
// and at least kFirstCallRatio times the median of their later calls there, none of which is a
// stall itself: a first call's set-up (a library's handle and workspace, a first allocation, a
// module loaded), which a warm-up pays. A call made once cannot be told from a slow one, nor one
// that is slow again later (a copy slow in every step), and is not one.
std::unordered_set<const Event*> slow_first_calls(const RuleContext& c) {
  using Key = std::tuple<int64_t, int64_t, const char*>;  // (process, thread, interned name)
  auto counts = [](const Event& e) { return e.category == Category::CpuOp || is_launch_call(e.category); };
  struct Calls {
    const Event* first = nullptr;
    std::vector<int64_t> later;  // the other calls' durations
  };
  std::map<Key, Calls> names;  // the candidates: names with a call over a stall on a thread
  for (const Event& e : c.trace.events)
    if (counts(e) && e.dur_ns > threshold::kHostStallNs) names.try_emplace(Key{e.pid, e.tid, e.name.data()});
  std::unordered_set<const Event*> out;
  if (names.empty()) return out;
  for (const Event& e : c.trace.events) {
    if (!counts(e)) continue;
    const auto it = names.find(Key{e.pid, e.tid, e.name.data()});
    if (it == names.end()) continue;
    Calls& calls = it->second;
    if (!calls.first || e.start_ns < calls.first->start_ns) {
      if (calls.first) calls.later.push_back(calls.first->dur_ns);
      calls.first = &e;
    } else {
      calls.later.push_back(e.dur_ns);
    }
  }
  for (auto& [key, calls] : names) {
    std::vector<int64_t>& d = calls.later;
    if (calls.first->dur_ns <= threshold::kHostStallNs || d.empty()) continue;
    if (*std::max_element(d.begin(), d.end()) > threshold::kHostStallNs) continue;  // slow again later
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    if (double(calls.first->dur_ns) >= threshold::kFirstCallRatio * double(d[d.size() / 2])) out.insert(calls.first);
  }
  return out;
}

// The kernel launch calls that are the first launch of their kernel in the trace by their process
// on their device (by the name of the first kernel they started: each process loads its modules
// on each device itself) and last longer than a stall themselves: a launch takes microseconds,
// and one that takes milliseconds the first time loads the kernel or sets up its library. A
// graph's launch is not one: its first is the graph's upload, and its kernels may have run before.
std::unordered_set<const Event*> first_slow_launches(const RuleContext& c) {
  std::vector<size_t> calls;
  for (size_t call : c.index.launch_calls())
    if (const std::string_view name = c.trace.events[call].name; is_kernel_launch_call(name) && !is_graph_launch(name))
      calls.push_back(call);
  std::stable_sort(calls.begin(), calls.end(), [&](size_t a, size_t b) {
    return c.trace.events[a].start_ns < c.trace.events[b].start_ns;
  });
  std::set<std::tuple<int64_t, int64_t, std::string_view>> seen;  // (process, device, kernel)
  std::unordered_set<const Event*> out;
  for (size_t call : calls) {
    const long kernel = c.index.first_kernel_of(call);
    if (kernel < 0) continue;
    const Event &e = c.trace.events[call], &k = c.trace.events[size_t(kernel)];
    if (seen.insert({e.pid, k.pid, k.name}).second && e.dur_ns > threshold::kHostStallNs) out.insert(&e);
  }
  return out;
}

std::vector<HostGap> longest(std::vector<HostGap> gaps, size_t n) {
  std::stable_sort(gaps.begin(), gaps.end(),
                   [](const HostGap& a, const HostGap& b) { return a.dur() > b.dur(); });
  if (gaps.size() > n) gaps.resize(n);
  return gaps;
}

/// What the host was doing during a stall, on the thread that launched the work that ended it:
/// the innermost CPU slice (operator, range or runtime call; not the step) covering at least
/// half of the gap, and the outermost slice around that one. Where none covers half, the host
/// ran something the profiler did not record for most of it: `partial` is the slice that
/// covered the most.
struct HostActivity {
  long slice = -1, outer = -1, partial = -1;
  int64_t partial_ns = 0;
  /// Where no operator or range covers it: the innermost slice of Python's stack tracer
  /// (python_function, read as Category::Other) covering half of it, or -1.
  long python = -1;
};

std::vector<HostActivity> host_activity(const RuleContext& c, const std::vector<HostGap>& gaps) {
  std::vector<HostActivity> out(gaps.size());
  const auto& ev = c.trace.events;
  // One pass over the events for all the gaps (a handful: the worst examples).
  const bool python = c.trace.python_functions > 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    const bool python_slice = python && e.category == Category::Other && e.dur_ns > 0;
    if (!python_slice && (!is_cpu_slice(e.category) || is_step(e))) continue;
    for (size_t g = 0; g < gaps.size(); ++g) {
      const Event& call = ev[gaps[g].call];
      if (e.pid != call.pid || e.tid != call.tid) continue;
      const int64_t overlap =
          std::min(e.end_ns(), gaps[g].end) - std::max(e.start_ns, gaps[g].start);
      if (overlap <= 0) continue;
      HostActivity& a = out[g];
      if (python_slice) {
        if (2 * overlap >= gaps[g].dur() && (a.python < 0 || e.dur_ns < ev[size_t(a.python)].dur_ns)) a.python = long(i);
        continue;
      }
      if (2 * overlap >= gaps[g].dur()) {  // covers half: the innermost of those
        if (a.slice < 0 || e.dur_ns < ev[size_t(a.slice)].dur_ns) a.slice = long(i);
      } else if (overlap > a.partial_ns) {
        a.partial = long(i), a.partial_ns = overlap;
      }
    }
  }
  // The outermost slice on the same thread that holds the chosen one (a second pass).
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (!is_cpu_slice(e.category) || is_step(e)) continue;
    for (HostActivity& a : out) {
      if (a.slice < 0 || long(i) == a.slice) continue;
      const Event& in = ev[size_t(a.slice)];
      if (e.pid != in.pid || e.tid != in.tid || e.start_ns > in.start_ns || e.end_ns() < in.end_ns())
        continue;
      if (a.outer < 0 || e.dur_ns > ev[size_t(a.outer)].dur_ns) a.outer = long(i);
    }
  }
  return out;
}

}  // namespace

int64_t captured_idle_ns(const RuleContext& c) {
  if (c.captures.empty() || !c.gpu()) return 0;
  int64_t n = 0;
  find_host_gaps(c, &n);
  return n;
}

const std::vector<HostGap>& RuleContext::host_gaps() const {
  return host_gaps_.get([&] { return find_host_gaps(*this); });
}

// Launch-bound, seen from the GPU: the GPU idle between launches, waiting for the host to
// launch the next work, in gaps of launch scale (up to kHostStallNs; longer ones are stalls).
void gpu_host_wait(const RuleContext& c, RuleResult& out) {
  // Without steps, from where the basis begins (the set-up before the GPU's first work left out).
  const int64_t lo = c.step_ns.empty() ? std::max(c.index.gpu_window_start, c.basis_start) : c.index.gpu_window_start;
  const int64_t hi = c.index.gpu_window_end;
  if (hi <= lo) return;
  // A gap spent mostly inside the DataLoader's fetch on the launching thread waited for the batch,
  // not for launches: fusing or a graph does nothing for it (a public RTX 3080 trace without
  // workers: 380 us of its longest 473 us gap in _SingleProcessDataLoaderIter.__next__).
  HostRanges loading{c.trace, "loading_wait_ns", loading_text, false, is_data_loading_name, is_data_loading};
  const Loops& loops = c.loops();
  auto loading_part = [&](const Event& call, int64_t from, int64_t to) {  // outside the loops, as counted
    const auto it = loading.by_thread.find({call.pid, call.tid});
    int64_t n = 0;
    if (it != loading.by_thread.end())
      for (const Interval& p : clip(it->second, from, to)) n += p.to - p.from - loops.inside(call, p.from, p.to);
    return n;
  };
  std::vector<HostGap> gaps, loading_gaps;
  int64_t wait = 0, saved = 0, in_loops = 0, longest_gap = 0;  // a gap's part outside the loops
  int64_t loading_wait = 0, loading_saved = 0;
  // Of the counted gaps, the part after the next work's launch call returned: launch latency.
  // Microseconds each on a healthy machine; most of the wait where the latency is slow.
  int64_t after_return = 0;
  auto after_return_of = [&](const HostGap& g) {
    return std::max<int64_t>(0, g.end - std::max(g.start, c.trace.events[g.call].end_ns()));
  };
  for (const HostGap& g : c.host_gaps()) {
    const Event& call = c.trace.events[g.call];
    const int64_t in = loops.inside(call, g.start, g.end);
    if (g.dur() - in > threshold::kHostStallNs) continue;  // a stall, outside the loops
    in_loops += in;
    if (in >= g.dur()) continue;
    const int64_t counted = g.dur() - in, counted_in_basis = std::max<int64_t>(0, c.basis_overlap(g.start, g.end) - in);
    if (2 * loading_part(call, g.start, g.end) >= counted) {
      loading_wait += counted;
      loading_saved += counted_in_basis;
      loading.add(c, loops, call, g.start, g.end);  // for the longest fetch's name
      loading_gaps.push_back(g);
      continue;
    }
    wait += counted;
    longest_gap = std::max(longest_gap, counted);
    saved += counted_in_basis;
    after_return += std::min(after_return_of(g), counted);
    gaps.push_back(g);
  }
  // The longest by their counted part (outside the loops).
  auto ranked = [&](const std::vector<HostGap>& of) {
    std::vector<std::pair<int64_t, const HostGap*>> r;  // (counted part, gap)
    for (const HostGap& g : of) r.push_back({g.dur() - loops.inside(c.trace.events[g.call], g.start, g.end), &g});
    std::stable_sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (r.size() > c.options.examples) r.resize(c.options.examples);
    return r;
  };
  const double window = double(hi - lo);
  // Judged as a stall is (the host busy with other work), by its share of the basis.
  const double loading_share = c.basis_ns > 0 ? double(loading_saved) / double(c.basis_ns) : 0;
  if (loading_share >= threshold::kHostStallShare &&
      double(loading_saved) >= c.options.min_saved_share * double(c.basis_ns)) {
    const bool workers = loads_in_workers(loading.name);
    Symptom s;
    s.text = "GPU idle waiting for the data between launches: " + percent_text(loading_share) + " of " +
             c.basis_noun() + " (" + format_duration(loading_saved) + " in " + std::to_string(loading_gaps.size()) +
             (loading_gaps.size() == 1 ? " gap" : " gaps") + " of " + format_duration(threshold::kHostStallNs) +
             " or less, each mostly with the launching thread " + loading_text(loading.name) + ")";
    s.figures = {{"loading_wait_share", loading_share}, {"loading_wait_ns", double(loading_saved)},
                 {"gaps", double(loading_gaps.size())}, {"workers", workers ? 1.0 : 0.0}};
    for (const auto& [part, g] : ranked(loading_gaps))
      s.examples.push_back(c.example(g->next, "the GPU idle " + format_duration(part) +
                                                  " before it, the launching thread inside the DataLoader's fetch"));
    s.saved_ns = loading_saved;
    s.how = "the GPU's idle time in those gaps inside " + std::string(c.basis_noun()) + " (" +
            format_duration(loading_saved) + "), an upper bound: with the batch ready ahead of the step, only "
            "the hand-off stays";
    // As data_loading's (a CPU run's): workers that do not keep up are a cause of their own.
    out.symptom(std::move(s), workers ? "loader_behind" : "untraced");
  }
  const double share = double(wait) / window;
  if (share < threshold::kHostWaitShare) return;
  if (double(saved) < c.options.min_saved_share * double(c.basis_ns)) return;
  const double busy = double(c.gpu_busy_in(lo, hi)) / window;
  Symptom s;
  s.text = "GPU idle waiting on the host between launches: " + percent_text(share) +
           " of the GPU window (" + format_duration(wait) + " in " + std::to_string(gaps.size()) +
           " gaps, the longest " + format_duration(longest_gap) + " (a gap over " +
           format_duration(threshold::kHostStallNs) + " is a stall, judged apart), every stream idle; GPU busy " +
           percent_text(busy) + ")";
  if (in_loops > 0)
    s.text += "; besides " + format_duration(in_loops) + " inside loops of small operators, op_loop's";
  if (loading_wait > 0)
    s.text += "; besides " + format_duration(loading_wait) + " in gaps spent mostly in the DataLoader's fetches";
  // Most of the wait after the calls returned, at a slow launch latency: the launches' latency,
  // not the host's pace (a public RTX 4090 trace: 5.86 ms of its 6.16 ms, a median 178 us a launch).
  const LaunchReport& lr = c.launches();
  const bool latency_bound = lr.slow_latency() && 2 * after_return >= wait;
  if (latency_bound)
    s.text += "; " + format_duration(after_return) + " of it after the launch calls had returned: launch latency, "
              "median " + format_duration(int64_t(lr.latency.median)) + " a launch onto an idle stream (" +
              kSlowLatencyWhy + "), which fewer launches save and a faster host does not";
  s.figures = {{"host_wait_share", share}, {"host_wait_ns", double(wait)},
               {"gaps", double(gaps.size())}, {"longest_gap_ns", double(longest_gap)}, {"busy_share", busy},
               {"after_return_ns", double(after_return)}};
  if (in_loops > 0) s.figures.push_back({"in_loops_ns", double(in_loops)});
  if (loading_wait > 0) s.figures.push_back({"loading_wait_ns", double(loading_wait)});
  for (const auto& [part, g] : ranked(gaps)) {
    const int64_t in = g->dur() - part, late = std::min(after_return_of(*g), part);
    s.examples.push_back(c.example(g->next, "the GPU idle " + format_duration(part) +
                                                " before it, waiting for its launch (" +
                                                std::string(c.trace.events[g->call].name) + ")" +
                                                (latency_bound ? ", " + format_duration(late) + " of that after the call had returned"
                                                               : std::string()) +
                                                (in > 0 ? "; besides " + format_duration(in) + " inside a loop of small operators"
                                                        : std::string())));
  }
  s.saved_ns = saved;
  s.how = "the GPU's idle time waiting on the host between launches inside " + std::string(c.basis_noun()) + " (" +
          format_duration(saved) + "): fewer, larger launches could save at most that" +
          (latency_bound ? " (a CUDA graph pays one launch's latency for all its kernels)" : "");
  out.symptom(std::move(s));
}

// A stall: the GPU idle for more than kHostStallNs at a time while the host did something else
// before launching the next work. What the host did is named from the trace (the slice that
// covers the gap on the launching thread): a data loader's range, a first call, untraced work.
// Where GPU times look offset from CPU times (gpu_clock_offset), a stall can only come out
// shorter than it was: its gap ends when the launch call returns (find_host_gaps).
void host_stall(const RuleContext& c, RuleResult& out) {
  std::vector<HostGap> stalls;
  int64_t saved = 0, profiler = 0;
  const Loops& loops = c.loops();
  // The profiler's own work the launching thread most likely waited for (a CUPTI overhead record
  // one of its calls spans, or that ended just as its next call began): not the program's. Per
  // thread, the union of those records (they can overlap).
  std::map<std::pair<int64_t, int64_t>, std::vector<Interval>> held;
  if (!c.host_gaps().empty())
    for (const ProfilerOverhead& o : profiler_overhead(c.index))
      if (o.waiting_call() != ProfilerOverhead::npos) {
        const Event &by = c.trace.events[o.waiting_call()], &e = c.trace.events[o.event];
        held[{by.pid, by.tid}].push_back({e.start_ns, e.end_ns()});
      }
  for (auto& [thread, spans] : held) merge(spans);
  for (const HostGap& g : c.host_gaps()) {
    if (!is_stall(g)) continue;
    const Event& call = c.trace.events[g.call];
    const int64_t in = loops.inside(call, g.start, g.end);
    int64_t theirs = 0, theirs_in_basis = 0;  // the records' union inside the gap, and inside the basis
    if (const auto h = held.find({call.pid, call.tid}); h != held.end())
      for (const Interval& p : clip(h->second, g.start, g.end))
        theirs += p.to - p.from, theirs_in_basis += c.basis_overlap(p.from, p.to);
    if (g.dur() - in - theirs <= threshold::kHostStallNs) continue;  // a loop's or the profiler's, mostly
    profiler += theirs;
    saved += std::max<int64_t>(0, c.basis_overlap(g.start, g.end) - in - theirs_in_basis);
    stalls.push_back(g);
  }
  if (stalls.empty() || c.basis_ns <= 0) return;
  const double share = double(saved) / double(c.basis_ns);
  if (share < threshold::kHostStallShare) return;
  // Only now, with a finding to word, the ranges that may say where it went (a scan of the trace).
  const std::unordered_set<const Event*> first = first_slow_launches(c);
  auto first_launch_label = [&](const Event& call) {  // "358 ms, cudaLaunchKernel of indexSelectSmallIndex"
    const long kernel = c.index.first_kernel_of(size_t(&call - c.trace.events.data()));  // one, or not first
    return format_duration(call.dur_ns) + ", " + std::string(call.name) + " of " +
           kernel_label(c.trace.events[size_t(kernel)].name);
  };
  const std::unordered_set<const Event*> first_calls = slow_first_calls(c);
  auto any = [](std::string_view) { return true; };
  // The one-time families together, where none holds half a stall alone: first launches, first
  // calls and compiling, whose union does (py4ai's cold inference: its first launches 49% of its
  // stall, the first cuDNN convolution most of the rest).
  // A first call named with the innermost first call inside it that holds more than half its time
  // ("aten::conv2d (3.00 ms), most of it in aten::cudnn_convolution (2.75 ms)"): the outermost
  // is the longest, the innermost says whose set-up it was.
  auto first_call_label = [&](const Event& e) {
    const Event* in = &e;
    for (size_t depth = 0; depth < first_calls.size(); ++depth) {
      const Event* deeper = nullptr;
      for (const Event* f : first_calls)
        if (f != in && f->pid == e.pid && f->tid == e.tid && f->start_ns >= in->start_ns &&
            f->end_ns() <= in->end_ns() && f->dur_ns < in->dur_ns && 2 * f->dur_ns > e.dur_ns)
          deeper = f;
      if (!deeper) break;
      in = deeper;
    }
    std::string label = std::string(e.name) + " (" + format_duration(e.dur_ns) + ")";
    if (in != &e) label += ", most of it in " + std::string(in->name) + " (" + format_duration(in->dur_ns) + ")";
    return label;
  };
  auto is_one_time = [&](const Event& e) { return first.count(&e) > 0 || first_calls.count(&e) > 0 || is_compiling(e); };
  auto one_time_label = [&](const Event& e) {
    return first.count(&e)        ? first_launch_label(e)
           : first_calls.count(&e) ? first_call_label(e)
                                   : std::string(e.name) + " (" + format_duration(e.dur_ns) + ")";
  };
  HostRanges families[] = {
      {c.trace, "data_loading_ns", loading_text, false, is_data_loading_name, is_data_loading},
      {c.trace, "compiling_ns", compiling_text, true, is_compiling_name, is_compiling},
      {c.trace, "first_launch_ns", first_launch_text, true, is_kernel_launch_call,
       [&](const Event& e) { return first.count(&e) > 0; }, first_launch_label},
      {c.trace, "first_call_ns", first_call_text, true, any, [&](const Event& e) { return first_calls.count(&e) > 0; },
       first_call_label},
      {c.trace, "one_time_ns", one_time_text, true, any, is_one_time, one_time_label}};
  for (const HostGap& g : stalls)
    for (HostRanges& f : families) f.add(c, loops, c.trace.events[g.call], g.start, g.end);
  const std::vector<HostGap> worst = longest(stalls, c.options.examples);
  const std::vector<HostActivity> what = host_activity(c, worst);
  Symptom s;
  s.text = "the GPU idle " + format_duration(saved) + " (" + percent_text(share) + " of " +
           (c.step_ns.empty() ? "the window" : "the steps") +
           ") waiting for the host to launch the next work, in " +
           (stalls.size() == 1 ? "one stretch" : std::to_string(stalls.size()) + " stretches") +
           " longer than " + format_duration(threshold::kHostStallNs) +
           (stalls.size() == 1 ? "" : " each");
  s.figures = {{"stall_ns", double(saved)}, {"stall_share", share}, {"stalls", double(stalls.size())},
               {"longest_ns", double(worst.front().dur())}};
  if (profiler > 0) {
    s.text += " (besides " + format_duration(profiler) +
              " of the profiler's own work that the launching thread most likely waited for, left out: "
              "summary names it)";
    s.figures.push_back({"profiler_ns", double(profiler)});
  }
  // Half or more of it inside one family of ranges: that is where the time went. The DataLoader's
  // kind of fetch says whose (worker processes not keeping up, or the training thread preparing
  // the data itself); compiling inside the recorded window is a first call, not the steady state.
  const HostRanges* most = nullptr;
  for (const HostRanges& f : families) {
    if (f.stalled <= 0 || 2 * f.stalled < saved) continue;
    s.text += "; " + format_duration(f.stalled) + " of it (" + percent_text(double(f.stalled) / double(saved)) +
              ") with the launching thread " + f.what(f.name);
    s.figures.push_back({f.figure, double(f.stalled)});
    most = &f;
    break;  // half or more: one family at most
  }
  for (size_t k = 0; k < worst.size(); ++k) {
    const HostGap& g = worst[k];
    const Event& next = c.trace.events[g.next];
    std::string detail = "the GPU idle " + format_duration(g.dur()) + " (" + trace_ts(g.start) +
                         " to " + trace_ts(g.end) + " us) while the host ";
    AdviceExample x;
    if (what[k].slice >= 0) {
      const Event& in = c.trace.events[size_t(what[k].slice)];
      detail += !is_launch_call(in.category) ? "ran this"
                : first.count(&in)               ? "was inside this call (its kernel's first launch in the trace)"
                                                 : "was inside this call";
      if (what[k].outer >= 0) detail += ", inside " + std::string(c.trace.events[size_t(what[k].outer)].name);
      x = c.example(size_t(what[k].slice));
    } else if (what[k].python >= 0) {
      detail += "ran no operator or range on the launching thread for most of it, but this Python code "
                "(Python's stack tracer's slice)";
      x = c.example(size_t(what[k].python));
    } else {
      detail += "ran nothing the profiler recorded on the launching thread for most of it";
      if (what[k].partial >= 0)
        detail += " (" + std::string(c.trace.events[size_t(what[k].partial)].name) + " covers " +
                  format_duration(what[k].partial_ns) + ")";
      x = c.example(g.call);
      x.name = "(untraced)";
      x.ts_ns = g.start;
      x.dur_ns = g.dur();
    }
    detail += "; then " + std::string(next.name.substr(0, 60)) + (next.name.size() > 60 ? "..." : "");
    x.detail = std::move(detail);
    s.examples.push_back(std::move(x));
  }
  s.saved_ns = saved;
  s.how = "the GPU's idle time in those stretches inside the " +
          std::string(c.step_ns.empty() ? "window" : "steps") + " (" + format_duration(saved) +
          "): moving the host's other work off the launching thread (or out of the recorded "
          "steps) could save at most that";
  // Most of it a first call's (first launches, first calls, compiling): a finding of its own, whose fix is a
  // warm-up rather than moving the host's work.
  const bool one_time = most && most->one_time;
  if (one_time)
    s.how += "; most of it a first call's one-time cost: warm up before recording (a schedule's warmup steps) "
             "to see what is left of it in the steady state";
  out.symptom(std::move(s), one_time ? "one_time_stall" : nullptr);
}

// Launch-bound, seen from the CPU: kernel launches (not copies or sets) onto an idle stream whose
// kernels ran for less time than the call that launched them, so that no launch rate could keep
// the GPU busy. A launch onto a busy stream costs nothing here (the GPU has earlier work), nor
// does one whose work waited on something else after the call returned (Launch::waited), a
// call longer than kHostStallNs is a stall (loading the kernel), not launch overhead, and a call
// made inside a loop of small operators is op_loop's.
void short_kernels(const RuleContext& c, RuleResult& out) {
  const LaunchReport& l = c.launches();
  int64_t launches = 0, shorter = 0, excess = 0;
  std::vector<std::pair<int64_t, size_t>> worst;
  const Loops& loops = c.loops();
  for (const Launch& x : l.launches) {
    const Event& call = c.trace.events[x.call];
    if (!is_kernel_launch_call(call.name) || !c.in_basis_at(call.start_ns)) continue;
    if (loops.inside(call, call.start_ns, call.end_ns()) > 0) continue;  // a loop's launch: op_loop's
    ++launches;
    // Queued work was fed; work that waited after its call returned waited on something else.
    if (x.queued || x.waited || call.dur_ns > threshold::kHostStallNs) continue;
    int64_t work = 0;
    for (size_t w : c.index.work_of(x.call)) work += c.trace.events[w].dur_ns;
    if (work >= call.dur_ns) continue;
    ++shorter;
    excess += call.dur_ns - work;
    worst.push_back({call.dur_ns - work, x.call});
  }
  if (launches == 0) return;
  const double share = double(shorter) / double(launches);
  if (share < threshold::kShortKernelShare) return;
  if (double(excess) < c.options.min_saved_share * double(c.basis_ns)) return;
  Symptom s;
  s.text = std::to_string(shorter) + " of " + std::to_string(launches) + " kernel launches (" +
           percent_text(share) + ") found the stream idle and ran work shorter than the launch call";
  s.figures = {{"short_share", share}, {"short_launches", double(shorter)},
               {"launches", double(launches)}};
  std::stable_sort(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < worst.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(worst[i].second,
                                   "the call took " + format_duration(worst[i].first) +
                                       " longer than its GPU work"));
  // Matrix products this short are far from the GPU's peak: the roofline says how far, beside
  // the best-placed product of the trace.
  cite_roofline(c, s, [](const RooflineRow& r) {
    return r.on_gpu && r.calls > 0 && r.time_ns / r.calls < threshold::kSmallOpNs;
  }, true);
  s.saved_ns = excess;
  s.how = "the launch calls' time beyond their GPU work's, added up (" + format_duration(excess) + ")";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
