#include "trace/reports.h"
#include "trace/check.h"

#include "trace/report_helpers.h"
#include "trace/first_by_id.h"
#include "trace/intervals.h"
#include "trace/name_ids.h"
#include "trace/nesting.h"
#include "trace/profiler_log.h"
#include "trace/text_table.h"
#include <algorithm>
#include <array>
#include <unordered_set>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <future>
#include <iterator>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <system_error>
#include <tuple>
#include <unordered_map>

// What a trace says in words (explain): its steps, named ranges, the GPU's share and idle time,
// the launches, the profiler's own work.

namespace pil::trace {
using namespace report_helpers;


std::vector<const KeyAverage*> named_range_rows(const TraceIndex& index) {
  std::unordered_map<std::string_view, bool> names;
  for (size_t i : index.named_ranges()) names.emplace(index.trace().events[i].name, true);
  std::vector<const KeyAverage*> ranges;
  for (const auto& r : index.key_averages().rows)
    if (!r.device_work && names.count(r.name)) ranges.push_back(&r);
  std::sort(ranges.begin(), ranges.end(),
            [](const KeyAverage* a, const KeyAverage* b) { return a->cpu_total_ns > b->cpu_total_ns; });
  return ranges;
}

RangeTimes named_range_times(const TraceIndex& index, const std::vector<const KeyAverage*>& ranges) {
  const Trace& t = index.trace();
  RangeTimes out;
  if (ranges.empty()) return out;
  using Lane = std::pair<int64_t, int64_t>;
  // Each thread's launch calls in start order, with the running sum of their work's time.
  struct Calls {
    std::vector<int64_t> start, before;  // before[k]: the work time of calls 0..k-1
  };
  std::map<Lane, std::vector<size_t>> by_lane;
  for (size_t c : index.launch_calls()) by_lane[{t.events[c].pid, t.events[c].tid}].push_back(c);
  std::map<Lane, Calls> calls;
  for (auto& [lane, list] : by_lane) {
    const auto earlier = [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; };
    if (!std::is_sorted(list.begin(), list.end(), earlier)) std::stable_sort(list.begin(), list.end(), earlier);
    Calls& k = calls[lane];
    k.before.push_back(0);
    for (size_t c : list) {
      int64_t work = 0;
      for (size_t w : index.work_of(c)) work += t.events[w].dur_ns;
      k.start.push_back(t.events[c].start_ns);
      k.before.push_back(k.before.back() + work);
    }
  }
  // The ranges asked for, each thread's in start order, so that each name's spans on a thread
  // are taken as their union: a span inside another of its name adds nothing, one that overlaps
  // the last adds its part after it.
  std::unordered_map<std::string_view, size_t> row;
  for (size_t k = 0; k < ranges.size(); ++k) row.emplace(ranges[k]->name, k);
  std::vector<size_t> spans;
  for (size_t i : index.named_ranges())
    if (row.count(t.events[i].name)) spans.push_back(i);
  std::stable_sort(spans.begin(), spans.end(), [&](size_t a, size_t b) {
    const Event &x = t.events[a], &y = t.events[b];
    return std::tie(x.pid, x.tid, x.start_ns) < std::tie(y.pid, y.tid, y.start_ns);
  });
  out.span_ns.assign(ranges.size(), 0);
  out.launched_ns.assign(ranges.size(), 0);
  out.elsewhere_ns.assign(ranges.size(), 0);
  out.threads.assign(ranges.size(), 0);
  std::set<std::pair<Lane, size_t>> on_thread;  // (lane, range) pairs with time counted
  // The calls that started in [from, to) on a thread: a call at a span's end is the next one's.
  auto launched_in = [](const Calls& c, int64_t from, int64_t to) {
    const size_t lo = size_t(std::lower_bound(c.start.begin(), c.start.end(), from) - c.start.begin());
    const size_t hi = size_t(std::lower_bound(c.start.begin(), c.start.end(), to) - c.start.begin());
    return c.before[hi] - c.before[lo];
  };
  // Per step: only what lies inside the steps counts (a range called after the last step,
  // Gloo's all-reduces on a CPU rank, would make a range longer per step than its step).
  std::vector<Interval> steps;
  for (size_t st : index.steps) steps.push_back({t.events[st].start_ns, t.events[st].end_ns()});
  merge(steps);
  std::map<std::pair<Lane, std::string_view>, int64_t> counted_to;  // the union's end so far
  for (size_t i : spans) {
    const Event& e = t.events[i];
    const Lane lane{e.pid, e.tid};
    const auto at = counted_to.try_emplace({lane, e.name}, e.start_ns).first;
    const int64_t from = std::max(e.start_ns, at->second), to = e.end_ns();
    if (to <= from) continue;  // inside the union already (or empty)
    at->second = to;
    const size_t k = row.at(e.name);
    const std::vector<Interval> pieces = steps.empty() ? std::vector<Interval>{{from, to}} : clip(steps, from, to);
    for (const Interval& piece : pieces) {
      if (on_thread.insert({lane, k}).second) ++out.threads[k];
      out.span_ns[k] += piece.to - piece.from;
      for (const auto& [other, c] : calls) {
        if (other == lane) out.launched_ns[k] += launched_in(c, piece.from, piece.to);
        else if (other.first == lane.first) out.elsewhere_ns[k] += launched_in(c, piece.from, piece.to);
      }
    }
  }
  return out;
}

size_t calls_starting_gpu_work(const TraceIndex& index) {
  size_t n = 0;
  for (size_t c : index.api_calls()) n += starts_gpu_work(index.trace().events[c].name);
  return n;
}

size_t step_processes(const TraceIndex& index) {
  std::set<int64_t> pids;
  for (size_t s : index.steps) pids.insert(index.trace().events[s].pid);
  return pids.size();
}

// --- Explain ---------------------------------------------------------------------------------

namespace {

/// The GPU's idle stretches (every stream idle) that end at GPU work: the longest, and those
/// over kLongIdleNs; the idle after the last work apart (no launch ends it: the host went on
/// without the GPU).
struct IdleStretches {
  int64_t longest_ns = 0;
  int64_t long_ns = 0;  ///< over kLongIdleNs, added up
  int64_t long_count = 0;
  int64_t after_last_ns = 0;  ///< from the last work's end to the window's end
  /// Of the longest, the part after the launch call of the work that ended it returned, where
  /// that work waited (waited_after_return: on another stream's event, or work the trace does
  /// not show), not on the host; 0 where it did not.
  int64_t longest_waited_ns = 0;
  /// The idle time inside stream captures (check's stream_captures), whose launches run nothing.
  int64_t captured_ns = 0;
};

IdleStretches idle_stretches(const TraceIndex& index) {
  const Trace& t = index.trace();
  // Busy spans, each with the work item that began it (the earliest-starting); work of no length
  // holds no time (as merge() drops it).
  std::vector<std::pair<Interval, size_t>> items;
  items.reserve(index.device_work().size());
  for (size_t i : index.device_work())
    if (t.events[i].dur_ns > 0) items.push_back({{t.events[i].start_ns, t.events[i].end_ns()}, i});
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first.from < b.first.from; });
  const StreamCaptures captures = stream_captures(index);
  IdleStretches s;
  int64_t reached = index.gpu_window_start;
  for (size_t k = 0; k < items.size();) {
    const Interval first = items[k].first;
    const size_t starter = items[k].second;
    int64_t to = first.to;
    for (++k; k < items.size() && items[k].first.from <= to; ++k) to = std::max(to, items[k].first.to);
    const int64_t gap = std::min(first.from, index.gpu_window_end) - reached;
    const long call = index.launch_of(starter);
    if (gap > 0 && call >= 0 && !captures.empty()) {
      // The part inside a capture of the thread whose launch ended it: that launch waited for
      // the capture's end (its launches run nothing).
      const Event& c = t.events[size_t(call)];
      if (const auto it = captures.find({c.pid, c.tid}); it != captures.end())
        s.captured_ns += length(clip(it->second, reached, reached + gap));
    }
    if (gap > s.longest_ns) {
      s.longest_ns = gap;
      s.longest_waited_ns = 0;
      // Work that waited after its launch returned, on an idle stream: the launch's first item
      // (a graph's later nodes wait on the earlier ones), not queued (launches' own "waited").
      if (call >= 0 && index.work_of(size_t(call)).front() == starter) {
        const int64_t returned = t.events[size_t(call)].end_ns();
        if (index.stream_free_before(starter) <= returned && waited_after_return(first.from - returned))
          s.longest_waited_ns = first.from - std::max(reached, returned);
      }
    }
    if (gap > kLongIdleNs) s.long_ns += gap, ++s.long_count;
    reached = std::max(reached, to);
  }
  s.after_last_ns = std::max<int64_t>(index.gpu_window_end - reached, 0);
  return s;
}

}  // namespace

Summary summarize(const TraceIndex& index, IdleRule idle_rule) {
  const Trace& t = index.trace();
  Summary m;
  // On a GPU trace (any GPU work: kernels, or copies and sets alone, as a data-loading
  // benchmark's) the stream report runs beside the others when the index has threads (the
  // operator table may already be on its own).
  const bool gpu = !index.device_work().empty();
  std::future<StreamReport> streams;
  if (gpu) streams = beside(index.threads() > 1, [&] { return stream_report(index, 30'000, idle_rule); });
  for (size_t s : index.steps) m.step_ns.push_back(t.events[s].dur_ns);
  m.steps = DurationStats::of(m.step_ns);
  m.step_processes = step_processes(index);
  m.overhead = profiler_overhead(index);
  m.cuda_overhead = cuda_overhead(index);
  if (gpu) {
    m.kernels = kernel_report(index);
    m.launches = launch_report(index, LaunchDetail::Totals);
    m.clock_offset = gpu_clock_offset(index);
    m.syncs = sync_report(index);
  }
  const KeyAverages& ka = index.key_averages();
  for (const auto& r : ka.rows)
    if (!r.device_work && !is_step_row(r.name)) m.top_ops.push_back(&r);
  std::sort(m.top_ops.begin(), m.top_ops.end(),
            [](const KeyAverage* a, const KeyAverage* b) { return a->self_cpu_ns > b->self_cpu_ns; });
  if (m.top_ops.size() > 3) m.top_ops.resize(3);
  m.ranges = named_range_rows(index);
  m.range_times = named_range_times(index, m.ranges);
  {  // most time first
    std::vector<size_t> order(m.ranges.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return m.range_times.span_ns[a] > m.range_times.span_ns[b]; });
    std::vector<const KeyAverage*> ranges;
    RangeTimes times;
    for (size_t k : order) {
      ranges.push_back(m.ranges[k]);
      times.span_ns.push_back(m.range_times.span_ns[k]);
      times.launched_ns.push_back(m.range_times.launched_ns[k]);
      times.elsewhere_ns.push_back(m.range_times.elsewhere_ns[k]);
      times.threads.push_back(m.range_times.threads[k]);
    }
    m.ranges = std::move(ranges);
    m.range_times = std::move(times);
  }
  m.per = std::max<int64_t>(1, int64_t(index.steps.size()));
  m.gpu = gpu;
  if (!gpu) return m;
  m.streams = streams.get();
  if (!m.streams.steps.empty()) {
    std::vector<int64_t> k;
    for (const auto& s : m.streams.steps) k.push_back(s.launched_work_items);
    m.work_items_per_step = int64_t(DurationStats::of(k).median);
  }
  return m;
}

namespace {

/// The longest operator call inside `step` (its process's, any thread), and the durations of
/// the trace's other calls of the same name; {nullptr, {}} where the step holds none.
std::pair<const Event*, std::vector<int64_t>> longest_call_in(const Trace& t, const Event& step) {
  const Event* longest = nullptr;
  for (const Event& e : t.events)
    if (e.category == Category::CpuOp && e.pid == step.pid && e.start_ns >= step.start_ns &&
        e.end_ns() <= step.end_ns() && (!longest || e.dur_ns > longest->dur_ns))
      longest = &e;
  std::vector<int64_t> others;
  if (longest)
    for (const Event& e : t.events)
      if (&e != longest && e.category == Category::CpuOp && e.name == longest->name) others.push_back(e.dur_ns);
  return {longest, others};
}

}  // namespace

std::string explain(const TraceIndex& index, IdleRule idle_rule) {
  const Trace& t = index.trace();
  const Summary m = summarize(index, idle_rule);
  std::string out = "what this trace says:\n";
  auto line = [&](const std::string& s) { out += "  - " + s + "\n"; };
  // First: the profiler itself said GPU events are missing (its log in the trace).
  if (const auto lost = profiler_messages(t, !index.device_work().empty()).gpu_loss; !lost.empty())
    line(gpu_loss_said(lost) +
         ": the missing work reads as GPU idle time below, so idle and launch-bound figures come out too high "
         "(`pil-trace check` lists what it logged)");

  // Or the trace shows it: the last launches found no GPU work (check's gpu_events_stop_early).
  if (!index.device_work().empty())
    if (const LaunchExpectations x = launch_expectations(index); x.stops_early())
      line(lost_tail_said(x) + ": " + lost_tail_consequence(x));

  if (!m.step_ns.empty()) {
    const auto& d = m.step_ns;
    const auto& st = m.steps;
    std::string s = std::to_string(d.size()) + (d.size() == 1 ? " profiled step, " : " profiled steps, median ") +
                    format_duration(int64_t(st.median)) + " on the CPU";
    // The first against the median of at least three: with two, the median is their mean, the
    // first half of it (advise's first_step asks as many).
    if (d.size() >= 3 && double(d.front()) > 1.5 * st.median) {
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.1fx", double(d.front()) / st.median);
      s += "; the first took " + format_duration(d.front()) + ", " + ratio +
           " the median (one-time costs: warm-up hides them, it does not remove them)";
    }
    // A later step far longer than the rest: a pause outside the step's usual work, which the
    // per-step figures below (totals over the steps) carry as much as the work (a CPU trace's
    // second step took 8.5x the median, and its range "per step" was 3.5x the median step). Not
    // with GPU work: a step that waits for the queued GPU (the last, synchronizing) is longer by
    // design, and the synchronize lines below say so.
    if (d.size() >= 3 && !m.gpu) {
      const auto slowest = std::max_element(d.begin() + 1, d.end());
      if (double(*slowest) > 2 * st.median) {
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "%.1fx", double(*slowest) / st.median);
        const Event& step = t.events[index.steps[size_t(slowest - d.begin())]];
        s += "; " + std::string(step.name) + " took " + format_duration(*slowest) + ", " + ratio + " the median (";
        // One operator call that holds most of the excess is where it went, not a pause (a
        // Python trace's failing aten::mm, 14.3 ms of a 14.9 ms step, raising its exception).
        const auto [longest, others] = longest_call_in(t, step);
        const int64_t excess = *slowest - int64_t(st.median);
        if (longest && 2 * longest->dur_ns >= excess &&
            (others.empty() || longest->dur_ns > 10 * DurationStats::of(others).median))
          s += "most of it in one " + std::string(longest->name) + " call of " + format_duration(longest->dur_ns) +
               (others.empty() ? std::string(", its only call in the trace")
                               : ", whose other calls took a median " +
                                     format_duration(int64_t(DurationStats::of(others).median))) +
               "; the per-step figures below are totals over the steps, so they hold it too)";
        else
          s += "a pause the others did not have: another process, I/O, a wait; the per-step figures below are "
               "totals over the steps, so they hold it too)";
      }
    }
    if (index.cut_short_step >= 0) {
      const Event& stub = t.events[size_t(index.cut_short_step)];
      s += "; besides " + std::string(stub.name) + " (" + format_duration(stub.dur_ns) +
           ", nothing in it), left out: the profiler's stop cut it short";
    }
    if (m.step_processes > 1)
      s += "; recorded by " + std::to_string(m.step_processes) +
           " processes (several processes' traces merged into one file? the per-step figures mix them: "
           "`pil-trace check`)";
    line(s);
  }
  if (cuda_side_only(index)) {
    line(index.api_calls().empty()
             ? "no operator, range or CUDA call in this trace, only GPU work: the host's side was not recorded"
             : "no operator or range in this trace, only CUDA calls and GPU work (recorded without the profiler's "
               "CPU activity, ProfilerActivity.CPU): the CPU time below is the CUDA calls' alone, and what the host "
               "did between them is not in the trace");
    // The profiler's own span says when recording began: long before the first CUDA call, the
    // host did what the trace cannot show (a public RTX A4000 trace: 3.12 s in its DataLoader
    // before the first call, read as a window of 117 ms "the GPU busy 82%").
    int64_t began = index.window_start;
    std::string_view span;
    for (const Event& e : t.events)
      if (is_profiler_span(e) && e.start_ns < began) began = e.start_ns, span = e.name;
    if (const int64_t lead = index.window_start - began; lead > kLongIdleNs && lead > (index.window_end - index.window_start) / 10)
      line("recording began " + format_duration(lead) + " before the first event (the profiler's span, " +
           std::string(span) + "): what the host did then is not in the trace, and the figures below cover the " +
           format_duration(index.window_end - index.window_start) + " after it only");
  }
  if (!m.overhead.empty()) line(profiler_overhead_text(index, m.overhead));
  if (!m.cuda_overhead.empty()) line(cuda_overhead_text(index, m.cuda_overhead));
  const KeyAverages& ka = index.key_averages();
  if (!m.top_ops.empty()) {
    std::string s = "most self CPU time:";
    for (size_t i = 0; i < m.top_ops.size(); ++i)
      s += std::string(i ? "," : "") + " " + m.top_ops[i]->name + " " +
           pct(ka.self_cpu_total_ns ? double(m.top_ops[i]->self_cpu_ns) / double(ka.self_cpu_total_ns) : 0);
    line(s);
  }
  // Named ranges (the lessons' parts: attn, mlp, ...), most CPU time first, per step.
  if (!m.ranges.empty()) {
    // A total over the steps divided by their count: a mean, which a slow first step pulls above
    // the steps line's median (01 in bf16: matmul_add 109 us beside a median step of 43.3 us).
    std::string s = std::string("named ranges, ") + (index.steps.empty() ? "time in the trace" : "mean time per step") +
                    " (CPU" + (m.gpu ? " / GPU time of the work launched inside, its items added" : "") + "):";
    for (size_t i = 0; i < std::min<size_t>(6, m.ranges.size()); ++i) {
      // A name with a space in backquotes: "Add & Norm 1 120 us" read as 1,120 us.
      const std::string_view name = m.ranges[i]->name;
      const bool spaced = name.find(' ') != std::string_view::npos;
      s += std::string(i ? "," : "") + " " + (spaced ? "`" : "") + std::string(name) + (spaced ? "`" : "") + " " +
           format_duration(m.range_times.span_ns[i] / m.per);
      // On several threads each thread's time is added: it can pass the step's wall time.
      if (m.range_times.threads[i] > 1) s += " (" + std::to_string(m.range_times.threads[i]) + " threads, added)";
      if (m.gpu) s += " / " + format_duration(m.range_times.launched_ns[i] / m.per);
      // Where other threads launched more meanwhile than the range itself (autograd's thread in
      // a backward range: a B200 trace's backward launched 1.5 us itself, 396 us elsewhere).
      if (m.gpu && m.range_times.elsewhere_ns[i] > m.range_times.launched_ns[i])
        s += " (other threads launched " + format_duration(m.range_times.elsewhere_ns[i] / m.per) + " meanwhile)";
    }
    line(s);
  }
  for (const MemoryRow& r : index.memory()) {
    std::string where;
    if (!r.peak_range.empty()) where += " in `" + r.peak_range + "`";
    if (!r.peak_op.empty()) where += (where.empty() ? " in " : ", ") + r.peak_op;
    line(memory_name(r) + ": peak " +
         format_bytes(r.peak_growth) + " above what was held when recording began" + where +
         (r.peak_total >= 0 ? " (allocator total then " + format_bytes(r.peak_total) + ")" : "") +
         "; " + count_of(r.allocations, "allocation", "allocations") + ", " + format_bytes(r.allocated_bytes) +
         " in all");
  }
  if (index.device_work().empty()) {
    // CUDA calls without any GPU work recorded: where some would have started GPU work, the
    // GPU's side is missing, not absent.
    const size_t calls = index.api_calls().size();
    const size_t starting = calls_starting_gpu_work(index);
    const std::string made = counted(int64_t(calls), "CUDA runtime or driver call");
    std::string other_device;  // the events of a device pil-trace does not model
    for (const auto& [kind, n] : Trace::unread_device_events(t.unread))
      other_device += std::string(other_device.empty() ? "" : ", ") + kind + " " + grouped(n);
    if (const auto legacy = t.unread.find(Trace::kUnreadLegacyCuda); calls == 0 && legacy != t.unread.end())
      line("no GPU work pil-trace reads: the trace's GPU side is the autograd profiler's GPU time of each "
           "operator (" + grouped(legacy->second) + " \"CUDA functions\" events, torch 1.7 and before), not "
           "kernels on streams, so the figures here are the CPU side's only");
    else if (calls == 0 && !other_device.empty())
      line("no GPU work pil-trace reads: the trace's device work is of a kind it does not model (" +
           other_device + " events), so the figures here are the CPU side's only");
    else if (calls == 0 && t.autograd_profiler_slices > 0)
      line("no GPU work in this trace: the autograd profiler's own format (EventList's export, its slices in "
           "\"CPU functions\") holds a run's GPU side only as each operator's GPU time, recorded with use_cuda=True "
           "(\"CUDA functions\" events, none here), so the table's CPU columns are all it tells");
    else if (const DeviceUseWithoutWork use = device_use_without_work(index); calls == 0 && use.found())
      line("no GPU work in this trace, though the run used " + (use.device.empty() ? "a GPU" : use.device) +
           " (" + use.evidence() + "): the profiler recorded the CPU's side only (" + use.activity() +
           "; `pil-trace check`), so the table's CPU columns are all it can tell");
    else if (calls == 0 && !t.devices.empty() && !t.devices.front().name.empty())
      // Kineto lists the machine's GPUs whatever the profiler recorded: the run may have used one.
      line("no GPU work in this trace (a CPU run, on a machine with " +
           (t.devices.size() == 1 ? "a GPU, " + t.devices.front().name
                                  : std::to_string(t.devices.size()) + " GPUs, the first " + t.devices.front().name) +
           ": if the program used it, the profiler did not record its work): the table's CPU columns are all it "
           "tells");
    else if (calls == 0)
      line("no GPU work in this trace (a CPU run): the table's CPU columns are the whole story");
    else if (const auto ranges = t.unread.find(Trace::kUnreadCuptiRange); ranges != t.unread.end())
      line("no GPU work pil-trace reads: the trace was recorded with CUPTI's range profiler (" +
           grouped(ranges->second) + " cuda_profiler_range events, a kernel's counter metrics each, not its time "
           "on a stream), which keeps no kernel timeline; " + std::to_string(starting) + " of the CPU's " + made +
           (starting == 1 ? " starts" : " start") + " GPU work, so the table's CPU columns are all it can tell");
    else if (starting == 0)
      line("no GPU work recorded, and no call that starts any: the CPU's " + made +
           (calls == 1 ? " only synchronizes or queries (any work it waited for" : " only synchronize or query (any work they waited for") +
           " was launched before recording began); the table's CPU columns are the whole story");
    else
      line("no GPU work recorded, though " + std::to_string(starting) + " of the CPU's " + made +
           (starting == 1 ? " starts" : " start") + " GPU work (launches, copies, sets): the trace has the CPU's side only (the "
           "profiler's GPU activity off or lost, or the work launched before recording began; "
           "`pil-trace check`), so the table's CPU columns are all it can tell");
    return out;
  }
  if (m.kernels.empty()) {
    size_t copies = 0;
    for (size_t w : index.device_work()) copies += t.events[w].category == Category::Memcpy;
    const size_t sets = index.device_work().size() - copies;
    line("no kernel in this trace: its GPU work is " +
         (copies ? std::to_string(copies) + (copies == 1 ? " copy" : " copies") : std::string()) +
         (copies && sets ? " and " : "") +
         (sets ? std::to_string(sets) + (sets == 1 ? " set" : " sets") : std::string()) +
         " (`pil-trace streams` shows them per stream, `launches` each launch)");
  } else {
    const KernelRow& top = m.kernels.front();
    // Its spread: the same kernel can take different times (clocks, power, other work on the
    // GPU); a mean pulled up by one slow call says less than the median and the range.
    const std::string low = format_duration(top.time.min), high = format_duration(top.time.max);
    line("top kernel: " + top.name.substr(0, 80) + " — " + pct(top.share) + " of kernel time, " +
         counted(top.time.count, "call") + ", median " + format_duration(int64_t(top.time.median)) +
         (low != high ? " (" + low + " to " + high + ")" : std::string()));
  }
  if (m.work_items_per_step)
    line(count_of(*m.work_items_per_step, "GPU work item", "GPU work items") + " launched per step (median over steps)");
  const StreamReport& sr = m.streams;
  const StreamReport::Totals tot = sr.totals();
  const int64_t host = tot.host_wait_ns, kwait = tot.kernel_wait_ns, other = tot.other_idle_ns;
  const int64_t window = sr.window_ns();
  std::set<int64_t> gpus;
  for (const StreamRow& row : sr.streams) gpus.insert(row.device);
  const bool devices = gpus.size() > 1;
  // Several GPUs: "busy" is any stream of any of them (each stream's own share follows).
  std::string busy_line = "GPU busy " + pct(sr.busy_share()) + " of the window (any stream" +
                          (devices ? " of " + std::to_string(gpus.size()) + " GPUs, as one" : std::string()) +
                          "; the window " + format_duration(window) +
                          (index.steps.empty() ? ", the whole trace" : ", the steps and every GPU work item") +
                          ") on " +
                          count_of(int64_t(sr.streams.size()), "stream", "streams");
  if (sr.streams.size() > 1) {
    busy_line += ": ";
    for (size_t k = 0; k < sr.streams.size(); ++k) {
      const StreamRow& row = sr.streams[k];
      busy_line += std::string(k ? ", " : "") + "stream " + std::to_string(row.stream) +
                   (devices ? " (device " + std::to_string(row.device) + ")" : "") +
                   " " + pct(row.utilization());
    }
    busy_line += "; two or more at once " + pct(window ? double(sr.overlap_ns) / double(window) : 0);
  }
  auto split = [&](int64_t h, int64_t k, int64_t o) {
    const int64_t all = h + k + o;
    return "host wait " + pct(all ? double(h) / double(all) : 0) + ", kernel wait " +
           pct(all ? double(k) / double(all) : 0) + ", other " + pct(all ? double(o) / double(all) : 0);
  };
  std::string split_line = std::string(sr.streams.size() > 1 ? "; idle split over the streams" : "; idle split") +
                           (idle_rule == IdleRule::Hta ? std::string(" (Holistic Trace Analysis's rule)") : std::string()) +
                           ": " + split(host, kwait, other);
  // With several streams the sum can be the side streams' (a few items each, idle nearly all the
  // window): the busiest stream's own split beside it (and below, whether its gaps are the host's).
  const StreamRow& main = *std::max_element(sr.streams.begin(), sr.streams.end(),
                                            [](const StreamRow& a, const StreamRow& b) { return a.busy_ns < b.busy_ns; });
  if (sr.streams.size() > 1) {
    split_line += "; on the busiest, stream " + std::to_string(main.stream) +
                  (devices ? " (device " + std::to_string(main.device) + ")" : "") + ": " +
                  split(main.host_wait_ns, main.kernel_wait_ns, main.other_idle_ns);
  }
  // Where the GPU mostly waits: throughout, on the host's launches (launch/overhead bound), or
  // mostly in one stretch or a few long ones (stalls: a first call loading a library, data
  // loading), which advise's host_stall names, or after its last work (the host went on alone).
  std::string waits;
  if (window && sr.busy_ns < window / 2) {
    const IdleStretches s = idle_stretches(index);
    const int64_t idle_any = window - sr.busy_ns;
    const std::string then = ": not a launch-bound loop; `pil-trace advise` looks at what the host did then)";
    // The busiest stream's split says whether its short gaps are the host's launches.
    const int64_t main_idle = main.host_wait_ns + main.kernel_wait_ns + main.other_idle_ns;
    if (2 * s.captured_ns >= idle_any)
      waits = " (the GPU mostly waits, " + pct(double(s.captured_ns) / double(idle_any)) +
              " of it during stream captures, whose launches are recorded into a graph and run nothing then: a "
              "set-up cost, not a wait on the host; `pil-trace check`)";
    else if (2 * s.longest_ns >= idle_any && s.longest_ns >= s.after_last_ns && 2 * s.longest_waited_ns >= s.longest_ns)
      waits = " (the GPU mostly waits, " + pct(double(s.longest_ns) / double(idle_any)) + " of it in one stretch of " +
              format_duration(s.longest_ns) + ", most of it after the launch of the work that ended it had returned: "
              "that work waited on another stream's event, or on work the trace does not show, not on the host; "
              "`pil-trace launches`, waited)";
    else if (2 * s.longest_ns >= idle_any && s.longest_ns >= s.after_last_ns)
      waits = " (the GPU mostly waits, " + pct(double(s.longest_ns) / double(idle_any)) + " of it in one stretch of " +
              format_duration(s.longest_ns) + then;
    else if (2 * s.after_last_ns >= idle_any)
      waits = " (the GPU mostly waits, " + pct(double(s.after_last_ns) / double(idle_any)) +
              " of it after its last work, " + format_duration(s.after_last_ns) +
              " to the window's end: the host went on without it; not a launch-bound loop; `pil-trace advise` "
              "looks at what the host did then)";
    else if (2 * s.long_ns >= idle_any)
      waits = " (the GPU mostly waits, " + pct(double(s.long_ns) / double(idle_any)) + " of it in " +
              std::to_string(s.long_count) + " stretches longer than " + format_duration(kLongIdleNs) +
              ", the longest " + format_duration(s.longest_ns) + then;
    else if (2 * main.host_wait_ns >= main_idle)
      waits = " (launch/overhead bound: the GPU mostly waits)";
    else
      waits = " (the GPU mostly waits, in short stretches, most of them not on the host's launch calls: "
              "`pil-trace launches` shows what delayed the work)";
  }
  line(busy_line + split_line + waits);
  if (!sr.steps.empty()) {
    std::vector<int64_t> tail, launched_busy;  // per step that launched GPU work
    for (const StepUtilization& u : sr.steps)
      if (u.launched_work_items)
        tail.push_back(u.to_gpu_end_ns - u.duration_ns), launched_busy.push_back(u.launched_busy_ns);
    if (!tail.empty()) {
      const int64_t past = int64_t(DurationStats::of(tail).median);
      line("GPU work a step launched (median over steps): busy " +
           format_duration(int64_t(DurationStats::of(launched_busy).median)) +
           (past > 0 ? ", its last item done " + format_duration(past) +
                           " after the step's CPU end: the GPU runs behind the CPU (its tail: "
                           "`pil-trace streams`, `svg --step K`)"
                     : ", all done within the step's CPU time"));
    }
    const int64_t after = index.gpu_window_end - index.window_end;
    if (after > 0)
      line("the GPU ran " + format_duration(after) + " past the last step's CPU end");
    if (sr.outside_steps_work_items > 0)
      line(count_of(sr.outside_steps_work_items, "GPU work item", "GPU work items") + " (" +
           format_duration(sr.outside_steps_busy_ns) + " busy) " +
           (sr.outside_steps_work_items == 1 ? "belongs" : "belong") + " to no step (launched outside every step or before recording began; "
           "without a launch call, started outside every step; in the totals above)");
  }
  const LaunchReport& lr = m.launches;
  if (lr.delay.count > 0) {
    static constexpr const char* kKinds[] = {"two", "three", "four"};
    std::string s = std::string("launch delay (GPU work start - launch call end), in ") +
                    kKinds[(lr.waited.count > 0) + (lr.in_call > 0)] + " kinds: ";
    s += lr.latency.count
             ? "launch latency (stream idle when the call returned) median " +
                   format_duration(int64_t(lr.latency.median)) + ", max " + format_duration(lr.latency.max) +
                   " over " + count_of(lr.latency.count, "launch", "launches") +
                   (lr.slow_latency() ? std::string(" (") + kSlowLatencyWhy + ")" : std::string())
             : lr.waited.count ? "no launch onto an idle stream started within " + format_duration(kLatencyAfterReturnNs) +
                                     " of its call's return"
                               : std::string("no launch onto an idle stream");
    s += lr.queueing.count
             ? "; queued behind earlier work on the stream: " +
                   count_of(lr.queueing.count, "launch", "launches") + ", median wait " + format_duration(int64_t(lr.queueing.median)) +
                   (lr.slow_latency() ? " (the CPU ran ahead of those streams, whose earlier work started late itself: "
                                        "queued, not necessarily running)"
                                      : " (the CPU ran ahead of those streams: the GPU had work then)")
             : "; none queued behind earlier work";
    if (lr.waited.count)
      s += "; " + count_of(lr.waited.count, "launch", "launches") + " onto an idle stream started more than " +
           format_duration(kLatencyAfterReturnNs) + " after the call returned, up to " +
           format_duration(lr.waited.max) +
           (lr.slow_latency()
                ? " (waiting on another stream's event, or on work or a clock the trace does not show; at this "
                  "trace's slow latency, perhaps the launch's latency too)"
                : " (waiting on another stream's event, or on work or a clock the trace does not show: not "
                  "latency)");
    if (lr.in_call)
      s += "; " + count_of(lr.in_call, "copy or set", "copies or sets") + " ran inside " +
           (lr.in_call == 1 ? "its call (the call waited for it" : "their calls (each call waited for its own") +
           ": synchronous, or from pageable memory; not latency)";
    line(s);
    if (lr.kernel_launches)
      line(std::to_string(lr.shorter_than_call) + " of " + std::to_string(lr.kernel_launches) +
           " kernel launches ran a kernel shorter than the launch call" +
           (lr.graph_launches ? " (a graph launch: its first kernel)" : ""));
    if (m.clock_offset.found())
      line(offset_note(m.clock_offset));
  }
  // Each synchronize against the GPU work it covered: a long wait is GPU-bound only if the GPU
  // was busy through it.
  const std::vector<SyncRow>& syncs = m.syncs;
  auto verdict = [](double idle) {
    return idle > 0.5 ? std::string("the GPU idle most of the wait: not GPU-bound there (launch or "
                                    "overhead bound, or the GPU work started late)")
                      : std::string("the GPU busy most of the wait: GPU-bound there");
  };
  if (!syncs.empty() && syncs.size() <= 3) {
    for (const SyncRow& sr : syncs) {
      const Event& e = t.events[sr.call];
      line(std::string(e.name) + " " + format_duration(e.dur_ns) + " covered " +
           format_duration(sr.gpu_busy_ns) + " of GPU work (" + count_of(sr.work_items, "item", "items") +
           "); GPU idle " + pct(sr.idle_share(t)) + " of the wait: " + verdict(sr.idle_share(t)));
    }
  } else if (!syncs.empty()) {
    int64_t wait = 0, busy = 0;
    const SyncRow* longest = &syncs.front();
    for (const SyncRow& sr : syncs) {
      wait += t.events[sr.call].dur_ns;
      busy += sr.gpu_busy_ns;
      if (t.events[sr.call].dur_ns > t.events[longest->call].dur_ns) longest = &sr;
    }
    const double idle = wait ? 1.0 - double(busy) / double(wait) : 0;
    line(std::to_string(syncs.size()) + " synchronize calls, " + format_duration(wait) +
         " in all, covered " + format_duration(busy) + " of GPU work; GPU idle " + pct(idle) +
         " of the wait: " + verdict(idle) + "; the longest, " +
         std::string(t.events[longest->call].name) + " " + format_duration(t.events[longest->call].dur_ns) +
         ", covered " + format_duration(longest->gpu_busy_ns));
  }
  if (lr.graph_launches)
    line(count_of(lr.graph_launches, "graph launch", "graph launches") + " ran " + graph_work_text(lr));
  return out;
}

}  // namespace pil::trace
