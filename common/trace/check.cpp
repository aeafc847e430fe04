#include "trace/check.h"

#include "trace/intervals.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <iomanip>
#include <map>
#include <unordered_map>
#include <sstream>

#include "trace/text_table.h"

namespace pil::trace {

namespace {

struct Finder {
  size_t examples;
  std::deque<CheckFinding> findings;  // a deque: add() hands out references that must stay valid
  CheckFinding& add(const char* key, const char* title) {
    findings.push_back({key, title, 0, {}});
    return findings.back();
  }
  void note(CheckFinding& f, std::string_view name, int64_t ts, std::string detail = {}) {
    ++f.count;
    f.examples.push_back({std::string(name), ts, std::move(detail)});
  }
  // Keeps the first `examples` by time.
  void finish() {
    for (auto& f : findings) {
      if (f.count == 0) continue;
      std::stable_sort(f.examples.begin(), f.examples.end(),
                       [](const CheckExample& a, const CheckExample& b) { return a.ts_ns < b.ts_ns; });
      if (f.examples.size() > examples) f.examples.resize(examples);
      kept.push_back(std::move(f));
    }
  }
  std::vector<CheckFinding> kept;
};

std::string us(int64_t ns) { return trace_ts(ns) + " us"; }

// GPU times offset from CPU times (gpu_clock_offset, reports.h): the work that waited on an idle
// GPU, each with its wait and the least delay of the trace.
void check_gpu_clock(const TraceIndex& index, Finder& f) {
  static_assert(kClockOffsetNs == 1'000'000, "the title says 1 ms");
  const Trace& t = index.trace();
  CheckFinding& offset = f.add(
      "gpu_clock_offset",
      "GPU work starts 1 ms or more after every launch call, some of it on an idle GPU: GPU times "
      "offset from CPU times, or work the trace does not show held the GPU (launch delays are off)");
  const ClockOffset o = gpu_clock_offset(index);
  for (size_t w : o.idle_waits) {
    const Event& e = t.events[w];
    const Event& l = t.events[size_t(index.launch_of(w))];
    f.note(offset, e.name, e.start_ns,
           "starts " + fixed(double(e.start_ns - l.end_ns()) / 1e6, 3) + " ms after " + std::string(l.name) +
               " at " + trace_ts(l.start_ns) + " returned, device " + std::to_string(e.pid) +
               " idle all that time; no GPU work starts sooner than " +
               fixed(double(o.least_delay_ns) / 1e6, 3) + " ms after its call");
  }
}

}  // namespace

EmptySteps empty_steps_of(const TraceIndex& index) {
  const Trace& t = index.trace();
  EmptySteps es;
  std::vector<int64_t> starts;  // the CPU's calls: operators, ranges, runtime and driver calls
  for (const Event& e : t.events)
    if ((is_torch_scope(e.category) && !is_step(e)) || is_launch_call(e.category)) starts.push_back(e.start_ns);
  std::sort(starts.begin(), starts.end());
  std::vector<size_t> empty;
  int64_t inside = 0;
  for (size_t s : index.steps) {
    const Event& e = t.events[s];
    const auto from = std::lower_bound(starts.begin(), starts.end(), e.start_ns);
    const auto to = std::lower_bound(from, starts.end(), e.end_ns());
    inside += to - from;
    if (from == to) empty.push_back(s);
  }
  // Most of the calls outside: a last step the profiler's stop cut short, empty with a call or two
  // after it (an MI250 trace's), is not this.
  es.inside = inside;
  es.outside = int64_t(starts.size()) - inside;
  if (!empty.empty() && es.outside > inside) es.empty = std::move(empty);
  return es;
}

StreamCaptures stream_captures(const TraceIndex& index) {
  const Trace& t = index.trace();
  StreamCaptures captures;
  // Per thread: the start of its outermost open capture and how many are open (one thread may
  // capture two streams at once).
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int>> open;
  std::vector<size_t> calls;  // the capture calls alone, in time order
  for (size_t call : index.api_calls())
    if (t.events[call].name.find("Capture") != std::string_view::npos) calls.push_back(call);
  if (calls.empty()) return captures;
  std::stable_sort(calls.begin(), calls.end(),
                   [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; });
  for (size_t call : calls) {
    const Event& e = t.events[call];
    const std::pair<int64_t, int64_t> lane{e.pid, e.tid};
    if (e.name.find("StreamBeginCapture") != std::string_view::npos) {
      auto& [from, depth] = open[lane];
      if (depth++ == 0) from = e.end_ns();
    } else if (e.name.find("StreamEndCapture") != std::string_view::npos) {
      auto it = open.find(lane);
      if (it == open.end()) {
        captures[lane].push_back({std::numeric_limits<int64_t>::min(), e.start_ns});
      } else if (--it->second.second == 0) {
        captures[lane].push_back({it->second.first, e.start_ns});
        open.erase(it);
      }
    }
  }
  for (const auto& [lane, o] : open) captures[lane].push_back({o.first, std::numeric_limits<int64_t>::max()});
  for (auto& [lane, spans] : captures) merge(spans);  // in order already; drops an empty one
  return captures;
}

std::vector<Interval> capture_spans(const StreamCaptures& captures, int64_t from, int64_t to) {
  std::vector<Interval> out;
  for (const auto& [lane, spans] : captures)
    for (const Interval& c : spans)
      if (c.from < to && c.to > from) out.push_back({std::max(c.from, from), std::min(c.to, to)});
  merge(out);
  return out;
}

LaunchExpectations launch_expectations(const TraceIndex& index) {
  const Trace& t = index.trace();
  LaunchExpectations x;
  const StreamCaptures captures = stream_captures(index);
  auto captured = [&](const Event& e) {
    const auto it = captures.find({e.pid, e.tid});
    if (it == captures.end()) return false;
    for (const Interval& c : it->second)
      if (c.from <= e.start_ns && e.start_ns < c.to) return true;
    return false;
  };
  std::vector<size_t>& expecting = x.expecting;
  for (size_t call : index.api_calls()) {
    const Event& e = t.events[call];
    if (!starts_gpu_work(e.name)) continue;
    ++x.launch_calls;  // as summary counts them: a plain cudaMemcpy or cudaMemset too
    // Only a call that always starts GPU work is expected to have some: a plain cudaMemcpy
    // between host buffers has none.
    if (!starts_gpu_work_async(e.name)) continue;
    if (captured(e) && index.work_of(call).empty()) {  // relaxed capture: other streams run
      ++x.captured;
    } else if (index.work_of(call).empty() && e.dur_ns <= 1000 &&
               (e.name.find("MemsetAsync") != std::string_view::npos ||
                e.name.find("MemcpyAsync") != std::string_view::npos)) {
      ++x.short_copies;
    } else {
      expecting.push_back(call);
    }
  }
  std::stable_sort(expecting.begin(), expecting.end(), [&](size_t a, size_t b) {
    return t.events[a].start_ns < t.events[b].start_ns;
  });
  x.last_found = expecting.size();  // none found
  for (size_t k = expecting.size(); k-- > 0;)
    if (!index.work_of(expecting[k]).empty()) {
      x.last_found = k;
      break;
    }
  x.lost_from = x.last_found < expecting.size() && expecting.size() - x.last_found - 1 >= 2 ? x.last_found + 1
                                                                                            : expecting.size();
  if (x.lost_from == expecting.size()) return x;
  // Why: the GPU's recorded work lasting to the end of the CPU's side (within kLostTailBusyNs) says
  // the lost work queued behind it, to run after recording stopped.
  int64_t cpu_end = std::numeric_limits<int64_t>::min();
  for (const Event& e : t.events)
    if (is_cpu_slice(e.category) || is_launch_call(e.category)) cpu_end = std::max(cpu_end, e.end_ns());
  for (size_t w : index.device_work()) x.gpu_end = std::max(x.gpu_end, t.events[w].end_ns());
  x.cpu_end = cpu_end;
  const Event& last = t.events[expecting[x.last_found]];
  for (size_t w : index.work_of(expecting[x.last_found]))
    x.lag_ns = std::max(x.lag_ns, t.events[w].start_ns - last.end_ns());
  // The profiler's own word first: where it logged that GPU events are missing (its buffer full,
  // records dropped), they were dropped.
  x.loss_logged = !profiler_messages(t, true).gpu_loss.empty();
  x.after_recording = !x.loss_logged && x.gpu_end >= cpu_end - kLostTailBusyNs;
  return x;
}

std::string lost_tail_cause(const LaunchExpectations& x) {
  if (x.loss_logged) return "the profiler logged that GPU events are missing: their records were dropped";
  if (x.after_recording)
    return "the recorded GPU work lasts to the recording's end" +
           (x.lag_ns >= kLostTailBusyNs ? " (the GPU " + format_duration(x.lag_ns) + " behind its host at the last launch found)"
                                        : std::string()) +
           ": their work ran after the profiler stopped, most likely, and Kineto keeps none of it (synchronize "
           "before it stops)";
  return "the recorded GPU work ended " + format_duration(x.cpu_end - x.gpu_end) +
         " before the recording did: their records were dropped, most likely (a full buffer?)";
}

std::string lost_tail_said(const LaunchExpectations& x) {
  if (!x.stops_early()) return "";
  return "GPU events stop early: the last " + grouped(int64_t(x.lost())) + " of " +
         counted(int64_t(x.expecting.size()), "launch call") + " that must start GPU work found none; " +
         lost_tail_cause(x);
}

std::string lost_tail_consequence(const LaunchExpectations& x) {
  return x.after_recording ? "the figures are the recorded work's, without theirs (`pil-trace check`)"
                           : "the missing work reads as GPU idle time, so idle and launch-bound figures come out too "
                             "high (`pil-trace check`)";
}

CheckReport check_trace(const TraceIndex& index, size_t examples) {
  const Trace& t = index.trace();
  CheckReport r;
  r.events = int64_t(t.events.size());
  r.gpu_work = int64_t(index.device_work().size());

  r.steps = int64_t(index.steps.size());
  Finder f{examples, {}, {}};

  // The clock: base, unit, the finest step written and what a double keeps at the largest time.
  ClockInfo& c = r.clock;
  c.base_time = t.base_time_ns != 0;
  c.base_time_ns = t.base_time_ns;
  for (const Event& e : t.events) c.max_abs_ns = std::max({c.max_abs_ns, std::abs(e.start_ns), std::abs(e.end_ns())});
  c.finest_ns = written_step_ns(t);
  c.absolute = !c.base_time && c.max_abs_ns > int64_t(100'000'000) * 1'000'000'000;  // past 1973
  if (c.max_abs_ns > 0) {
    const double max_us = double(c.max_abs_ns) / 1000.0;
    c.double_step_ns = std::ldexp(1.0, std::ilogb(max_us) - 52) * 1000.0;
  }
  CheckFinding& precision = f.add(
      "clock_precision",
      "times written finer than a double holds at this clock (Perfetto and Python tools round them)");
  if (c.finest_ns > 0 && c.double_step_ns > double(c.finest_ns))
    f.note(precision, "largest time", c.max_abs_ns,
           "written to " + std::to_string(c.finest_ns) + " ns, a double keeps " +
               fixed(c.double_step_ns, 1) + " ns steps there");
  check_gpu_clock(index, f);

  // Launch and GPU work by correlation. Work whose correlation id precedes every launch call's
  // was launched before recording began: not a fault of the trace (said apart).
  CheckFinding& no_launch = f.add("gpu_work_without_launch",
                                  "GPU work with no launch call (no runtime or driver call of its correlation)");
  CheckFinding& before = f.add("gpu_work_before_launch", "GPU work that starts before its launch call");
  std::vector<size_t> self_linked;  // GPU work whose External id is its correlation id
  for (size_t w : index.device_work()) {
    const Event& e = t.events[w];
    const long call = index.launch_of(w);
    if (links_to_itself(e)) self_linked.push_back(w);
    if (index.launched_before_recording(w)) {
      ++r.launched_before_recording;
    } else if (call < 0) {
      f.note(no_launch, e.name, e.start_ns, "correlation " + std::to_string(e.correlation));
    } else if (e.start_ns < t.events[size_t(call)].start_ns) {
      const Event& l = t.events[size_t(call)];
      f.note(before, e.name, e.start_ns,
             "starts " + us(l.start_ns - e.start_ns) + " before " + std::string(l.name) + " at " +
                 trace_ts(l.start_ns));
    }
  }
  // Self-linked work, but where an operator with that External id encloses the launch call on
  // its thread: the link is right, the operator's id and the correlation id only happen to be
  // equal (small ids: a 2021 trace's aten::cudnn_convolution, External id 883, and its kernel's
  // correlation 883).
  if (!self_linked.empty()) {
    std::unordered_map<uint64_t, std::vector<size_t>> ops;  // by External id, the candidates' only
    for (size_t w : self_linked) ops[t.events[w].external_id];
    for (size_t i = 0; i < t.events.size(); ++i)
      if (is_torch_scope(t.events[i].category))
        if (auto it = ops.find(t.events[i].external_id); it != ops.end()) it->second.push_back(i);
    for (size_t w : self_linked) {
      const long call = index.launch_of(w);
      bool named = false;
      if (call >= 0) {
        const Event& c = t.events[size_t(call)];
        for (size_t op : ops[t.events[w].external_id]) {
          const Event& o = t.events[op];
          named = named || (o.pid == c.pid && o.tid == c.tid && o.start_ns <= c.start_ns && c.end_ns() <= o.end_ns());
        }
      }
      r.self_linked += !named;
    }
  }
  // Launch calls that should have GPU work and have none (launch_expectations): the trailing run
  // of them is the GPU events stopping early.
  const LaunchExpectations x = launch_expectations(index);
  r.launch_calls = x.launch_calls;
  r.captured_launches = x.captured;
  r.short_copies_without_work = x.short_copies;
  const std::vector<size_t>& expecting = x.expecting;
  const size_t last_found = x.last_found, trailing_from = x.lost_from;
  CheckFinding& no_work = f.add("launch_without_gpu_work",
                                "launch calls with no GPU work (no kernel, copy or set of their correlation)");
  CheckFinding& stops = f.add(
      "gpu_events_stop_early",
      "GPU events stop early: from some time on, launches find no GPU work (run after recording stopped, or "
      "dropped: the first example says which is likelier)");
  for (size_t k = 0; k < expecting.size(); ++k) {
    const Event& l = t.events[expecting[k]];
    if (!index.work_of(expecting[k]).empty()) continue;
    if (k >= trailing_from)
      f.note(stops, l.name, l.start_ns,
             k == trailing_from
                 ? "the first launch after the last GPU work found, " + std::string(t.events[expecting[last_found]].name) +
                       " at " + trace_ts(t.events[expecting[last_found]].start_ns) +
                       "; " + lost_tail_cause(x)
                 : std::string());
    else
      f.note(no_work, l.name, l.start_ns, "correlation " + std::to_string(l.correlation));
  }

  // A run that used a device, traced without it: no GPU work and no CUDA call, yet memory events
  // on a device or operators that run on a GPU only (device_use_without_work).
  CheckFinding& unrecorded = f.add("gpu_side_not_recorded",
                                   "a run that used a device, traced without its work: no GPU work and no CUDA call, "
                                   "yet memory on the device, operators that run on a GPU only or a backward on "
                                   "autograd's thread for a device (record with the "
                                   "device's activity: ProfilerActivity.CUDA for an NVIDIA or AMD GPU); the figures "
                                   "are the CPU side's only");
  if (const DeviceUseWithoutWork use = device_use_without_work(index); use.found()) {
    if (!use.device.empty())
      f.note(unrecorded, "[memory]", t.events[use.first_memory].start_ns,
             "the first of " + counted(use.allocations + use.frees, "memory event") + " on " + use.device + "; " +
                 use.activity());
    if (!use.op.empty())
      f.note(unrecorded, use.op, t.events[use.first_op].start_ns,
             std::string(is_triton_kernel_range(use.op) ? "a Triton kernel's launch (torch.compile's GPU code): runs "
                                                                  "on a GPU only"
                                                                : "runs on a GPU only") +
                 "; called " + use.op_times());
    if (!use.autograd_thread.empty())
      f.note(unrecorded, t.events[use.first_autograd_op].name, t.events[use.first_autograd_op].start_ns,
             "the first of " + counted(use.autograd_ops, "operator") + " on autograd's thread for a device, " +
                 use.autograd_thread + " (a CPU backward runs on the calling thread)");
    // torch 1.x's autograd profiler has no activities: its GPU side is use_cuda's.
    if (t.autograd_profiler_slices > 0 && (!use.op.empty() || !use.device.empty())) {
      const Event& at = t.events[!use.op.empty() ? use.first_op : use.first_memory];
      f.note(unrecorded, at.name, at.start_ns,
             "the file is the autograd profiler's own format (torch 1.x's export_chrome_trace), which has no "
             "activities: it records each operator's GPU time with use_cuda=True (\"CUDA functions\" events, none "
             "here); torch.profiler with ProfilerActivity.CUDA records the kernels themselves");
    }
  }

  // Work on one stream that overlaps earlier work there: Perfetto draws one of them only.
  CheckFinding& overlap = f.add("stream_overlap",
                                "GPU work overlapping earlier work on its own stream (Perfetto hides one of them)");
  // Not counted there, each a line apart:
  // - programmatic dependent launch: work launched by an extended launch (cudaLaunchKernelExC,
  //   cuLaunchKernelEx: launch attributes, PDL among them) or by a graph's (whose edges may be
  //   programmatic), on a GPU that has PDL (compute capability 9.0 and later, or not given),
  //   starts before the work before it ends, by design: cuBLASLt's split-K reduce kernels on the
  //   H200 runs, vLLM's MoE kernels on a B200 (up to 3.7 us early);
  // - a graph's branches: two kernels of one graph launch side by side, on any GPU (the graph's
  //   nodes with no edge between them run at once; CUPTI puts them on the launch's stream).
  auto pdl_possible = [&](int64_t device) {
    const DeviceInfo* d = t.device_info(device);
    return !d || d->compute_capability() == 0 || d->compute_capability() >= 90;
  };
  auto dependent_launch = [&](size_t w) {
    const long call = index.launch_of(w);
    if (call < 0) return false;
    const std::string_view name = t.events[size_t(call)].name;
    return name.find("LaunchKernelEx") != std::string_view::npos || is_graph_launch(name);
  };
  auto same_graph = [&](size_t a, size_t b) {
    const long call = index.launch_of(a);
    return call >= 0 && call == index.launch_of(b) && index.work_of(size_t(call)).size() > 1;
  };
  for (const TraceIndex::Stream& s : index.streams()) {
    int64_t end = std::numeric_limits<int64_t>::min();
    size_t last = 0;
    const bool pdl = pdl_possible(s.device);
    for (size_t w : s.work) {
      const Event& e = t.events[w];
      if (e.start_ns < end && same_graph(w, last)) {
        ++r.graph_branch_overlaps;
      } else if (e.start_ns < end && pdl && dependent_launch(w)) {
        ++r.dependent_launch_overlaps;
        r.dependent_launch_max_ns = std::max(r.dependent_launch_max_ns, end - e.start_ns);
      } else if (e.start_ns < end) {
        f.note(overlap, e.name, e.start_ns,
               "device " + std::to_string(s.device) + " stream " + std::to_string(s.stream) +
                   ", " + us(end - e.start_ns) + " inside " + std::string(t.events[last].name));
      }
      if (e.end_ns() > end) end = e.end_ns(), last = w;
    }
  }

  // CPU slices per thread: a child that starts inside its parent must end inside it.
  CheckFinding& outlast = f.add("child_outlasts_parent",
                                "CPU slices that start inside another on their thread and end after it");
  {
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> threads;
    for (size_t i = 0; i < t.events.size(); ++i)
      if (is_cpu_slice(t.events[i].category) && !is_step(t.events[i]))  // steps: checked below
        threads[{t.events[i].pid, t.events[i].tid}].push_back(i);
    for (auto& [lane, idx] : threads) {
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        const Event &x = t.events[a], &y = t.events[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.dur_ns > y.dur_ns;
      });
      std::vector<size_t> open;
      for (size_t i : idx) {
        const Event& e = t.events[i];
        while (!open.empty() && t.events[open.back()].end_ns() <= e.start_ns) open.pop_back();
        if (!open.empty() && e.end_ns() > t.events[open.back()].end_ns()) {
          const Event& p = t.events[open.back()];
          f.note(outlast, e.name, e.start_ns,
                 "ends " + us(e.end_ns() - p.end_ns()) + " after its parent " + std::string(p.name) +
                     " at " + trace_ts(p.start_ns));
          continue;  // not a parent of what follows
        }
        open.push_back(i);
      }
    }
  }

  // Steps: numbers missing between the first and the last, repeated, or overlapping in time.
  CheckFinding& missing = f.add("steps_missing", "step numbers missing between the first and the last");
  CheckFinding& repeated = f.add("steps_repeated", "step numbers recorded more than once");
  CheckFinding& overlapping = f.add("steps_overlapping", "steps that start before the previous step ends");
  CheckFinding& empty_steps = f.add(
      "steps_empty",
      "steps with no operator, range or CUDA call inside them, while most such calls ran outside every step "
      "(the step ranges do not hold the work: per-step figures leave it out)");
  CheckFinding& processes = f.add(
      "steps_several_processes",
      "steps recorded by more than one process (several processes' traces merged into one file?)");
  {
    // One process records its steps (Kineto writes a file per process): steps under several
    // process ids are a merge (TraceLens's, or by hand), whose step numbers repeat and overlap.
    std::map<int64_t, std::vector<size_t>> by_process;
    for (size_t s : index.steps) by_process[t.events[s].pid].push_back(s);
    if (by_process.size() > 1)
      for (const auto& [pid, steps] : by_process) {
        const auto name = t.lane_names.find({pid, -1});
        f.note(processes, t.events[steps.front()].name, t.events[steps.front()].start_ns,
               "process " + std::to_string(pid) +
                   (name != t.lane_names.end() ? " (" + name->second + ")" : std::string()) + ": " +
                   counted(static_cast<long long>(steps.size()), "step"));
      }

    std::map<int64_t, std::vector<size_t>> by_number;
    for (size_t s : index.steps)
      if (const int64_t n = step_number(t.events[s].name); n >= 0) by_number[n].push_back(s);
    int64_t prev = 0;
    bool first = true;
    for (const auto& [n, steps] : by_number) {
      if (!first && n > prev + 1) {
        const Event& e = t.events[steps.front()];
        missing.count += n - prev - 1;
        missing.examples.push_back(
            {std::string(e.name), e.start_ns,
             n - prev - 1 == 1 ? "#" + std::to_string(prev + 1) + " missing before it"
                               : "#" + std::to_string(prev + 1) + " to #" + std::to_string(n - 1) +
                                     " missing before it"});
      }
      for (size_t k = 1; k < steps.size(); ++k)
        f.note(repeated, t.events[steps[k]].name, t.events[steps[k]].start_ns,
               "also at " + trace_ts(t.events[steps[0]].start_ns));
      prev = n;
      first = false;
    }
    // Steps that hold nothing while most of the program's calls ran outside every step: the step
    // ranges do not hold the work (a DDP trace's three 17 us steps, its all-reduces and operators
    // between them).
    if (const EmptySteps es = empty_steps_of(index); es.found())
      for (size_t s : es.empty)
        f.note(empty_steps, t.events[s].name, t.events[s].start_ns,
               us(t.events[s].dur_ns) + " long, no operator, range or CUDA call inside it; " +
                   std::to_string(es.outside) + " such calls ran outside every step");
    int64_t end = std::numeric_limits<int64_t>::min();
    size_t last = 0;
    for (size_t s : index.steps) {  // in time order
      const Event& e = t.events[s];
      if (e.start_ns < end)
        f.note(overlapping, e.name, e.start_ns,
               "starts " + us(end - e.start_ns) + " before " + std::string(t.events[last].name) + " ends");
      if (e.end_ns() > end) end = e.end_ns(), last = s;
    }
  }

  // The profiler's own work (CUPTI's overhead records): a line apart; a finding where a CUDA call
  // inside a step (no synchronize) spans one, or begins just after one on a thread that made no
  // call during it: its thread may have waited for the profiler, and the step's time may hold
  // it. A call is counted once, however many records it spans.
  CheckFinding& waited = f.add("profiler_overhead_in_step",
                               "CUDA calls inside a step that span the profiler's own work (a CUPTI overhead "
                               "record), or begin just after one on a thread that was inside an operator and made no CUDA "
                               "call during it: "
                               "their thread may have waited for the profiler, and the step's time may hold it");
  {
    std::map<size_t, std::vector<const ProfilerOverhead*>> by_call;
    const std::vector<ProfilerOverhead> overhead = profiler_overhead(index);
    r.profiler_overhead = int64_t(overhead.size());
    for (const ProfilerOverhead& o : overhead)
      // A call that began just after: where its thread was inside an operator or range then (a
      // side thread's poll, NCCL's watchdog's say, holds no operator: the summary names it).
      if (o.spanning_call != ProfilerOverhead::npos ? o.spanning_step >= 0
                                                    : o.resumed_step >= 0 && o.held_op != ProfilerOverhead::npos)
        by_call[o.waiting_call()].push_back(&o);
    for (const auto& [c, records] : by_call) {
      const Event& call = t.events[c];
      // Each record by its own role for this call: spanned by it, or ended just before it.
      std::string spans, after;
      long step = -1;
      for (const ProfilerOverhead* o : records) {
        const Event& e = t.events[o->event];
        if (o->spanning_call == c) {
          spans += (spans.empty() ? "" : ", ") + std::string(e.name) + " " + format_duration(e.dur_ns);
          step = o->spanning_step;
        } else {
          after += (after.empty() ? "" : ", ") + format_duration(call.start_ns - e.end_ns()) + " after " +
                   std::string(e.name) + " " + format_duration(e.dur_ns) + " ended";
          if (step < 0) step = o->resumed_step;
        }
      }
      std::string detail = format_duration(call.dur_ns) + " in " + std::string(t.events[index.steps[size_t(step)]].name);
      if (!spans.empty()) detail += ", spans " + spans;
      if (!after.empty()) {
        const ProfilerOverhead& held = **std::find_if(records.begin(), records.end(),
                                                      [call_index = c](const ProfilerOverhead* o) {
                                                        return o->spanning_call != call_index;
                                                      });
        detail += ", began " + after + ", its thread inside " + std::string(t.events[held.held_op].name) +
                  " with no CUDA call during it";
      }
      f.note(waited, call.name, call.start_ns, detail);
    }
  }

  // What the profiler logged as it recorded (the trace's ERROR, WARNING and INFO lists): that GPU
  // events are missing, a finding; any other error or warning, a finding to read (pil-trace does
  // not judge it); its record counts, and its finding no GPU in a CPU run's trace, lines apart.
  r.profiler_counts = profiler_counts(t.profiler_log.record_counts);
  r.cuda_sync_events = t.cuda_sync_events;
  r.cuda_side_only = cuda_side_only(index);
  CheckFinding& lost = f.add("profiler_gpu_incomplete",
                             "the profiler logged that GPU events are missing from the trace (CUPTI not "
                             "initialised or not permitted, records dropped, its GPU buffer full and recording "
                             "stopped early): the missing work reads as GPU idle time, so idle and launch-bound "
                             "figures come out too high");
  const ProfilerMessages said = profiler_messages(t, !index.device_work().empty());
  for (const std::string& m : said.gpu_loss) f.note(lost, m, 0);
  CheckFinding& logged = f.add("profiler_logged",
                               "errors and warnings the profiler logged while recording (the trace's ERROR and "
                               "WARNING lists), not judged here: read them");
  const bool cpu_run = index.device_work().empty() && index.api_calls().empty();
  for (const std::string& m : said.other) {
    if (cpu_run && m.find("gpuGetDeviceCount failed") != std::string::npos) {
      if (r.no_gpu_logged.empty()) r.no_gpu_logged = m;
      continue;
    }
    f.note(logged, m, 0);
  }

  // Arguments the reader skipped as unusable (read as absent).
  CheckFinding& skipped = f.add("skipped_fields",
                                "events with an argument of an unexpected type, read as absent");
  if (t.skipped.any()) {
    skipped.count = t.skipped.events;
    for (size_t k = 0; k < SkippedFields::kKinds; ++k)
      if (t.skipped.count[k])
        skipped.examples.push_back({std::string("'") + SkippedFields::kNames[k] + "'", 0,
                                    std::to_string(t.skipped.count[k]) + " skipped"});
  }
  f.finish();
  r.findings = std::move(f.kept);
  return r;
}

bool untimed_finding(const std::string& key) {
  return key == "skipped_fields" || key == "profiler_gpu_incomplete" || key == "profiler_logged";
}

std::string format_check(const CheckReport& r, const std::string& path) {
  std::ostringstream o;
  const ClockInfo& c = r.clock;
  o << path << ": " << counted(r.events, "event") << ", " << counted(r.gpu_work, "GPU work item") << ", "
    << counted(r.launch_calls, "launch call") << ", " << counted(r.steps, "step") << "\n";
  o << "clock: microseconds, "
    << (c.base_time ? "relative to baseTimeNanoseconds " + std::to_string(c.base_time_ns)
                    : c.absolute ? std::string("absolute epoch time (no baseTimeNanoseconds)")
                                 : std::string("relative (no baseTimeNanoseconds)"))
    << "; written to " << c.finest_ns << " ns; a double (Perfetto, Python) keeps "
    << std::setprecision(3) << c.double_step_ns << " ns steps at the largest time, " << trace_ts(c.max_abs_ns)
    << " us; pil-trace keeps every written digit\n";
  // What looks like a fault and is not: a line each, where the trace has any.
  auto apart = [&](const char* label, int64_t count, const char* what) {
    if (count > 0) o << label << ": " << grouped(count) << " " << what << "; not counted below\n";
  };
  apart("capture", r.captured_launches,
        "launch calls inside a stream capture (StreamBeginCapture to StreamEndCapture on their "
        "thread): recorded into a graph, they run nothing then (the graph's launches do)");
  apart("sizes", r.short_copies_without_work,
        "copy or set calls of 1 us or less found no GPU work: most likely of zero bytes, which "
        "start none (the trace does not give a call's size)");
  if (r.dependent_launch_overlaps > 0)
    o << "pdl: " << counted(r.dependent_launch_overlaps, "GPU work item") << " start up to "
      << format_duration(r.dependent_launch_max_ns)
      << " before the work before them on their stream ends, each launched by an extended launch "
         "(cudaLaunchKernelExC, cuLaunchKernelEx) or a graph's on a GPU with programmatic dependent launch "
         "(compute capability 9.0 and later, or not given), which starts a kernel early by design; Perfetto "
         "draws one of each pair, busy time is the union; not counted below\n";
  if (r.graph_branch_overlaps > 0)
    o << "graph: " << counted(r.graph_branch_overlaps, "kernel")
      << " of a graph launch run beside another of the same launch on its stream: the graph's branches "
         "with no edge between them run at once by design; Perfetto draws one of each pair, busy time is "
         "the union; not counted below\n";
  if (r.profiler_overhead > 0)
    o << "profiler: " << counted(r.profiler_overhead, "CUPTI overhead record")
      << " (Activity Buffer Request...): the profiler's own work, on a lane of its own (`pil-trace summary` "
         "says where, and which thread may have waited for one)\n";
  apart("before", r.launched_before_recording,
        "GPU work items have no launch call and correlation ids before every launch call's: "
        "launched before recording began (earlier work still running when it began: an earlier step's, or in "
        "a slice, work launched before its span)");
  if (const ProfilerCounts& k = r.profiler_counts; k.read) {
    std::string wrong;
    auto add = [&](int64_t n, const char* noun, const char* rest) {
      if (n > 0) wrong += ", " + counted(n, noun) + " " + rest;
    };
    add(k.invalid_correlations, "link", "to an operator it could not use (invalid external correlations: that GPU "
                                        "work may have no operator)");
    add(k.out_of_order, "GPU work item", "out of order (starting before the runtime call that launched it)");
    add(k.unexpected, "record", "of a kind it did not know");
    // A count the line does not give is said so, not taken for 0.
    auto count = [](int64_t n, const char* noun) { return n >= 0 ? counted(n, noun) : std::string("? ") + noun + "s"; };
    o << "kineto: its record counts (the trace's INFO log): " << count(k.out_of_range, "record")
      << " outside the recording window and " << count(k.blocklisted, "runtime call")
      << " on its blocklist (cudaGetDevice and the like) left out, as it does" << wrong
      << (k.stopped_early > 0    ? "; its GPU side stopped early (a finding below)"
          : k.stopped_early == 0 ? "; not stopped early"
                                 : "; whether it stopped early not given");
    // Launches with no GPU work beside records Kineto dropped as out of range: the work may be
    // those (a ROCm run whose kernels' clock ran 26 s ahead had every kernel dropped so).
    const bool unmatched = std::any_of(r.findings.begin(), r.findings.end(), [](const CheckFinding& f) {
      return f.key == "launch_without_gpu_work" || f.key == "gpu_events_stop_early";
    });
    if (unmatched && k.out_of_range > 0)
      o << "; the launches with no GPU work below may be those out-of-range records' (work Kineto "
           "dropped as outside the window: a GPU clock out of step with the CPU's, or work that ran after "
           "recording stopped)";
    o << "\n";
  }
  if (r.cuda_sync_events > 0)
    o << "sync: " << counted(r.cuda_sync_events, "CUDA synchronization record")
      << " (Kineto's cuda_sync, with enable_cuda_sync_events: Stream Wait Event, Event Sync, Stream Sync, Context "
         "Sync on the GPU's lanes), not read: the CPU's synchronize calls say when the host waited; which stream "
         "waited for which is not used here\n";
  if (r.cuda_side_only)
    o << "no CPU side: CUDA calls and GPU work only, no operator or range (recorded without the profiler's CPU "
         "activity: ProfilerActivity.CPU); the host's time is its CUDA calls' alone, what it did between them is "
         "not in the trace; not a finding\n";
  if (!r.no_gpu_logged.empty())
    o << "no GPU: the profiler logged \"" << r.no_gpu_logged
      << "\", and the trace has no GPU work or CUDA call: a CPU run's trace on a machine without a usable GPU; "
         "not counted below\n";
  // Without operators (no CPU activity) all work is launched outside any operator: whatever the
  // torch, so the versions are not said (a torch 2.4 trace of CUDA calls alone was dated 2022-2024).
  if (r.self_linked > 0 && r.cuda_side_only)
    o << "links: " << grouped(r.self_linked) << " of " << grouped(r.gpu_work)
      << " GPU work items carry their own correlation id as External id: with no operator in the trace "
         "(no CPU activity), there is none to give them to; not a finding\n";
  else if (r.self_linked > 0)
    o << "links: " << grouped(r.self_linked) << " of " << grouped(r.gpu_work)
      << " GPU work items carry their own correlation id as External id, not their operator's "
      // Which torch wrote it is a guess: a trace of 2025 came from torch 2.1 in an NGC 23.10
      // container, and one of 223 of 224 self-linked items had every launch inside an operator
      // (its one other item's External id an operator's by chance). Both ways said.
      << "(torch 2.0-2.2's Kineto wrote all GPU work so, 2.3-2.5's work launched outside any operator)"
      << "; pil-trace gives each to the operator around its launch call, a script that joins on "
         "External id gives it to no operator or to an unrelated one\n";
  if (r.clean()) {
    o << "no findings\n";
    return o.str();
  }
  o << r.findings.size() << " finding(s):\n";
  for (const CheckFinding& f : r.findings) {
    o << "  " << f.title << ": " << grouped(f.count) << "\n";
    for (const CheckExample& e : f.examples) {
      o << "    " << e.name;
      if (e.ts_ns || !untimed_finding(f.key)) o << " at ts " << trace_ts(e.ts_ns);
      if (!e.detail.empty()) o << " (" << e.detail << ")";
      o << "\n";
    }
  }
  return o.str();
}

}  // namespace pil::trace
