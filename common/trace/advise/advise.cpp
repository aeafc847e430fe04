// pil-trace advise: runs every rule, groups the symptoms by root cause, orders the findings by
// their upper-bound gain, and writes them as text or JSON. The rules are in rules_*.cpp.
#include "trace/advise/advise.h"
#include "trace/advise/rules_gpu.h"  // captured_idle_ns

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <queue>
#include <sstream>
#include <thread>

#include "base/command_line.h"  // shell_word
#include "trace/advise/names.h"  // needs_input_shapes
#include "trace/advise/cpu_slices.h"  // is_data_loading_name
#include "trace/advise/rules.h"
#include "trace/check.h"  // trace_ts, launch_expectations
#include "trace/device_peaks.h"
#include "trace/intervals.h"
#include "trace/nesting.h"
#include "trace/profiler_log.h"  // profiler_messages
#include "trace/roofline_format.h"    // roofline_evidence
#include "trace/roofline_formulas.h"  // is_matrix_formula
#include "trace/text_table.h"

namespace pil::trace {

std::string github_anchor(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c)) out += char(std::tolower(c));
    else if (c == ' ' || c == '-') out += '-';
    else if (c == '_') out += '_';
    // anything else (punctuation, backticks) is dropped, as GitHub does
  }
  return out;
}

std::string LessonRef::link() const {
  const bool page = lesson.find('/') != std::string::npos;  // "docs/perfetto.md"
  return (page ? lesson : lesson + "/README.md") + "#" + github_anchor(section);
}

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

/// What the header says of GPU work with no launch call, where half or more has none
/// (RuleContext::links_missing): "7 of the 7 GPU work items have no launch call in the trace
/// (correlation 0 on every one" (ROCm traces, HIP's launches as well: amd-sriram/Frameworks101's
/// MIOpen runs), else "... their correlation ids match no runtime or driver call"; "" otherwise.
std::string unlinked_said(const advise_rules::RuleContext& c) {
  if (!c.links_missing()) return "";
  const int64_t zero = c.unlinked_zero;
  return (c.work_items == 1 ? std::string("the trace's one GPU work item has")
                             : std::to_string(c.unlinked_work) + " of the " + counted(c.work_items, "GPU work item") +
                                   (c.unlinked_work == 1 ? " has" : " have")) +
         " no launch call in the trace (" +
         (zero == c.unlinked_work ? std::string(c.unlinked_work == 1 ? "correlation 0" : "correlation 0 on every one")
          : zero > 0 ? "correlation 0 on " + std::to_string(zero) +
                           ", the others' correlation ids match no runtime or driver call"
                     : std::string("their correlation ids match no runtime or driver call")) +
         "; pil-trace check: gpu_work_without_launch)";
}

/// What of the set-up left out before the GPU's first work (RuleContext::set_up_ns) was the
/// DataLoader's fetches, where they are a quarter of it or more: "; 5.10 s of it in the DataLoader's
/// fetch (...)". A public trace's 8.60 s "set-up" was 5.10 s of a first batch from worker
/// processes, which the findings, judging the window after it, could not name. Sets
/// Advice::set_up_loading_ns.
std::string set_up_loading(const TraceIndex& index, const advise_rules::RuleContext& ctx, Advice& a) {
  using advise_rules::is_data_loading;
  if (!advise_rules::any_name(index.trace(), advise_rules::is_data_loading_name)) return "";
  std::vector<Interval> fetches;
  const Event* longest = nullptr;
  for (const Event& e : index.trace().events) {  // ranges, or old traces' operators named so
    if (!is_data_loading(e) || e.start_ns >= ctx.basis_start) continue;
    fetches.push_back({e.start_ns, e.end_ns()});
    if (!longest || e.dur_ns > longest->dur_ns) longest = &e;
  }
  const size_t count = fetches.size();
  merge(fetches);
  a.set_up_loading_ns = length(clip(fetches, index.window_start, ctx.basis_start));
  if (!longest || 4 * a.set_up_loading_ns < ctx.set_up_ns) return "";
  const bool workers = advise_rules::loads_in_workers(longest->name);
  return "; " + format_duration(a.set_up_loading_ns) + " of it in the DataLoader's fetches (" +
         (count == 1 ? std::string(longest->name)
                     : std::to_string(count) + " fetches, the longest " + format_duration(longest->dur_ns) + " " +
                           std::string(longest->name)) +
         ")" +
         (workers ? ": a first batch waits for the worker processes to start; persistent_workers=True keeps "
                    "them between epochs, and a step run before recording leaves it out"
                  : ": the batch made on the training thread");
}

}  // namespace

std::string command_for_trace(const std::string& command, const std::string& trace_path,
                              const std::string& program) {
  if (trace_path.empty()) return command;
  std::string folder = std::filesystem::path(trace_path).parent_path().string();
  if (folder.empty()) folder = ".";
  std::string out = command;
  const bool reads_trace = out.find("traces/TRACE.pt.trace.json") != std::string::npos ||
                           out.find("TRACES_FOLDER") != std::string::npos;
  if (reads_trace && !program.empty()) replace_all(out, "build/bin/pil-trace", shell_word(program));
  replace_all(out, "traces/TRACE.pt.trace.json", shell_word(trace_path));
  replace_all(out, "TRACES_FOLDER", shell_word(folder));
  return out;
}

namespace advise_rules {

std::string percent_text(double share) {
  char buf[32];
  const double p = share * 100;
  // Just under 100: one decimal, cut, not rounded up to a whole share ("aten::mul 100%, aten::log_softmax
  // 0.1%" for 99.88% and 0.12%).
  if (p > 99.5 && p < 100) std::snprintf(buf, sizeof buf, "%.1f%%", std::floor(p * 10) / 10);
  else std::snprintf(buf, sizeof buf, p < 10 ? "%.1f%%" : "%.0f%%", p);
  return buf;
}

RuleContext::RuleContext(const TraceIndex& index, const AdviseOptions& options)
    : index(index), trace(index.trace()), options(options) {
  for (size_t s : index.steps) step_ns.push_back(trace.events[s].dur_ns);
  basis_ns = 0;
  for (int64_t d : step_ns) basis_ns += d;
  basis_start = index.window_start;
  basis_end = index.window_end;
  if (step_ns.empty() && !index.device_work().empty()) {
    int64_t first = index.window_end;
    for (size_t w : index.device_work()) {
      first = std::min(first, trace.events[w].start_ns);
      if (const long call = index.launch_of(w); call >= 0) first = std::min(first, trace.events[size_t(call)].start_ns);
    }
    if (first - index.window_start > threshold::kHostStallNs) {
      set_up_ns = first - index.window_start;
      basis_start = first;
    }
  }
  if (step_ns.empty()) basis_ns = basis_end - basis_start;
  for (size_t w : index.device_work())
    if (index.launch_of(w) < 0 && !index.launched_before_recording(w)) {
      ++unlinked_work;
      unlinked_zero += trace.events[w].correlation == 0;
    }
  work_items = int64_t(index.device_work().size());
  if (!index.device_work().empty()) {
    captures = stream_captures(index);
    if (!captures.empty()) capture_spans = pil::trace::capture_spans(captures, basis_start, basis_end);
  }
}

int64_t RuleContext::median_after_first_step_ns() const {
  return step_ns.size() < 3 ? 0 : median_ns(std::vector<int64_t>(step_ns.begin() + 1, step_ns.end()));
}

bool RuleContext::first_step_slow() const {
  const int64_t rest = median_after_first_step_ns();
  return rest > 0 && double(step_ns[0]) >= threshold::kFirstStepRatio * double(rest);
}

const StreamReport& RuleContext::streams() const {
  return streams_.get([&] { return stream_report(index); });
}
const LaunchReport& RuleContext::launches() const {
  return launches_.get([&] { return launch_report(index, LaunchDetail::Launches); });
}
const std::vector<SyncRow>& RuleContext::syncs() const {
  return syncs_.get([&] { return sync_report(index); });
}
const CpuSlices& RuleContext::cpu() const {
  return cpu_.get([&] { return CpuSlices(index, basis_start, basis_end); });
}

const std::vector<RooflineRow>& RuleContext::roofline() const {
  return roofline_.get([&] {
    RooflineOptions o;
    o.cpu_peak_gflops = options.cpu_peak_gflops;
    o.gpu_peak_tflops = options.gpu_peak_tflops;
    // Without a peak no row has a share to cite: not worth the walk.
    const bool any = has_recorded_inputs(trace) && has_matrix_peak(trace, options);
    return any ? roofline_rows(index, o) : std::vector<RooflineRow>{};
  });
}

void cite_roofline(const RuleContext& c, Symptom& s, const std::function<bool(const RooflineRow&)>& which,
                   bool compare) {
  auto held = [](const RooflineRow& r) {
    return r.counted == Counted::Yes && r.matrix && r.share >= 0;
  };
  auto cite = [](const RooflineRow& r, bool comparison) {
    RooflineCite x;
    x.text = roofline_evidence(r);
    x.op = r.name;
    x.tensors = r.tensors;
    x.dtype = r.dtype;
    x.calls = r.calls;
    x.time_ns = r.time_ns;
    x.gflops = r.gflops();
    x.gbps = r.gbps();
    x.share = r.share;
    x.bound = to_string(r.share_of);
    x.peak_gflops = r.peak.gflops;
    x.peak_gbps = r.peak.gbps;
    x.peak = r.peak.source;
    x.comparison = comparison;
    return x;
  };
  const std::vector<RooflineRow>& rows = c.roofline();  // counted rows: most time first
  double best_cited = -1;
  bool on_gpu = false;
  for (const RooflineRow& r : rows) {
    if (s.roofline.size() >= c.options.examples) break;
    if (!held(r) || !which(r)) continue;
    s.roofline.push_back(cite(r, false));
    best_cited = std::max(best_cited, r.share);
    on_gpu = r.on_gpu;
  }
  if (!compare || s.roofline.empty()) return;
  const RooflineRow* best = nullptr;
  for (const RooflineRow& r : rows)
    if (held(r) && r.on_gpu == on_gpu && !which(r) && r.share > best_cited && (!best || r.share > best->share))
      best = &r;
  if (best) s.roofline.push_back(cite(*best, true));
}

const std::vector<BusySpan>& RuleContext::busy_spans() const {
  return busy_spans_.get([&] {
    // The streams' work lists are each in start order: merged through a heap of their heads
    // (a handful of streams), not sorted again.
    const auto& streams = index.streams();
    using Head = std::pair<int64_t, size_t>;  // (start, stream)
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
    std::vector<size_t> next(streams.size(), 0);
    for (size_t s = 0; s < streams.size(); ++s)
      if (!streams[s].work.empty()) heads.push({trace.events[streams[s].work[0]].start_ns, s});
    std::vector<BusySpan> spans;
    while (!heads.empty()) {
      const size_t s = heads.top().second;
      heads.pop();
      const size_t i = streams[s].work[next[s]++];
      if (next[s] < streams[s].work.size()) heads.push({trace.events[streams[s].work[next[s]]].start_ns, s});
      const Event& e = trace.events[i];
      if (!spans.empty() && e.start_ns <= spans.back().end)
        spans.back().end = std::max(spans.back().end, e.end_ns());
      else
        spans.push_back({e.start_ns, e.end_ns(), i});
    }
    return spans;
  });
}

int64_t RuleContext::gpu_busy_in(int64_t from, int64_t to) const {
  const auto& spans = busy_spans();
  // The first span that ends after `from`: spans are disjoint and in order, so ends are too.
  auto it = std::lower_bound(spans.begin(), spans.end(), from,
                             [](const BusySpan& s, int64_t v) { return s.end <= v; });
  int64_t sum = 0;
  for (; it != spans.end() && it->start < to; ++it) sum += std::min(it->end, to) - std::max(it->start, from);
  return sum;
}

const std::vector<std::vector<size_t>>& RuleContext::ops_by_thread() const {
  return ops_by_thread_.get([&] {
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_thread;
    for (size_t i = 0; i < trace.events.size(); ++i)
      if (trace.events[i].category == Category::CpuOp)
        by_thread[{trace.events[i].pid, trace.events[i].tid}].push_back(i);
    std::vector<std::vector<size_t>> out;
    for (auto& [lane, ops] : by_thread) {
      order_for_nesting(trace.events, ops);
      out.push_back(std::move(ops));
    }
    return out;
  });
}

const std::vector<std::vector<size_t>>& RuleContext::top_ops() const {
  return top_ops_.get([&] {
    std::vector<std::vector<size_t>> out;
    for (const std::vector<size_t>& ops : ops_by_thread()) {
      std::vector<size_t> top;
      nest(trace.events, ops, [&](size_t i, long parent, int) {
        if (parent < 0) top.push_back(i);
        return true;
      });
      out.push_back(std::move(top));
    }
    return out;
  });
}

const std::map<std::pair<int64_t, int64_t>, std::vector<size_t>>& RuleContext::calls_by_thread() const {
  return calls_by_thread_.get([&] {
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> out;
    for (size_t i : index.api_calls()) out[{trace.events[i].pid, trace.events[i].tid}].push_back(i);
    for (auto& [lane, calls] : out)
      std::stable_sort(calls.begin(), calls.end(), [&](size_t a, size_t b) {
        return trace.events[a].start_ns < trace.events[b].start_ns;
      });
    return out;
  });
}

int64_t RuleContext::basis_overlap(int64_t from, int64_t to) const {
  auto clip = [&](int64_t lo, int64_t hi) { return std::max<int64_t>(0, std::min(to, hi) - std::max(from, lo)); };
  if (index.steps.empty()) return clip(basis_start, basis_end);
  // The steps are in time order and do not overlap: from the last that starts before `to`
  // back to the first that ends after `from`.
  const auto& st = index.steps;
  auto k = std::upper_bound(st.begin(), st.end(), to,
                            [&](int64_t v, size_t s) { return v <= trace.events[s].start_ns; });
  int64_t sum = 0;
  while (k != st.begin()) {
    const Event& s = trace.events[*--k];
    if (s.end_ns() <= from) break;
    sum += clip(s.start_ns, s.end_ns());
  }
  return sum;
}

bool RuleContext::in_basis_at(int64_t t) const {
  if (index.steps.empty()) return t >= basis_start && t < basis_end;
  return index.step_at(t) >= 0;
}

bool RuleContext::in_basis_work(size_t i) const {
  return index.steps.empty() || index.step_of_work(i) >= 0;
}

std::string RuleContext::step_name_at(int64_t t) const {
  const long s = index.step_at(t);
  return s < 0 ? std::string() : std::string(trace.events[index.steps[size_t(s)]].name);
}

AdviceExample RuleContext::example(size_t i, std::string detail) const {
  const Event& e = trace.events[i];
  AdviceExample x;
  x.name = std::string(e.name);
  x.ts_ns = e.start_ns;
  x.dur_ns = e.dur_ns;
  if (e.on_device()) {
    x.where = "GPU " + std::to_string(e.pid) + " stream " + std::to_string(e.tid);
    const long s = index.step_of_work(i);
    if (s >= 0) x.where += ", launched in " + std::string(trace.events[index.steps[size_t(s)]].name);
  } else {
    x.where = step_name_at(e.start_ns);
    if (x.where.empty() && !index.steps.empty()) x.where = "outside the steps";
    const auto lane = trace.lane_names.find({e.pid, e.tid});
    x.where += (x.where.empty() ? "" : ", ") +
               (lane != trace.lane_names.end() ? lane->second : "thread " + std::to_string(e.tid));
  }
  x.detail = std::move(detail);
  return x;
}

}  // namespace advise_rules

bool has_matrix_peak(const Trace& head, const AdviseOptions& options) {
  if (options.cpu_peak_gflops > 0 || options.gpu_peak_tflops > 0) return true;
  for (const DeviceInfo& d : head.devices)
    if (match_gpu(d).spec) return true;
  return false;
}

ParseOptions advise_read_options(ParseOptions base, const AdviseOptions& options) {
  base.read_shapes = base.read_concrete = true;
  // fp32_gemm holds a kernel against those of its name and launch shape (an LM head's grid is
  // not its layers'): those kernels' shapes, not every kernel's (summary's speed).
  if (!base.read_launch_shapes) base.launch_shapes_for = advise_rules::is_fp32_simt_gemm_kernel;
  base.shapes_for = advise_rules::needs_input_shapes;
  // The matrix products' inputs (their roofline figures, in the evidence) only where a peak
  // can be put beside them: on most traces they are a large share of the operators.
  base.shapes_also_for = is_matrix_formula;
  base.shapes_also_if = [options](const Trace& head) { return has_matrix_peak(head, options); };
  return base;
}

Advice advise(const TraceIndex& index, const AdviseOptions& options) {
  using namespace advise_rules;
  const RuleContext ctx(index, options);
  Advice a;
  a.basis_ns = ctx.basis_ns;
  a.set_up_ns = ctx.set_up_ns;
  a.window_start_ns = index.window_start;
  a.steps = int64_t(ctx.step_ns.size());
  a.gpu = ctx.gpu();
  a.cpu_side_only_format = !a.gpu && index.trace().autograd_profiler_slices > 0;
  a.unmodelled_device_events = Trace::unread_device_events(index.trace().unread);
  a.python_functions = index.trace().python_functions;
  a.profiler_gpu_loss = profiler_messages(index.trace(), !index.device_work().empty()).gpu_loss;
  if (a.gpu)
    if (const LaunchExpectations x = launch_expectations(index); x.stops_early()) {
      a.gpu_events_stop_early = lost_tail_said(x) + ": " + lost_tail_consequence(x);
      a.lost_after_recording = x.after_recording;
    }
  if (!index.steps.empty())
    if (const EmptySteps es = empty_steps_of(index); es.found())
      a.steps_hold_nothing = counted(int64_t(es.empty.size()), "step") + " of " + std::to_string(index.steps.size()) +
                             " hold nothing, and most of the work ran outside every step (" +
                             counted(es.outside, "operator, range or CUDA call") + " outside, " +
                             std::to_string(es.inside) +
                             " inside; pil-trace check: steps_empty), so the findings judge the steps' " +
                             format_duration(ctx.basis_ns) + " only; record the steps around the work "
                             "(prof.step() at the end of each iteration)";
  if (!ctx.capture_spans.empty()) {
    // Their time in the basis, and the GPU's idle time the host-wait rules leave out as theirs.
    int64_t inside = 0;
    for (const Interval& c : ctx.capture_spans) inside += ctx.basis_overlap(c.from, c.to);
    a.capture_idle_ns = advise_rules::captured_idle_ns(ctx);
    if (a.capture_idle_ns > 0)
      a.captures = std::string(ctx.capture_spans.size() == 1 ? "a stream capture takes " : "stream captures take ") +
                   format_duration(inside) + " of " + (ctx.step_ns.empty() ? "the window" : "the steps") +
                   " (StreamBeginCapture to StreamEndCapture): the launches made inside " +
                   (ctx.capture_spans.size() == 1 ? "it are" : "them are") +
                   " recorded into a graph and run nothing then, so the GPU's " + format_duration(a.capture_idle_ns) +
                   " idle there, waiting on the capturing thread's launches, is the capture's, a set-up cost, not a "
                   "wait on the host: left out of the findings about idle time (record the graph's replays, "
                   "cudaGraphLaunch, to judge the running program)";
  }
  if (!a.gpu) a.launches_without_gpu_work = int64_t(calls_starting_gpu_work(index));
  if (!a.gpu && a.launches_without_gpu_work == 0) a.sync_or_query_calls = int64_t(index.api_calls().size());
  if (!a.gpu) a.device_use = device_use_without_work(index).evidence();
  a.cuda_side_only = cuda_side_only(index);
  const bool not_recorded = a.launches_without_gpu_work > 0 || !a.device_use.empty();
  const std::string not_recorded_why =
      "the trace's GPU side was not recorded (" +
      (a.launches_without_gpu_work > 0
           ? std::to_string(a.launches_without_gpu_work) + " CUDA calls start GPU work, none is in the trace"
           : "the run used a device: " + a.device_use + "; no CUDA call or GPU work is in the trace") +
      "; pil-trace check): its host time is launches and waits, not a CPU run's cost";
  a.min_share = options.min_saved_share;
  // GPU times offset from CPU times: the rules that set one against the other are not run.
  const ClockOffset offset = a.gpu ? gpu_clock_offset(index) : ClockOffset{};
  const std::string offset_why =
      offset.found() ? "GPU times look offset from CPU times (" + offset_evidence(offset) +
                           "; pil-trace check): the GPU's waits on the host cannot be told from the offset"
                     : std::string();
  auto runs = [&](const Rule& r) { return (!r.needs_gpu || a.gpu) && !(offset.found() && r.compares_clocks); };
  // GPU work the trace does not link to a launch call: the rules that follow the links are not
  // run (they would find nothing for want of links, not of a problem).
  a.unlinked_work = ctx.unlinked_work;
  a.work_items = ctx.work_items;
  a.unlinked = unlinked_said(ctx);
  const std::string links_why =
      a.unlinked + ": what each waited for, and which operator launched it, cannot be told";
  auto runs_with_links = [&](const Rule& r) { return !(a.links_missing() && r.reads_launch_links); };
  a.processes = int64_t(step_processes(index));
  const std::string set_up_fetches = ctx.set_up_ns > 0 ? set_up_loading(index, ctx, a) : std::string();
  a.basis = a.steps ? "the " + counted(a.steps, "profiled step") + " (" + format_duration(a.basis_ns) +
                          (a.processes > 1 ? "; recorded by " + std::to_string(a.processes) +
                                               " processes: several traces merged into one? pil-trace check"
                                         : std::string()) +
                          ")"
                    : ctx.set_up_ns > 0
                        ? "the trace's window from the launch of the GPU's first work (" +
                              format_duration(a.basis_ns) + "; the " + format_duration(ctx.set_up_ns) +
                              " recorded before it, set-up, left out" + set_up_fetches + ")"
                        : "the trace's window (" + format_duration(a.basis_ns) + ")";

  // Every rule runs on its own (on `threads` threads, each taking the next rule left); their
  // results are then taken in the rules' order, so the advice does not depend on the threads.
  std::vector<Rule> rules = gpu_rules();
  for (auto family : {cpu_rules(), operator_rules()}) rules.insert(rules.end(), family.begin(), family.end());
  std::vector<RuleResult> results(rules.size());
  std::vector<std::exception_ptr> failed(rules.size());  // thrown on a helper: rethrown here
  // Task 0 builds the CPU slices most host rules share (the longest report to make), so that
  // on several threads it is under way beside the first GPU rules instead of holding up, late,
  // the rule that happens to ask for it first; task k > 0 runs rule k - 1.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k <= rules.size(); k = next++) {
      if (k == 0) {
        if (options.threads > 1) {
          try {
            ctx.cpu();
          } catch (...) {  // the rule that asks again reports it
          }
        }
        continue;
      }
      const size_t i = k - 1;
      try {
        if (runs(rules[i]) && runs_with_links(rules[i])) rules[i].run(ctx, results[i]);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  {
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < std::min<size_t>(std::max(1u, options.threads), rules.size()); ++t)
      helpers.emplace_back(work);
    work();
    for (std::thread& t : helpers) t.join();
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);

  const auto what = [&](const Rule& r) { return a.steps ? r.what : without_steps(r.what); };
  std::map<std::string, Finding> by_cause;
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& r = rules[i];
    RuleResult& out = results[i];
    if (r.needs_gpu && !a.gpu) {
      a.unable.push_back({r.key, what(r), "the trace has no GPU work"});
      continue;
    }
    if (r.host_time_is_cost && not_recorded) {
      a.unable.push_back({r.key, what(r), not_recorded_why});
      continue;
    }
    if (r.needs_cpu_side && a.cuda_side_only) {
      a.unable.push_back({r.key, what(r),
                          "the trace has no operator or range, only CUDA calls and GPU work (recorded without the "
                          "profiler's CPU activity, ProfilerActivity.CPU)"});
      continue;
    }
    if (!runs(r)) {
      a.unable.push_back({r.key, what(r), offset_why});
      continue;
    }
    if (!runs_with_links(r)) {
      a.unable.push_back({r.key, what(r), links_why});
      continue;
    }
    if (!out.unable_why.empty()) {
      a.unable.push_back({r.key, what(r), out.unable_why});
      continue;
    }
    if (out.symptoms.empty()) {
      a.clean.push_back({r.key, what(r), ""});
      continue;
    }
    for (size_t k = 0; k < out.symptoms.size(); ++k) {
      const char* key = k < out.causes.size() && out.causes[k] ? out.causes[k] : r.cause;
      Finding& f = by_cause[key];
      if (f.cause.empty()) {
        const Cause& c = cause(key);
        f.cause = c.key;
        f.title = a.steps ? c.title : without_steps(c.title);
        f.fix = c.fix;
        f.lesson = c.lesson;
        f.lesson.command = command_for_trace(c.lesson.command, options.trace_path, options.program);
      }
      Symptom& s = out.symptoms[k];
      s.rule = r.key;
      s.saved_ns = std::clamp<int64_t>(s.saved_ns, 0, a.basis_ns);
      f.symptoms.push_back(std::move(s));
    }
  }

  for (auto& [key, f] : by_cause) {
    std::stable_sort(f.symptoms.begin(), f.symptoms.end(),
                     [](const Symptom& x, const Symptom& y) { return x.saved_ns > y.saved_ns; });
    f.saved_ns = f.symptoms.front().saved_ns;
    if (!f.symptoms.front().command.empty())
      f.lesson.command = command_for_trace(f.symptoms.front().command, options.trace_path, options.program);
    if (!f.symptoms.front().fix.empty()) f.fix = f.symptoms.front().fix;
    // The same time seen twice is saved once: the cause's gain is its largest symptom's.
    const int64_t left = a.basis_ns - f.saved_ns;
    f.speedup = left > 0 ? double(a.basis_ns) / double(left) : 0;  // 0: unbounded
    a.findings.push_back(std::move(f));
  }
  std::stable_sort(a.findings.begin(), a.findings.end(),
                   [](const Finding& x, const Finding& y) { return x.saved_ns > y.saved_ns; });
  return a;
}

namespace {

std::string speedup_text(const Finding& f) {
  if (f.speedup <= 0) return "the whole basis";
  char buf[32];
  std::snprintf(buf, sizeof buf, f.speedup < 10 ? "%.2fx" : "%.0fx", f.speedup);
  return buf;
}

/// What the trace holds of the run's GPU side, for the advice's first line.
std::string device_side(const Advice& a) {
  if (a.gpu && a.cuda_side_only) return "with GPU work; no operator or range (recorded without ProfilerActivity.CPU)";
  if (a.gpu) return "with GPU work";
  if (a.launches_without_gpu_work > 0) return "GPU work not recorded";
  if (!a.device_use.empty()) return "GPU work not recorded (the run used a device: " + a.device_use + ")";
  if (!a.unmodelled_device_events.empty()) {
    std::string kinds;
    for (const auto& [kind, n] : a.unmodelled_device_events)
      kinds += std::string(kinds.empty() ? "" : ", ") + grouped(n) + " " + kind;
    return "the CPU side only: its device's work (" + kinds + " events) is of a kind pil-trace does not model";
  }
  if (a.cpu_side_only_format) return "CPU side only (the autograd profiler's format: whether the run used a GPU, it does not say)";
  if (a.sync_or_query_calls > 0)
    return "CPU only as recorded (no GPU work, and its " + counted(a.sync_or_query_calls, "CUDA call") +
           (a.sync_or_query_calls == 1 ? " only synchronizes or queries" : " only synchronize or query") +
           ": any work waited for was launched before recording began)";
  return "CPU only";
}

}  // namespace

std::string format_advice(const Advice& a, const std::string& path) {
  std::ostringstream o;
  o << "pil-trace advise: " << path << ": " << a.basis << ", " << device_side(a);
  if (a.min_share != advise_rules::threshold::kMinSavedShare)  // --min-share: said, as it moves the findings
    o << "; findings from " << fixed(100 * a.min_share, 1) << "% of the "
      << (a.steps ? "steps" : "window") << " (--min-share)";
  o << "\n";
  if (a.python_functions > 0)
    o << "recorded with Python's stack tracer (with_stack: " << counted(a.python_functions, "python_function slice")
      << "): it lengthens every call it traces, so the host's times here (gaps between launches, operators' "
         "overhead) come out longer than without it; record again without with_stack to judge them\n";
  if (!a.profiler_gpu_loss.empty())
    o << gpu_loss_said(a.profiler_gpu_loss)
      << ": the missing work reads as GPU idle time, so the gains of the findings about idle time and launches "
         "come out too high (`pil-trace check` lists what it logged)\n";
  if (!a.gpu_events_stop_early.empty()) o << a.gpu_events_stop_early << "\n";
  if (a.links_missing())
    o << a.unlinked << ": the rules that follow a launch to its work are not run (under \"Not checked\")\n";
  if (!a.steps_hold_nothing.empty()) o << a.steps_hold_nothing << "\n";
  if (!a.captures.empty()) o << a.captures << "\n";
  if (a.findings.empty()) o << "\nNo finding: every rule that could run found nothing past its threshold.\n";
  int n = 0;
  for (const Finding& f : a.findings) {
    o << "\n" << ++n << ". " << f.title << "\n";
    const Symptom& top = f.symptoms.front();
    if (f.saved_ns > 0)
      o << "   gain: at most " << speedup_text(f) << " faster (up to " << format_duration(f.saved_ns)
        << " of " << format_duration(a.basis_ns) << "): " << top.how << "\n";
    else
      o << "   gain: not in time: " << top.how << "\n";
    o << "   evidence (examples at +us from the " << (a.steps ? "first step" : "trace's start")
      << ", as svg --from-us takes them, and at the trace's ts):\n";
    for (const Symptom& s : f.symptoms) {
      o << "   - " << s.text << "\n";
      for (const AdviceExample& x : s.examples) {
        const int64_t at = x.ts_ns - a.window_start_ns;  // before the first step: "-534.304 us"
        o << "       " << (at < 0 ? "-" + trace_ts(-at) : "+" + trace_ts(at)) << " us (ts " << trace_ts(x.ts_ns) << "): "
          << x.name << " (" << format_duration(x.dur_ns) << "; " << x.where << ")";
        if (!x.detail.empty()) o << ": " << x.detail;
        o << "\n";
      }
      for (const RooflineCite& r : s.roofline)
        o << "       roofline" << (r.comparison ? ", for comparison" : "") << ": " << r.text << "\n";
    }
    o << "   fix: " << f.fix << "\n";
    o << "   learn: " << f.lesson.link() << " (\"" << f.lesson.section << "\")\n";
    o << "   see the effect: " << f.lesson.command << "\n";
  }
  if (!a.clean.empty()) {
    o << "\nNothing found about:";
    for (size_t i = 0; i < a.clean.size(); ++i) o << (i ? "; " : " ") << a.clean[i].what;
    o << ".\n";
  }
  if (!a.unable.empty()) {
    o << "Not checked:\n";
    // Rules that could not run for the same reason share a line.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_why;
    for (const RuleNote& r : a.unable) {
      auto it = std::find_if(by_why.begin(), by_why.end(), [&](const auto& p) { return p.first == r.why; });
      if (it == by_why.end()) by_why.push_back({r.why, {r.what}});
      else it->second.push_back(r.what);
    }
    for (const auto& [why, whats] : by_why) {
      o << "  " << why << ":";
      for (size_t i = 0; i < whats.size(); ++i) o << (i ? "; " : " ") << whats[i];
      o << ".\n";
    }
  }
  return o.str();
}

nlohmann::ordered_json advice_json(const Advice& a) {
  using json = nlohmann::ordered_json;
  json j = {{"basis_ns", a.basis_ns}, {"set_up_ns", a.set_up_ns}, {"set_up_loading_ns", a.set_up_loading_ns}, {"basis", a.basis}, {"steps", a.steps},
            {"processes", a.processes}, {"gpu", a.gpu},
            {"launches_without_gpu_work", a.launches_without_gpu_work},
            {"sync_or_query_calls", a.sync_or_query_calls},
            {"device_use", a.device_use},
            {"cuda_side_only", a.cuda_side_only},
            {"cpu_side_only_format", a.cpu_side_only_format},
            {"unmodelled_device_events", a.unmodelled_device_events},
            {"python_functions", a.python_functions},
            {"profiler_gpu_loss", a.profiler_gpu_loss},
            {"gpu_events_stop_early", a.gpu_events_stop_early},
            {"captures", a.captures},
            {"capture_idle_ns", a.capture_idle_ns},
            {"unlinked_work", a.unlinked_work},
            {"unlinked", a.unlinked},
            {"work_items", a.work_items},
            {"links_missing", a.links_missing()},
            {"steps_hold_nothing", a.steps_hold_nothing},
            {"lost_after_recording", a.lost_after_recording},
            {"min_share", a.min_share}, {"window_start", trace_ts(a.window_start_ns)},
            {"findings", json::array()}, {"clean", json::array()}, {"unable", json::array()}};
  for (const Finding& f : a.findings) {
    json jf = {{"cause", f.cause},
               {"title", f.title},
               {"saved_ns", f.saved_ns},
               {"speedup", f.speedup},
               {"fix", f.fix},
               {"lesson", {{"lesson", f.lesson.lesson}, {"section", f.lesson.section},
                           {"link", f.lesson.link()}, {"command", f.lesson.command}}},
               {"symptoms", json::array()}};
    for (const Symptom& s : f.symptoms) {
      json js = {{"rule", s.rule}, {"text", s.text}, {"saved_ns", s.saved_ns}, {"how", s.how},
                 {"figures", json::object()}, {"examples", json::array()}};
      for (const auto& [k, v] : s.figures) js["figures"][k] = v;
      for (const AdviceExample& x : s.examples)
        js["examples"].push_back({{"name", x.name}, {"ts", trace_ts(x.ts_ns)},
                                  {"from_window_us", trace_ts(x.ts_ns - a.window_start_ns)}, {"dur_ns", x.dur_ns},
                                  {"where", x.where}, {"detail", x.detail}});
      if (!s.roofline.empty()) {
        js["roofline"] = json::array();
        for (const RooflineCite& r : s.roofline)
          js["roofline"].push_back({{"text", r.text}, {"operator", r.op}, {"tensors", r.tensors},
                                    {"dtype", r.dtype}, {"calls", r.calls}, {"time_ns", r.time_ns},
                                    {"gflops", r.gflops}, {"gbps", r.gbps}, {"share", r.share},
                                    {"of", r.bound}, {"peak_gflops", r.peak_gflops},
                                    {"peak_gbps", r.peak_gbps}, {"peak", r.peak},
                                    {"comparison", r.comparison}});
      }
      jf["symptoms"].push_back(std::move(js));
    }
    j["findings"].push_back(std::move(jf));
  }
  for (const RuleNote& r : a.clean) j["clean"].push_back({{"rule", r.rule}, {"what", r.what}});
  for (const RuleNote& r : a.unable)
    j["unable"].push_back({{"rule", r.rule}, {"what", r.what}, {"why", r.why}});
  return j;
}

}  // namespace pil::trace
