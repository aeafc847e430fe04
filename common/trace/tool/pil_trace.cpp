// pil-trace — explain a trace from the command line.
//
// Reads any Kineto/Chrome trace (ours, or one from Python's torch.profiler; .json or .json.gz)
// and answers the lessons' questions with computed figures instead of by eye:
//
//   pil-trace summary  TRACE               what the trace says, in a few lines
//   pil-trace ops      TRACE               the operator table (key_averages().table() layout);
//                                          --roofline: FLOPs, bytes, achieved rates and share
//                                          of peak per operator, from the recorded shapes
//   pil-trace kernels  TRACE [--range R]   kernel statistics (nsys stats layout), optionally
//                                          only kernels launched inside range R
//   pil-trace api      TRACE               CUDA runtime and driver calls
//   pil-trace launches TRACE               launch delays split into launch latency (idle stream)
//                                          and queueing (busy stream), kernels shorter than
//                                          their launch, graph launches, outliers
//   pil-trace streams  TRACE               GPU busy and idle time per stream, per step, and
//                                          the GPU work each synchronize covered
//   pil-trace memory   TRACE               allocations per device, the peak and the range and
//                                          operator it came in (traces with memory events)
//   pil-trace expect   TRACE KEY=VALUE...  predictions checked: yes or no with the figure
//                                          (kernels=5, calls:aten::mm=3, peak-range=attn)
//   pil-trace chain    TRACE --range R     range -> operators -> runtime calls -> GPU work
//   pil-trace diff     A B                 operators and kernels of two runs side by side
//   pil-trace ranks    TRACES... | DIR     data-parallel ranks side by side: per rank and step
//                                          compute, communication and their overlap, each
//                                          collective, the slowest rank and the others' wait
//                                          (--svg F.svg: a lane per rank)
//   pil-trace svg      TRACE --out F.svg   a timeline picture (--step K, --range R, --from-us;
//                                          --mark SLICE: an arrow at the first SLICE in it)
//   pil-trace walk     TRACE               only walk the events with simdjson (the parse
//                                          ceiling that scripts/bench_trace.py compares with)
//
// Every report reads the trace on all the cores the process may use (--threads N to choose):
// a plain file is memory-mapped and its chunks read in parallel, with the same answers as one
// thread; .json.gz files and pipes are read by one thread.
//
//   pil-trace check    TRACE               can I trust this trace? findings with examples
//                                          (exit 1 with findings)
//   pil-trace advise   TRACE               what to fix: findings grouped by root cause, each with
//                                          its evidence, an upper bound on the gain and the
//                                          lesson that teaches the fix (roofline figures of
//                                          the products where a peak is known or given)
//   pil-trace slice    TRACE --out F.json  a small trace of one step (--step K), range (--range
//                                          R) or window (--from-us), events copied byte for byte
//
// Every report but svg, slice, expect and walk takes --json (summary's keys: see summary_json below). Exit
// codes: 0 done, 1 findings (check) or a wrong prediction (expect), 2 bad usage, an unreadable
// trace or an --out that cannot be written, 70 an internal error (a bug: please report it with
// the trace).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <map>
#include <set>

#include "base/atomic_file.h"
#include "base/command_line.h"
#include "trace/advise/advise.h"
#include "trace/advise/names.h"  // is_gemm_op
#include "trace/check.h"
#include "trace/expect.h"
#include "trace/key_averages.h"
#include "trace/parse.h"
#include "trace/ranks.h"
#include "trace/report_json.h"
#include "trace/reports.h"
#include "trace/python_flops.h"
#include "trace/roofline_format.h"
#include "trace/slice.h"
#include "trace/svg.h"
#include "trace/text_table.h"
#include "trace/tool/value_checks.h"

using namespace pil::trace;
using pil::trace::tool::number;
using pil::trace::tool::one_of;
using pil::trace::tool::non_empty;
using pil::trace::tool::output_problem;
using pil::trace::tool::whole_number;
using json = nlohmann::ordered_json;

namespace {

json stats_json(const DurationStats& s) {
  return {{"count", s.count}, {"total_ns", s.total},   {"mean_ns", s.mean}, {"median_ns", s.median},
          {"min_ns", s.min},  {"max_ns", s.max},       {"stddev_ns", s.stddev}};
}

std::vector<std::string> stats_cells(const DurationStats& s, double share) {
  return {fixed(100 * share), grouped(s.total), grouped(s.count), grouped((long long)s.mean),
          grouped((long long)s.median), grouped(s.min), grouped(s.max), grouped((long long)s.stddev)};
}

const std::vector<std::string> kStatHeaders = {"Time (%)", "Total Time (ns)", "Instances",
                                               "Avg (ns)", "Med (ns)",        "Min (ns)",
                                               "Max (ns)", "StdDev (ns)"};

std::string shape(const std::optional<KernelInfo>& k) {
  if (!k) return "";
  auto dims = [](const int32_t d[3]) {
    return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
  };
  return dims(k->grid) + " " + dims(k->block) + " " + std::to_string(k->registers) + " " +
         std::to_string(k->shared_memory);
}

// What --step may be, for an error line: "; allowed: 0 to 4", or nothing without steps.
std::string steps_allowed(size_t steps) {
  return steps ? "; allowed: 0 to " + std::to_string(steps - 1) : std::string();
}

/// ClockOffset as --json gives it: found, either way, with what shows it.
json offset_json(const ClockOffset& o) {
  return {{"found", o.found()},
          {"least_delay_ns", o.least_delay_ns},
          {"late_items", o.idle_waits.size()},
          {"early_items", o.early.size()},
          {"async_launches", o.async_launches},
          {"most_early_ns", o.most_early_ns},
          {"drift_from_ns", o.drift_from_ns},
          {"drift_to_ns", o.drift_to_ns},
          {"drift_span_ns", o.drift_span_ns},
          {"drift_device", o.drift_device}};
}

// summary --json: the figures of "what this trace says" as data, for the docs' fig markers
// (scripts/docs_page.py reads them by dotted key: steps.median_ns, gpu.busy_share, ...).
// Keys ending in _ns are nanoseconds, in share or _share fractions 0..1, in _bytes bytes.
json summary_json(const TraceIndex& index, IdleRule idle_rule) {
  const Trace& t = index.trace();
  const Summary m = summarize(index, idle_rule);
  const auto& d = m.step_ns;
  json j;
  j["steps"] = {{"count", d.size()},
                {"median_ns", d.empty() ? 0 : int64_t(m.steps.median)},
                {"first_ns", d.empty() ? 0 : d.front()},
                {"first_over_median", d.empty() || m.steps.median <= 0 ? 0.0 : double(d.front()) / m.steps.median},
                {"durations_ns", d},
                {"processes", m.step_processes},
                // The last step range the profiler's stop cut short, left out of the figures.
                {"cut_short", index.cut_short_step < 0 ? json(nullptr)
                                                       : json(t.events[size_t(index.cut_short_step)].name)}};
  // What the profiler logged that says GPU events are missing (its messages, as check lists them).
  j["profiler_gpu_loss"] = profiler_messages(t, !index.device_work().empty()).gpu_loss;
  // What else says the trace is partial, as the text's lines: GPU events that stop early (their
  // likelier cause), a device used without its work recorded, no operator or range.
  j["gpu_events_stop_early"] = nullptr;
  if (!index.device_work().empty())
    if (const LaunchExpectations x = launch_expectations(index); x.stops_early())
      j["gpu_events_stop_early"] = {{"lost_calls", x.lost()}, {"expecting_calls", x.expecting.size()},
                                    {"after_recording", x.after_recording}, {"loss_logged", x.loss_logged},
                                    {"cause", lost_tail_cause(x)}};
  j["device_use"] = device_use_without_work(index).evidence();
  j["cuda_side_only"] = cuda_side_only(index);
  // The profiler's own work (CUPTI's overhead records): each, the step it is in, the longest CUDA
  // call during it, and the longest that spans it, synchronizes aside (its thread may have waited
  // for the profiler), with that call's step; where none spans it, the call of a thread with none
  // during it that began just after it (that thread most likely waited), and the operator it was in.
  j["profiler_overhead"] = json::array();
  for (const ProfilerOverhead& o : m.overhead) {
    const Event& e = t.events[o.event];
    json jo = {{"name", std::string(e.name)}, {"ts", trace_ts(e.start_ns)}, {"dur_ns", e.dur_ns},
               {"step", o.step >= 0 ? json(std::string(t.events[index.steps[size_t(o.step)]].name)) : json(nullptr)},
               {"longest_call", nullptr}, {"longest_call_ns", 0}, {"spanning_call", nullptr},
               {"spanning_call_ns", 0}, {"spanning_call_step", nullptr}, {"resumed_call", nullptr},
               {"resumed_call_ns", 0}, {"resumed_after_ns", 0}, {"resumed_call_step", nullptr},
               {"held_op", nullptr}, {"held_op_ns", 0}};
    if (o.longest_call != ProfilerOverhead::npos) {
      jo["longest_call"] = std::string(t.events[o.longest_call].name);
      jo["longest_call_ns"] = t.events[o.longest_call].dur_ns;
    }
    if (o.spanning_call != ProfilerOverhead::npos) {
      jo["spanning_call"] = std::string(t.events[o.spanning_call].name);
      jo["spanning_call_ns"] = t.events[o.spanning_call].dur_ns;
      if (o.spanning_step >= 0) jo["spanning_call_step"] = std::string(t.events[index.steps[size_t(o.spanning_step)]].name);
    }
    if (o.resumed_call != ProfilerOverhead::npos) {
      const Event& call = t.events[o.resumed_call];
      jo["resumed_call"] = std::string(call.name);
      jo["resumed_call_ns"] = call.dur_ns;
      jo["resumed_after_ns"] = call.start_ns - e.end_ns();
      if (o.resumed_step >= 0) jo["resumed_call_step"] = std::string(t.events[index.steps[size_t(o.resumed_step)]].name);
    }
    if (o.held_op != ProfilerOverhead::npos) {
      jo["held_op"] = std::string(t.events[o.held_op].name);
      jo["held_op_ns"] = t.events[o.held_op].dur_ns;
    }
    j["profiler_overhead"].push_back(jo);
  }
  // CUDA's own work in CUPTI's overhead records (lazy loading, the driver compiling, the launch
  // queue full): per name, its records, their time, the longest and the call it was inside.
  j["cuda_overhead"] = json::array();
  for (const CudaOverhead& o : m.cuda_overhead) {
    const Event& r = t.events[o.longest];
    json jo = {{"name", std::string(o.name)}, {"kind", o.kind}, {"records", o.records}, {"total_ns", o.total_ns},
               {"longest_ts", trace_ts(r.start_ns)}, {"longest_ns", r.dur_ns}, {"in_call", nullptr}, {"in_call_ns", 0}};
    if (o.in_call != CudaOverhead::npos) {
      jo["in_call"] = std::string(t.events[o.in_call].name);
      jo["in_call_ns"] = t.events[o.in_call].dur_ns;
    }
    j["cuda_overhead"].push_back(jo);
  }
  const KeyAverages& ka = index.key_averages();
  j["self_cpu_total_ns"] = ka.self_cpu_total_ns;
  j["top_ops"] = json::array();
  for (const KeyAverage* op : m.top_ops)
    j["top_ops"].push_back({{"name", op->name},
                            {"self_cpu_ns", op->self_cpu_ns},
                            {"share", ka.self_cpu_total_ns ? double(op->self_cpu_ns) / double(ka.self_cpu_total_ns) : 0.0}});
  j["ranges"] = json::object();
  for (size_t k = 0; k < m.ranges.size(); ++k) {
    const KeyAverage* r = m.ranges[k];
    j["ranges"][r->name] = {{"calls", r->calls},
                            {"cpu_per_step_ns", m.range_times.span_ns[k] / m.per},
                            {"gpu_launched_per_step_ns", m.range_times.launched_ns[k] / m.per},
                            {"gpu_launched_elsewhere_per_step_ns", m.range_times.elsewhere_ns[k] / m.per},
                            {"threads", m.range_times.threads[k]},
                            {"device_per_step_ns", r->device_total_ns / m.per}};
  }
  j["memory"] = memory_json(index.memory());
  if (index.device_work().empty()) {  // a CPU run
    j["gpu"] = nullptr;
    return j;
  }
  json g;
  g["top_kernel"] = nullptr;  // copies and sets alone
  if (!m.kernels.empty()) {
    const KernelRow& top = m.kernels.front();
    g["top_kernel"] = {{"name", top.name}, {"share", top.share}, {"calls", top.time.count},
                       {"median_ns", int64_t(top.time.median)}, {"min_ns", top.time.min},
                       {"max_ns", top.time.max}, {"mean_ns", int64_t(top.time.mean)}};
  }
  g["work_items_per_step"] = m.work_items_per_step.value_or(0);
  const StreamReport& sr = m.streams;
  const StreamReport::Totals tot = sr.totals();
  auto share = [](int64_t a, int64_t b) { return b ? double(a) / double(b) : 0.0; };
  g["window_ns"] = sr.window_ns();
  g["busy_ns"] = sr.busy_ns;
  g["busy_share"] = sr.busy_share();
  g["overlap_share"] = share(sr.overlap_ns, sr.window_ns());
  g["streams"] = json::array();
  for (const StreamRow& row : sr.streams)
    g["streams"].push_back({{"device", row.device}, {"stream", row.stream},
                            {"busy_ns", row.busy_ns}, {"busy_share", row.utilization()}});
  g["past_last_step_ns"] = index.steps.empty() ? 0 : std::max<int64_t>(0, index.gpu_window_end - index.window_end);
  g["outside_steps"] = {{"work_items", sr.outside_steps_work_items},
                        {"busy_ns", sr.outside_steps_busy_ns}};
  g["idle"] = {{"rule", to_string(idle_rule)},
               {"host_wait_ns", tot.host_wait_ns},
               {"kernel_wait_ns", tot.kernel_wait_ns},
               {"other_ns", tot.other_idle_ns},
               {"host_wait_share", share(tot.host_wait_ns, tot.idle_ns())},
               {"kernel_wait_share", share(tot.kernel_wait_ns, tot.idle_ns())},
               {"other_share", share(tot.other_idle_ns, tot.idle_ns())}};
  const LaunchReport& lr = m.launches;
  g["launches"] = lr.delay.count;
  g["launch_latency"] = {{"count", lr.latency.count},
                         {"median_ns", int64_t(lr.latency.median)},
                         {"max_ns", lr.latency.max},
                         {"slow", lr.slow_latency()}};
  g["in_call"] = lr.in_call;
  g["queueing"] = {{"count", lr.queueing.count}, {"median_ns", int64_t(lr.queueing.median)}};
  g["waited"] = {{"count", lr.waited.count},
                 {"median_ns", int64_t(lr.waited.median)},
                 {"max_ns", lr.waited.max}};
  g["kernel_launches"] = lr.kernel_launches;
  g["shorter_than_call"] = lr.shorter_than_call;
  g["gpu_clock_offset"] = offset_json(m.clock_offset);
  g["synchronizes"] = json::array();
  for (const SyncRow& y : m.syncs)
    g["synchronizes"].push_back({{"call", std::string(t.events[y.call].name)},
                                 {"dur_ns", t.events[y.call].dur_ns},
                                 {"gpu_busy_ns", y.gpu_busy_ns},
                                 {"gpu_idle_share", y.idle_share(t)}});
  j["gpu"] = g;
  return j;
}

// An --out that cannot be written (no such folder, a folder, a full disk) is the user's to fix:
// one line and exit 2, not an internal error.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void write_out(const std::string& path, std::string_view text, pil::Gzip gzip = pil::Gzip::No) {
  try {
    pil::write_text_atomically(path, text, gzip);
  } catch (const std::runtime_error& e) {
    throw OutputError(e.what());
  }
}

// One line on stderr when the reader skipped arguments of an unexpected type (nothing when it
// skipped none, so stdout and stderr stay as they were).
void note_skipped(const std::string& path, const SkippedFields& skipped) {
  if (!skipped.any()) return;
  std::string fields;
  for (size_t k = 0; k < SkippedFields::kKinds; ++k)
    if (skipped.count[k])
      fields += std::string(fields.empty() ? "" : ", ") + "'" + SkippedFields::kNames[k] + "' " +
                std::to_string(skipped.count[k]);
  std::cerr << "pil-trace: note: " << path << ": " << skipped.events
            << " event(s) had an argument of an unexpected type, read as absent (" << fields
            << ")\n";
}

/// "28 begin/end events (...), 25,814 mtia_ccp_events events": what the reader counted and did
/// not read (Trace::unread), or empty.
std::string unread_text(const std::map<std::string, int64_t>& unread) {
  std::string text, devices;
  for (const auto& [kind, n] : Trace::unread_device_events(unread))
    devices += std::string(devices.empty() ? "" : ", ") + grouped(n) + " " + kind;
  if (const auto be = unread.find(Trace::kUnreadBeginEnd); be != unread.end())
    text = grouped(be->second) + " begin/end events (\"ph\": \"B\", \"E\"; pil-trace reads complete "
           "events, \"X\", as torch.profiler and Kineto write them)";
  if (const auto async = unread.find(Trace::kUnreadAsync); async != unread.end())
    text += std::string(text.empty() ? "" : "; ") + grouped(async->second) +
            " async events (\"ph\": \"b\", \"e\", \"n\": another tool's spans, not a profiler's; "
            "pil-trace reads torch.profiler's and Kineto's traces)";
  if (const auto legacy = unread.find(Trace::kUnreadLegacyCuda); legacy != unread.end())
    text += std::string(text.empty() ? "" : "; ") + grouped(legacy->second) +
            " \"CUDA functions\" events (the autograd profiler's GPU time of each operator, by CUDA events, "
            "before Kineto: not kernels on streams)";
  if (const auto ranges = unread.find(Trace::kUnreadCuptiRange); ranges != unread.end())
    text += std::string(text.empty() ? "" : "; ") + grouped(ranges->second) +
            " cuda_profiler_range events (CUPTI's range profiler: a kernel's counter metrics each, not its "
            "time on a stream; pil-trace reads the activity trace, Kineto's default)";
  if (!devices.empty())
    text += std::string(text.empty() ? "" : "; ") + devices +
            " events, of a device pil-trace does not model (its figures are the rest of the trace's)";
  return text;
}

void note_unread(const std::string& path, const std::map<std::string, int64_t>& unread) {
  if (const std::string text = unread_text(unread); !text.empty())
    std::cerr << "pil-trace: note: " << path << ": not read: " << text << "\n";
}

/// Why no command could say anything of trace `t`, read from `path`, as pil-trace's error line
/// without its "pil-trace: error: " (its path first); "" when it can be read. Said of each trace a
/// command reads (diff's second one too, which read an empty trace as everything "removed").
std::string unusable_trace_problem(const Trace& t, const std::string& path) {
  if (t.events.empty() && !t.unread.empty())  // events, none of a kind the reports read
    return path + ": no event pil-trace reads; the trace holds " + unread_text(t.unread);
  // Nothing but the span Kineto writes over every trace ("PyTorch Profiler (0)", cat "Trace"):
  // a schedule whose active steps were never reached, or a cycle exported after it ended, is
  // torch.profiler's empty trace, not another tool's (the check below said so).
  // Steps and nothing in them, too: a cycle exported just as the next began (torch.profiler's
  // schedule with repeat: its last file held ProfilerStep#4, 74 us, and no operator), of which
  // advise said "at most the whole basis faster: untraced work".
  const bool only_profiler_span =
      !t.events.empty() && std::all_of(t.events.begin(), t.events.end(), is_profiler_span);
  const size_t steps = size_t(std::count_if(t.events.begin(), t.events.end(), is_step));
  const bool only_empty_steps =
      steps > 0 && std::all_of(t.events.begin(), t.events.end(), [](const Event& e) { return is_profiler_span(e) || is_step(e); });
  if (t.events.empty() || only_profiler_span || only_empty_steps)  // valid, with nothing any command could say of
    return path +
           (only_empty_steps ? ": the trace holds only " + count_of(int64_t(steps), "profiled step", "profiled steps") +
                                   (steps == 1 ? " with nothing in it" : " with nothing in them") + " and the profiler's span ("
            : only_profiler_span ? std::string(": the trace holds only the profiler's own span (")
                                 : std::string(": the trace has no events (")) +
           "its traceEvents holds no operator, named range, kernel or memory event): the profiler "
           "recorded nothing; allowed: a trace with work recorded (with a schedule, at least one "
           "step in its active phase before the trace is written; without one, work between the "
           "profiler's start and stop)";
  // Slices, but none of a category the reports read: another tool's trace in the same format
  // (a line profiler's "Line 12" slices) was read as an empty CPU run, "no findings".
  if (std::all_of(t.events.begin(), t.events.end(), [](const Event& e) { return e.category == Category::Other; }))
    return path + ": no event pil-trace reads: its " + std::to_string(t.events.size()) +
           " events are none of them an operator, range, CUDA call, GPU work or allocation (their "
           "categories are not torch.profiler's: cpu_op, user_annotation, cuda_runtime, kernel...); "
           "allowed: a trace torch.profiler or Kineto wrote";
  return "";
}

int report_ops(const Trace& t, const std::string& sort, int rows, bool as_json) {
  KeyAverages k = key_averages(t);
  if (as_json) {
    const json j = {{"self_cpu_total_ns", k.self_cpu_total_ns},
                    {"self_device_total_ns", k.self_device_total_ns},
                    {"operators", operators_json(k)}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  TableOptions o;
  o.row_limit = rows;
  if (!sort.empty()) {
    auto key = parse_sort_key(sort);
    if (!key) {
      std::cerr << "pil-trace: error: --sort: unknown key '" << sort
                << "'; allowed: " << sort_key_names() << "\n";
      return 2;
    }
    o.sort = *key;
  } else {
    o.sort = k.has_device_time() ? SortKey::DeviceTotal : SortKey::CpuTotal;
  }
  python_float_times(k, t);  // the averages' last digit as Python rounds it (the table only)
  std::cout << format_table(k, o);
  return 0;
}

// ops --roofline: refused, in one line, for a trace recorded without shapes.
int report_roofline(const TraceIndex& index, const std::string& path, const RooflineOptions& o,
                    int rows, bool as_json) {
  if (!has_recorded_inputs(index.trace())) {
    const Trace& t = index.trace();
    const bool ops = std::any_of(t.events.begin(), t.events.end(),
                                 [](const Event& e) { return e.category == Category::CpuOp; });
    std::cerr << "pil-trace: error: " << path
              << (ops ? ": no operator input shapes in the trace (Input Dims): record it with shapes (the lessons' "
                        "--record-shapes on, torch.profiler's record_shapes=True)\n"
                      : ": no operators in the trace (cpu_op), so no shapes to count: record the CPU's "
                        "operators (torch.profiler's ProfilerActivity.CPU) while the work runs\n");
    return 2;
  }
  const RooflineReport r = roofline_report(index, o);
  if (as_json) std::cout << roofline_json(r, o).dump(2) << "\n";
  else std::cout << format_roofline(r, o, rows);
  return 0;
}

int report_kernels(const TraceIndex& index, const std::string& range, bool as_json) {
  // A name no slice has is a mistake (a typo), not a range that launched nothing.
  if (!range.empty() && slices_named(index.trace(), range).empty()) {
    std::cerr << "pil-trace: error: --range: no slice named '" << range
              << "' (an operator or a named range on the CPU; `pil-trace ops` lists them)\n";
    return 2;
  }
  const auto rows = kernel_report(index, range);
  if (as_json) {
    json j = json::array();
    for (const auto& r : rows) {
      json row = {{"name", r.name}, {"share", r.share}, {"time", stats_json(r.time)}};
      auto launch = [](const KernelInfo& k) {
        return json{{"grid", k.grid},
                    {"block", k.block},
                    {"registers_per_thread", k.registers},
                    {"shared_memory_bytes", k.shared_memory},
                    {"blocks_per_sm", k.blocks_per_sm},
                    {"est_occupancy_pct", k.est_occupancy_pct}};
      };
      if (r.launch) row["launch"] = launch(*r.launch);  // the shape with the most time
      row["launch_shapes"] = json::array();
      for (const KernelShape& k : r.shapes) {
        json one = launch(k.launch);
        if (!k.known)  // the calls whose shape the trace does not give
          for (auto& [key, value] : one.items()) value = nullptr;
        one["calls"] = k.calls;
        one["total_ns"] = k.total_ns;
        row["launch_shapes"].push_back(one);
      }
      j.push_back(row);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto headers = kStatHeaders;
  headers.push_back("Grid Block Regs Smem");
  headers.push_back("Est. occ. %");
  headers.push_back("Name");
  TextTable table(headers);
  bool several = false, no_estimate = false;
  for (const auto& r : rows) {
    auto cells = stats_cells(r.time, r.share);
    // A name that ran with several shapes: the one with the most time, marked with how many more.
    // "-": the calls with the most time have no shape in the trace.
    cells.push_back((r.shapes.size() > 1 && !r.launch ? std::string("-") : shape(r.launch)) +
                    (r.shapes.size() > 1 ? " +" + std::to_string(r.shapes.size() - 1) : ""));
    several = several || r.shapes.size() > 1;
    // Kineto's estimate, min(the blocks the occupancy calculator fits per SM, the grid's blocks per
    // SM) x block size / the SM's threads, in whole percent: 0 where the calculator fit no block
    // (it is given no opted-in shared memory: cuDNN's cutlass_tensorop_s1688fprop kernels, 80
    // calls in a public RTX 5070 Ti trace), -100 where it failed. No kernel that ran had either.
    cells.push_back(r.launch && r.launch->est_occupancy_pct > 0 ? fixed(r.launch->est_occupancy_pct) : "-");
    // 0 or -100: the trace gave an estimate that is none; -1: it gave none (a ROCm trace).
    no_estimate = no_estimate || (r.launch && (r.launch->est_occupancy_pct == 0 || r.launch->est_occupancy_pct <= -100));
    cells.push_back(r.name);
    table.add(cells);
  }
  if (rows.empty()) std::cout << "no kernels" << (range.empty() ? "" : " launched inside " + range) << "\n";
  else std::cout << table.str();
  if (several)
    std::cout << "+N: the kernel ran with N more launch shapes; the shape and occupancy shown are those of the "
                 "calls with the most time, \"-\" where the trace gives theirs none (--json: launch_shapes, each "
                 "with its calls and time)\n";
  if (no_estimate)
    std::cout << "Est. occ. \"-\" beside a launch shape: where the trace gives an estimate, it is 0 or -100, Kineto's occupancy "
                 "calculator having fit no block (a kernel that opts in to more shared memory than the default, "
                 "or a cluster launch) or failed: no estimate, not an idle kernel\n";
  return 0;
}

int report_api(const TraceIndex& index, bool as_json) {
  const auto rows = api_report(index);
  if (as_json) {
    json j = json::array();
    for (const auto& r : rows) j.push_back({{"name", r.name}, {"share", r.share}, {"time", stats_json(r.time)}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto headers = kStatHeaders;
  headers.push_back("Name");
  TextTable table(headers);
  for (const auto& r : rows) {
    auto cells = stats_cells(r.time, r.share);
    cells.push_back(r.name);
    table.add(cells);
  }
  if (rows.empty()) std::cout << "no CUDA runtime or driver calls (a CPU-only trace)\n";
  else std::cout << table.str();
  return 0;
}

int report_launches(const TraceIndex& index, size_t top, bool as_json) {
  const Trace& t = index.trace();
  const LaunchReport r = launch_report(index);
  const ClockOffset offset = gpu_clock_offset(index);
  std::vector<const Launch*> worst;
  for (const auto& l : r.launches) worst.push_back(&l);
  std::sort(worst.begin(), worst.end(),
            [](const Launch* a, const Launch* b) { return a->delay_ns > b->delay_ns; });
  if (worst.size() > top) worst.resize(top);
  if (as_json) {
    json j = {{"launches", r.launches.size()},
              {"delay_clipped", stats_json(r.delay)},
              {"launch_latency", stats_json(r.latency)},
              {"slow_launch_latency", r.slow_latency()},
              {"in_call", r.in_call},
              {"queueing", stats_json(r.queueing)},
              {"waited", stats_json(r.waited)},
              {"kernel_launches", r.kernel_launches},
              {"work_shorter_than_call", r.shorter_than_call},
              {"graph_launches", r.graph_launches},
              {"graph_work_items", r.graph_work_items},
              {"graph_kernels", r.graph_kernels},
              {"graph_memsets", r.graph_memsets},
              {"graph_copies", r.graph_copies},
              {"gpu_clock_offset", offset_json(offset)},
              {"largest_delays", json::array()},
              {"outliers", json::array()}};
    for (const Launch* l : worst)
      j["largest_delays"].push_back({{"call", std::string(t.events[l->call].name)},
                                     {"work", std::string(t.events[l->first_work].name)},
                                     {"delay_ns", l->delay_ns},
                                     {"kind", l->kind()},
                                     {"queue_ns", l->queue_ns},
                                     {"work_items", l->work_count}});
    for (size_t k = 0; k < r.outliers.size(); ++k) {
      const Event& e = t.events[r.outliers[k]];
      j["outliers"].push_back({{"kernel", std::string(e.name)},
                               {"start_ns", e.start_ns},
                               {"dur_ns", e.dur_ns},
                               {"median_ns", r.outlier_median_ns[k]}});
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (r.launches.empty()) {
    std::cout << "no launches with GPU work (a CPU-only trace, or no correlation ids)\n";
    return 0;
  }
  static constexpr const char* kKinds[] = {"two", "three", "four"};
  auto stats = [](const DurationStats& d) {
    return "median " + grouped((long long)d.median) + " ns, mean " + grouped((long long)d.mean) +
           " ns, max " + grouped(d.max) + " ns";
  };
  std::cout << count_of(int64_t(r.launches.size()), "launch", "launches") << "; delay = GPU work start - launch call end "
            << "(clipped at 0), in " << kKinds[(r.waited.count > 0) + (r.in_call > 0)] << " kinds:\n"
            << "  launch latency (the stream was idle when the call returned): "
            << count_of(r.latency.count, "launch", "launches") << (r.latency.count ? ", " + stats(r.latency) : "")
            << (r.slow_latency() ? std::string(" (") + kSlowLatencyWhy + ")" : std::string()) << "\n"
            << "  queueing (earlier work still ran on the stream): "
            << count_of(r.queueing.count, "launch", "launches") << (r.queueing.count ? ", " + stats(r.queueing) : "") << "\n"
            << (r.waited.count ? "  waited (the stream idle, the work started more than " +
                                     format_duration(kLatencyAfterReturnNs) +
                                     " after the call returned: on another stream's event, or on "
                                     "work or a clock the trace does not show" +
                                     (r.slow_latency() ? std::string("; at this slow latency, perhaps the launch's latency too")
                                                       : std::string()) +
                                     "): " +
                                     count_of(r.waited.count, "launch", "launches") + ", " + stats(r.waited) + "\n"
                               : std::string())
            << (r.in_call ? "  in their calls (a copy or set that ran before its call returned: the call waited for it, "
                            "synchronous or from pageable memory): " +
                                count_of(r.in_call, "launch", "launches") + "\n"
                          : std::string())
            << (r.waited.count || r.in_call ? "  all together: " : "  both together: ") << stats(r.delay) << "\n"
            << (r.kernel_launches ? std::to_string(r.shorter_than_call) + " of " + std::to_string(r.kernel_launches) +
                                        " kernel launches ran a kernel shorter than the launch call" +
                                        (r.graph_launches ? " (a graph launch: its first kernel)" : "") + "\n"
                                  : std::string("no kernel launches (copies and sets only)\n"));
  if (offset.found()) std::cout << offset_note(offset) << "\n";
  if (r.graph_launches)
    std::cout << count_of(r.graph_launches, "launch", "launches") << " ran several GPU work items (graphs): "
              << graph_work_text(r) << " in all\n";
  TextTable table({"Delay (ns)", "Queued (ns)", "Kind", "Items", "Launch", "GPU work"});
  for (const Launch* l : worst)
    table.add({grouped(l->delay_ns), grouped(l->queue_ns), l->queued || l->waited || l->in_call ? l->kind() : "latency",
               std::to_string(l->work_count), std::string(t.events[l->call].name),
               std::string(t.events[l->first_work].name)});
  std::cout << "largest delays (as measured, not clipped: a negative one is work that started before "
               "its call returned, as a copy whose call waits for it):\n"
            << table.str();
  if (!r.outliers.empty()) {
    const size_t shown = std::min<size_t>(r.outliers.size(), top);
    std::cout << count_of(int64_t(r.outliers.size()), "outlier kernel", "outlier kernels")
              << ", over 2x the median of their name and launch shape (and their matrix product's input "
                 "shapes, where recorded)"
              << (shown < r.outliers.size() ? " (the " + std::to_string(shown) +
                                                  " with the most time over it; --top for more)"
                                            : std::string(" (the most time over it first)"))
              << ":\n";
    TextTable table({"Time (ns)", "Median (ns)", "Name"});
    for (size_t k = 0; k < shown; ++k) {
      const Event& e = t.events[r.outliers[k]];
      table.add({grouped(e.dur_ns), grouped(r.outlier_median_ns[k]), std::string(e.name)});
    }
    std::cout << table.str();
  }
  return 0;
}

int report_memory(const TraceIndex& index, bool as_json) {
  const auto& rows = index.memory();
  if (as_json) {
    std::cout << memory_json(rows).dump(2) << "\n";
    return 0;
  }
  if (rows.empty()) {
    std::cout << "no memory events (record with profile_memory on: the lessons' --profile-memory)\n";
    return 0;
  }
  TextTable table({"Device", "Allocs", "Frees", "Allocated", "Peak", "Held at end", "Allocator peak",
                   "Peak in range", "Peak in op"});
  for (const auto& r : rows)
    table.add({device_label(r), grouped(r.allocations),
               grouped(r.frees), format_bytes(r.allocated_bytes), format_bytes(r.peak_growth),
               format_bytes(r.end_growth), r.peak_total >= 0 ? format_bytes(r.peak_total) : "-",
               r.peak_range.empty() ? "-" : r.peak_range, r.peak_op.empty() ? "-" : r.peak_op});
  std::cout << table.str()
            << "Peak and held: above what was allocated when recording began; allocator peak: its "
               "own total at that moment, where the trace records it; - where the peak came outside "
               "every range or operator, or the trace records no total\n";
  return 0;
}

int report_streams(const TraceIndex& index, double gap_us, IdleRule idle_rule, bool as_json) {
  const Trace& t = index.trace();
  const StreamReport r = stream_report(index, int64_t(gap_us * 1000), idle_rule);
  const std::vector<SyncRow> syncs = sync_report(index);
  if (as_json) {
    json j = {{"window_start_ns", r.window_start},
              {"window_end_ns", r.window_end},
              {"gap_threshold_ns", r.gap_threshold_ns},
              {"idle_rule", to_string(idle_rule)},
              {"busy_ns", r.busy_ns},
              {"busy_share", r.busy_share()},
              {"overlap_ns", r.overlap_ns},
              {"outside_steps", {{"work_items", r.outside_steps_work_items},
                                 {"busy_ns", r.outside_steps_busy_ns}}},
              {"without_launch_work_items", r.without_launch_work_items},
              {"before_recording_work_items", r.before_recording_work_items},
              {"streams", json::array()},
              {"steps", json::array()},
              {"synchronizes", json::array()}};
    for (const auto& s : r.streams)
      j["streams"].push_back({{"device", s.device},
                              {"stream", s.stream},
                              {"window_ns", s.window_ns},
                              {"busy_ns", s.busy_ns},
                              {"host_wait_ns", s.host_wait_ns},
                              {"kernel_wait_ns", s.kernel_wait_ns},
                              {"other_idle_ns", s.other_idle_ns},
                              {"work_items", s.work_items},
                              {"utilization", s.utilization()}});
    for (const auto& s : r.steps)
      j["steps"].push_back({{"step", s.step},
                            {"duration_ns", s.duration_ns},
                            {"launched", {{"busy_ns", s.launched_busy_ns},
                                          {"work_items", s.launched_work_items},
                                          {"kernels", s.launched_kernels},
                                          {"to_gpu_end_ns", s.to_gpu_end_ns}}},
                            {"in_wall_time", {{"busy_ns", s.busy_ns}, {"work_items", s.kernels}}}});
    for (const auto& y : syncs)
      j["synchronizes"].push_back({{"call", std::string(t.events[y.call].name)},
                                   {"start_ns", t.events[y.call].start_ns},
                                   {"dur_ns", t.events[y.call].dur_ns},
                                   {"gpu_busy_ns", y.gpu_busy_ns},
                                   {"work_items", y.work_items},
                                   {"gpu_idle_share", y.idle_share(t)}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (r.streams.empty()) {
    std::cout << "no GPU work in this trace\n";
    return 0;
  }
  std::cout << "window " << grouped(r.window_ns()) << " ns ("
            << (index.steps.empty() ? "the whole trace" : "the steps and every GPU work item") << "); ";
  if (idle_rule == IdleRule::Hta)
    std::cout << "idle split by Holistic Trace Analysis's rule: gaps between consecutive work items "
                 "in start order (overlaps not merged, times rounded to whole us as HTA does), host "
                 "wait when the next item's launch call started after the previous item ended, "
                 "kernel wait for gaps under "
              << grouped(r.gap_threshold_ns) << " ns\n";
  else
    std::cout << "kernel wait = gaps up to " << grouped(r.gap_threshold_ns) << " ns\n";
  TextTable table({"Device", "Stream", "Busy (%)", "Busy (ns)", "Host wait (ns)",
                   "Kernel wait (ns)", "Other idle (ns)", "Work items"});
  for (const auto& s : r.streams)
    table.add({std::to_string(s.device), std::to_string(s.stream), fixed(100 * s.utilization()),
               grouped(s.busy_ns), grouped(s.host_wait_ns), grouped(s.kernel_wait_ns),
               grouped(s.other_idle_ns), grouped(s.work_items)});
  std::cout << table.str();
  std::cout << "GPU busy (any stream): " << fixed(100 * r.busy_share()) << "% of the window, "
            << grouped(r.busy_ns) << " ns";
  if (r.streams.size() > 1)
    std::cout << "; two or more streams at once " << grouped(r.overlap_ns) << " ns";
  std::cout << "\n";
  if (!r.steps.empty()) {
    TextTable steps({"Step (ns)", "Launched: busy (ns)", "Work items", "Kernels",
                     "Start to GPU end (ns)", "In wall time: busy (%)", "Busy (ns)", "Work items",
                     "Step"});
    for (const auto& s : r.steps)
      steps.add({grouped(s.duration_ns), grouped(s.launched_busy_ns), grouped(s.launched_work_items),
                 grouped(s.launched_kernels), grouped(s.to_gpu_end_ns),
                 fixed(s.duration_ns ? 100.0 * double(s.busy_ns) / double(s.duration_ns) : 0),
                 grouped(s.busy_ns), grouped(s.kernels), s.step});
    std::cout << "per profiler step (all streams): the GPU work each step launched, wherever it ran, "
                 "and the GPU time inside the step's wall time:\n"
              << steps.str();
    if (r.outside_steps_work_items)
      std::cout << r.outside_steps_work_items << " GPU work items (" << grouped(r.outside_steps_busy_ns)
                << " ns busy) belong to no step (launched outside every step or before recording "
                   "began; without a launch call, started outside every step)\n";
  }
  if (r.without_launch_work_items)
    std::cout << r.without_launch_work_items << " GPU work items have no launch call in the trace"
              << (r.steps.empty() ? " (no launch delay for them)\n"
                                  : ": placed in the step their own start falls in" +
                                        (r.before_recording_work_items
                                             ? ", but for the " + std::to_string(r.before_recording_work_items) +
                                                   " launched before recording began (correlation ids "
                                                   "before every launch call's): in none\n"
                                             : std::string("\n")));
  if (!syncs.empty()) {
    TextTable table({"Wait (ns)", "GPU busy (ns)", "GPU idle (%)", "Work items", "Synchronize"});
    for (const auto& y : syncs)
      table.add({grouped(t.events[y.call].dur_ns), grouped(y.gpu_busy_ns), fixed(100 * y.idle_share(t)),
                 grouped(y.work_items), std::string(t.events[y.call].name)});
    std::cout << "synchronize calls against the GPU work they covered (all streams; idle over half "
                 "the wait: not GPU-bound there):\n"
              << table.str();
  }
  return 0;
}

int report_check(const TraceIndex& index, const std::string& path, size_t examples, bool as_json) {
  const CheckReport r = check_trace(index, examples);
  if (as_json) {
    const ClockInfo& c = r.clock;
    json j = {{"events", r.events}, {"gpu_work", r.gpu_work}, {"launch_calls", r.launch_calls},
              {"steps", r.steps}, {"self_linked_gpu_work", r.self_linked},
              {"captured_launches", r.captured_launches},
              {"short_copies_without_work", r.short_copies_without_work},
              {"gpu_work_launched_before_recording", r.launched_before_recording},
              {"profiler_overhead", r.profiler_overhead},
              {"cuda_sync_events", r.cuda_sync_events},
              {"cuda_side_only", r.cuda_side_only},
              {"dependent_launch_overlaps", r.dependent_launch_overlaps},
              {"graph_branch_overlaps", r.graph_branch_overlaps},
              {"no_gpu_logged", r.no_gpu_logged.empty() ? json(nullptr) : json(r.no_gpu_logged)},
              {"clock", {{"unit", "us"},
                         {"base", c.base_time ? "baseTimeNanoseconds" : c.absolute ? "absolute epoch" : "relative"},
                         {"base_time_ns", c.base_time_ns},
                         {"finest_ns", c.finest_ns},
                         {"max_abs_ns", c.max_abs_ns},
                         {"double_step_ns", c.double_step_ns}}},
              {"findings", json::array()}};
    // Kineto's record counts (the trace's INFO log), null where the trace has none.
    j["profiler_counts"] = nullptr;
    if (const ProfilerCounts& k = r.profiler_counts; k.read)
      j["profiler_counts"] = {{"out_of_range", k.out_of_range},
                              {"blocklisted_runtime", k.blocklisted},
                              {"invalid_external_correlations", k.invalid_correlations},
                              {"cpu_gpu_out_of_order", k.out_of_order},
                              {"unexpected_events", k.unexpected},
                              {"stopped_early", k.stopped_early}};  // each -1 where the line gives none
    for (const CheckFinding& f : r.findings) {
      json row = {{"key", f.key}, {"title", f.title}, {"count", f.count}, {"examples", json::array()}};
      for (const CheckExample& e : f.examples)
        row["examples"].push_back({{"name", e.name},
                                   {"ts", untimed_finding(f.key) && !e.ts_ns ? json(nullptr) : json(trace_ts(e.ts_ns))},
                                   {"detail", e.detail}});
      j["findings"].push_back(row);
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << format_check(r, path);
  }
  return r.clean() ? 0 : 1;
}

// --range NAME --instance K where the trace has no K-th slice named NAME: how many it has.
void say_no_instance(const Trace& t, const std::string& name, size_t k) {
  const auto n = static_cast<long long>(slices_named(t, name).size());
  std::cerr << "pil-trace: error: --range: ";
  if (n == 0)
    std::cerr << "no slice named '" << name << "'\n";
  else
    std::cerr << counted(n, "slice") << " named '" << name << "', no instance " << k << "; allowed: --instance 0"
              << (n > 1 ? " to " + std::to_string(n - 1) : std::string()) << "\n";
}

int report_chain(const TraceIndex& index, const std::string& range, size_t instance, bool as_json) {
  const Trace& t = index.trace();
  const auto lines = chain_report(index, range, instance);
  if (lines.empty()) {  // chain_report's slices are slices_named's
    say_no_instance(t, range, instance);
    return 2;
  }
  if (lines.size() == 1 && !is_cpu_slice(t.events[lines[0].event].category)) {
    // Not on a thread's lane: the profiler's span ("PyTorch Profiler (0)", a lane of its own)
    // holds no operator there, where svg and slice take its time as a window.
    std::cerr << "pil-trace: error: --range: '" << range
              << "' holds no operator, range or CUDA call on its lane (the profiler's own span has a lane of "
                 "its own); allowed: a step, a named range or an operator (svg and slice take any slice's "
                 "time as a window)\n";
    return 2;
  }
  if (as_json) {
    json j = json::array();
    for (const auto& l : lines) {
      const Event& e = t.events[l.event];
      json row = {{"depth", l.depth},       {"name", std::string(e.name)}, {"gpu", l.gpu},
                  {"offset_ns", l.offset_ns}, {"dur_ns", e.dur_ns}};
      if (l.gpu)
        row["delay_ns"] = l.delay_ns, row["queued"] = l.queued,
        row["kind"] = l.kind(), row["stream"] = e.tid;
      if (e.correlation) row["correlation"] = e.correlation;
      j.push_back(row);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (const auto& l : lines) {
    const Event& e = t.events[l.event];
    std::cout << std::string(size_t(l.depth) * 2, ' ') << (l.gpu ? "=> GPU " : "") << e.name
              << "  [+" << grouped(l.offset_ns) << " ns, " << grouped(e.dur_ns) << " ns";
    if (l.gpu)
      std::cout << ", stream " << e.tid << ", starts " << grouped(l.delay_ns)
                << " ns after its launch call ends"
                << (l.queued   ? " (queued behind earlier work)"
                    : l.waited ? " (waited: on another stream's event, or on work or a clock the trace does not show)"
                    : l.in_call ? " (in its call: the call waited for it)"
                                : " (launch latency)");
    if (e.correlation) std::cout << ", correlation " << e.correlation;
    std::cout << "]\n";
  }
  // The chain follows the range's own thread: GPU work other threads of its process launched
  // meanwhile (autograd's threads in a backward range) is said in one line, not left out silently.
  if (const OtherThreadsWork other = launched_by_other_threads(index, lines[0].event); other.items)
    std::cout << "other threads of the process launched " << count_of(other.items, "GPU work item", "GPU work items")
              << " (" << format_duration(other.gpu_ns) << " on the GPU) while it ran: not in this chain, which "
              << "follows its own thread (`pil-trace summary` counts them beside the range)\n";
  return 0;
}

/// Why a trace's GPU rows and total are not the run's GPU work, for diff, or "": its GPU side not
/// recorded (calls that start GPU work, none in the trace), or GPU events that stop early.
std::string gpu_side_missing(const TraceIndex& index) {
  if (index.device_work().empty()) {
    if (const size_t calls = calls_starting_gpu_work(index); calls > 0)
      return counted(int64_t(calls), "call") + (calls == 1 ? " starts" : " start") +
             " GPU work and none is in the trace (its GPU side was not recorded, or lost)";
    if (const DeviceUseWithoutWork use = device_use_without_work(index); use.found())
      return "no GPU work in the trace, though the run used a device (" + use.evidence() + ")";
    return "";
  }
  if (const LaunchExpectations x = launch_expectations(index); x.stops_early())
    return "its GPU events stop early (the last " + count_of(int64_t(x.lost()), "launch", "launches") +
           " found no GPU work)";
  return "";
}

/// The names of the GPUs that ran a trace's work (deviceProperties), each model once, by name.
std::string gpus_used(const TraceIndex& index) {
  std::set<std::string> names;
  for (const TraceIndex::Stream& s : index.streams())
    if (const std::string_view n = index.trace().device_name(s.device); !n.empty()) names.insert(std::string(n));
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

/// CUDA's lazy loading in a trace (CUPTI's records): how many and how long, or {0, 0}.
std::pair<int64_t, int64_t> lazy_loading(const TraceIndex& index) {
  std::pair<int64_t, int64_t> n{0, 0};
  for (const CudaOverhead& o : cuda_overhead(index))
    if (std::string_view(o.kind) == "lazy loading") n.first += o.records, n.second += o.total_ns;
  return n;
}

int report_diff(const Trace& a, const Trace& b, double tolerance, bool as_json) {
  const TraceIndex index_a(a), index_b(b);
  const DiffReport d = diff_report(index_a, index_b, tolerance);
  // A trace whose GPU side is missing, in part or whole: its GPU rows are not the run's (a trace
  // that lost its GPU records read as the other "adding" every kernel and copy).
  const std::string missing[2] = {gpu_side_missing(index_a), gpu_side_missing(index_b)};
  for (int k = 0; k < 2; ++k)
    if (!missing[k].empty())
      std::cerr << "pil-trace: note: " << (k ? "B" : "A") << ": " << missing[k] << ": the GPU rows and totals lack "
                << "its missing work, so that work reads as " << (k ? "removed or faster" : "added or slower")
                << " in B, not a change of the program (pil-trace check on " << (k ? "B" : "A") << " says more)\n";
  // The times are each trace's totals: traces of different step counts differ by that alone
  // (a 3-step trace against a 1-step slice of itself read as every operator "faster").
  // The steps as every report counts them (TraceIndex's: a last one cut short left out).
  const auto steps_a = int64_t(index_a.steps.size()), steps_b = int64_t(index_b.steps.size());
  if (steps_a != steps_b)
    std::cerr << "pil-trace: note: A has " << counted(steps_a, "profiled step") << " and B " << steps_b
              << ": the times are each trace's totals, so they differ by the steps' count too; "
                 "compare traces of as many steps (pil-trace slice --step K cuts one out)\n";
  // GPU work an earlier, unrecorded step launched (a slice of step K holds step K-1's tail so):
  // left out of the rows and totals, said.
  const int64_t before[2] = {d.before_recording_a, d.before_recording_b},
                before_ns[2] = {d.before_recording_ns_a, d.before_recording_ns_b};
  for (int k = 0; k < 2; ++k)
    if (before[k] > 0)
      std::cerr << "pil-trace: note: " << (k ? "B" : "A") << ": " << count_of(before[k], "GPU work item", "GPU work items")
                << " (" << format_duration(before_ns[k]) << ") launched before its recording began (earlier "
                << "work still running: an earlier step's, or in a slice, launched before its span) left out of the rows "
                   "and totals\n";
  // Two GPUs, two clocks or two builds: the figures differ by that too.
  const std::string gpus[2] = {gpus_used(index_a), gpus_used(index_b)};
  if (!gpus[0].empty() && !gpus[1].empty() && gpus[0] != gpus[1])
    std::cerr << "pil-trace: note: A ran on " << gpus[0] << ", B on " << gpus[1]
              << ": the GPU times differ by the GPUs too\n";
  if (d.respelled > 0)
    std::cerr << "pil-trace: note: " << count_of(d.respelled, "kernel", "kernels")
              << " compared across two spellings of " << (d.respelled == 1 ? "its name" : "their names")
              << " (at::detail::Array or std::array, 2ul or 2: two builds of torch), under A's\n";
  const auto lazy_a = lazy_loading(index_a), lazy_b = lazy_loading(index_b);
  if ((lazy_a.second > 0) != (lazy_b.second > 0)) {
    const bool in_a = lazy_a.second > 0;
    const auto& l = in_a ? lazy_a : lazy_b;
    std::cerr << "pil-trace: note: " << (in_a ? "A" : "B") << " has CUDA's lazy loading ("
              << count_of(l.first, "record", "records") << ", " << format_duration(l.second)
              << ": kernels' code loaded at their first launch, a one-time cost) and " << (in_a ? "B" : "A")
              << " none: a cold run against a warm one; warm both up before recording (pil-trace summary says "
                 "where it was paid)\n";
  }
  if (as_json) {
    json j = {{"steps", {steps_a, steps_b}},
              {"gpu_side_missing", {missing[0], missing[1]}},
              {"gpus", {gpus[0], gpus[1]}},
              {"launched_before_recording", {before[0], before[1]}},
              {"launched_before_recording_ns", {before_ns[0], before_ns[1]}},
              {"respelled_kernels", d.respelled},
              {"lazy_loading_ns", {lazy_a.second, lazy_b.second}},
              {"clock_step_ns", d.clock_step_ns},
              {"cpu_total_ns", {d.cpu_a, d.cpu_b}},
              {"device_total_ns", {d.device_a, d.device_b}},
              {"kernels", {d.kernels_a, d.kernels_b}},
              {"rows", json::array()}};
    for (const auto& r : d.rows)
      j["rows"].push_back({{"name", r.name},
                           {"device", r.device},
                           {"change", to_string(r.change)},
                           {"calls", {r.calls_a, r.calls_b}},
                           {"time_ns", {r.time_a, r.time_b}}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  TextTable table({"Change", "Calls A", "Calls B", "Time A (ns)", "Time B (ns)", "B - A (ns)", "Name"});
  for (const auto& r : d.rows)
    table.add({to_string(r.change), grouped(r.calls_a), grouped(r.calls_b), grouped(r.time_a),
               grouped(r.time_b), grouped(r.time_b - r.time_a),
               r.name + (r.device ? " [GPU]" : "")});
  std::cout << table.str() << "totals: self CPU " << grouped(d.cpu_a) << " -> " << grouped(d.cpu_b)
            << " ns; GPU " << grouped(d.device_a) << " -> " << grouped(d.device_b)
            << " ns; kernels " << d.kernels_a << " -> " << d.kernels_b << "\n";
  return 0;
}

/// The value flags of a command (those that take one value), by their "--name".
std::map<std::string, const CLI::Option*> value_flags(const CLI::App& command) {
  std::map<std::string, const CLI::Option*> flags;
  for (const CLI::Option* opt : command.get_options())
    if (opt->get_expected_max() > 0)
      for (const auto& n : opt->get_lnames()) flags["--" + n] = opt;
  return flags;
}

/// What the parser would say in its own words, said plainly before it runs, or "" when the line
/// is fine so far: no command, a command pil-trace lacks (with the one a typo away), or a value
/// flag with no value after it ("--out" last, before another flag, or "--out="; CLI11 said "1
/// required TEXT missing").
std::string before_parsing(CLI::App& app, int argc, char** argv) {
  const std::string word = argc < 2 ? "" : argv[1];
  std::vector<std::string> names;
  std::string allowed;
  const CLI::App* command = nullptr;
  for (const CLI::App* c : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(c->get_name());
    allowed += (allowed.empty() ? "" : "|") + c->get_name();
    if (c->get_name() == word) command = c;
  }
  if (argc < 2) return "no command given; allowed: " + allowed + " (--help says what each does)";
  if (word.rfind("-", 0) == 0) {
    if (word == "--help" || word == "-h") return "";  // the parser's to answer
    // A flag before the command: a command's flags come after it (CLI11 said "--json: not a
    // flag of pil-trace summary (did you mean --json?)", or "A subcommand is required").
    const std::string flag = word.substr(0, word.find('='));
    for (int k = 2; k < argc; ++k)
      for (const std::string& n : names)
        if (argv[k] == n)
          return flag + ": given before the command; allowed: pil-trace " + n + " TRACE " + flag +
                 " (a command's flags come after it)";
    return flag + ": not a flag of pil-trace itself; allowed: a command first (" + allowed +
           "), then its flags, or --help";
  }
  if (!command) {
    const std::string nearest = pil::nearest_name(word, names);
    return word + ": not a command" + (nearest.empty() ? "" : " (did you mean " + nearest + "?)") + "; allowed: " + allowed;
  }
  const auto flags = value_flags(*command);
  std::set<std::string> names_of_flags;
  for (const auto& f : flags) names_of_flags.insert(f.first);
  const std::vector<std::string> words(argv + 2, argv + argc);
  // A flag that takes no value, given one ("--json=nope": CLI11 said "Could not convert").
  for (const std::string& w : words) {
    const size_t eq = w.find('=');
    if (w.rfind("--", 0) != 0 || eq == std::string::npos) continue;
    const std::string flag = w.substr(0, eq);
    for (const CLI::Option* opt : command->get_options())
      if (opt->get_expected_max() == 0)
        for (const auto& n : opt->get_lnames())
          if ("--" + n == flag) return flag + ": takes no value ('" + w + "'); allowed: " + flag + " alone";
  }
  const std::vector<size_t> lacking = pil::flags_without_value(words, names_of_flags);
  if (lacking.empty()) return "";
  std::string flag = words[lacking.front()];
  if (flag.back() == '=') flag.pop_back();  // "--out=": no value either
  return flag + ": no value given; allowed: " + flag + " VALUE (" + flags.at(flag)->get_description() + ")";
}

/// The parsed command's flags given more than once (CLI11 keeps the last; a pasted line with an
/// edited copy of a flag should not quietly lose the other), or "".
std::string given_twice(const CLI::App& app) {
  for (const CLI::App* command : app.get_subcommands())
    for (const CLI::Option* opt : command->get_options())
      if (opt->get_expected_max() == 1 && opt->count() > 1 && !opt->get_lnames().empty())
        return pil::given_more_than_once("--" + opt->get_lnames().front(), opt->results());
  return "";
}

/// The parsed command and the first word it did not take (a word after "--" is left to
/// pil-trace itself), or {nullptr, ""}.
std::pair<const CLI::App*, std::string> first_not_taken(const CLI::App& app) {
  for (const CLI::App* command : app.get_subcommands()) {
    auto left = command->remaining();
    if (left.empty()) left = app.remaining();
    if (!left.empty()) return {command, left.front()};
  }
  return {nullptr, ""};
}

/// The first word the parsed command did not take (CLI11 listed them all, last first): a flag it
/// lacks, with the one a typo away, or a value with no flag before it.
std::string not_expected(const CLI::App& app) {
  const auto [command, word] = first_not_taken(app);
  if (!command) return "";
  std::vector<std::string> flags;
  for (const CLI::Option* opt : command->get_options())
    for (const auto& n : opt->get_lnames()) flags.push_back("--" + n);
  const std::string where = "pil-trace " + command->get_name();
  const std::string help = "what `" + where + " --help` lists";
  return pil::word_not_taken(word, flags, where, help, help);
}

/// The first word the parsed command needs and was not given (CLI11 said "trace is required", or
/// "b is required" for diff's second trace), with the command's words and what each is, or a
/// required flag ("--out: not given; allowed: --out VALUE (SVG file to write)"), or "".
std::string not_given(const CLI::App& app) {
  for (const CLI::App* command : app.get_subcommands()) {
    std::string usage = "pil-trace " + command->get_name(), meaning, missing;
    for (const CLI::Option* opt : command->get_options()) {
      if (!opt->get_positional()) continue;
      std::string name = opt->get_name();
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::toupper(c)); });
      usage += " " + name;
      meaning += (meaning.empty() ? "" : "; ") + name + ": " + opt->get_description();
      if (missing.empty() && opt->get_required() && opt->count() == 0) missing = name;
    }
    if (!missing.empty()) return missing + ": not given; allowed: " + usage + " (" + meaning + ")";
    for (const CLI::Option* opt : command->get_options())
      if (opt->get_required() && opt->count() == 0 && !opt->get_lnames().empty()) {
        const std::string flag = "--" + opt->get_lnames().front();
        return flag + ": not given; allowed: " + flag + " VALUE (" + opt->get_description() + ")";
      }
  }
  return "";
}

/// CLI11's parse error in the words of the lines above where one of them applies (a word it
/// needs, or one it did not take), value_checks.h's line as it is, else CLI11's own.
std::string said_plainly(const CLI::App& app, const CLI::ParseError& e) {
  std::string plain;
  // A flag the command did not take comes first ("--rang x" is why --range was not given); a bare
  // value is likely the missing flag's ("chain T matmul_add"): said with it.
  if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    const std::string word = first_not_taken(app).second, missing = not_given(app);
    if (word.rfind("--", 0) == 0 || missing.empty()) plain = not_expected(app);
    else if (word.empty()) plain = missing;
    else plain = missing + "; '" + word + "' came with no flag before it";
  } else if (dynamic_cast<const CLI::ExtrasError*>(&e)) plain = not_expected(app);
  else if (dynamic_cast<const CLI::ValidationError*>(&e)) return e.what();
  // CLI11 says "A excludes B" and "A requires B": the same form as the others, what is allowed.
  const std::string what = e.what();
  for (const char* verb : {" excludes ", " requires "}) {
    const size_t at = what.find(verb);
    if (at == std::string::npos || (!dynamic_cast<const CLI::ExcludesError*>(&e) &&
                                    !dynamic_cast<const CLI::RequiresError*>(&e)))
      continue;
    const std::string a = what.substr(0, at), b = what.substr(at + std::strlen(verb));
    if (verb[1] == 'e') return a + " with " + b + "; allowed: one of them, not both";
    return a + " without " + b + "; allowed: " + a + " only with " + b;
  }
  return plain.empty() ? std::string(e.what()) + " (see --help)" : plain;
}

/// What the command line gives: every command's flags and arguments, filled by parsing.
struct Args {
  bool as_json = false;
  std::string path, path_b, range, sort, out, title;
  size_t instance = 0, top = 10, step = 0, examples = 3;
  int rows = 15, width = 1200;
  double gap_us = 30, tolerance = 0.05, from_us = 0, to_us = 0;
  ParseOptions read_options;
  bool roofline = false;
  RooflineOptions roofline_options;
  std::string idle_rule_name = "pil";
  std::vector<std::string> predictions, rank_paths, marks;
  unsigned rank_threads = 0;
  long rank_step = -1;
  AdviseOptions advise_options;
  double min_share_pct = 100 * AdviseOptions{}.min_saved_share;
  bool every_field = false;
};

/// The window of svg and slice: a step, a named slice, or a span in us; one of them.
struct WindowOptions {
  CLI::Option *step, *range, *from, *to;
};

/// The commands as defined on the app: after parsing, the one given is true.
struct Commands {
  CLI::App *summary, *ops, *kernels, *api, *launches, *streams, *memory, *expect, *chain, *diff, *ranks, *check,
      *advise, *slice, *walk, *svg;
  WindowOptions slice_window, svg_window;
  std::vector<CLI::Option*> out_options;  // --out and --svg: an empty name is refused too
};

Commands define_commands(CLI::App& app, Args& a) {
  Commands c{};
  a.read_options.threads = usable_cores();
  auto threads_opt = [&](CLI::App* sub) {
    sub->add_option("--threads", a.read_options.threads,
                    "Threads reading the trace (default: the cores this process may use, " +
                        std::to_string(a.read_options.threads) + ")")
        ->check(whole_number(1, 1024));
  };
  auto trace_arg = [&](CLI::App* sub) {
    sub->add_option("trace", a.path, "Trace file (.json or .json.gz)")->required();
    sub->add_flag("--json", a.as_json, "Print JSON instead of a table");
    threads_opt(sub);
  };
  c.summary = app.add_subcommand("summary", "What the trace says, in a few lines");
  trace_arg(c.summary);
  c.ops = app.add_subcommand("ops", "Operator table (key_averages layout)");
  trace_arg(c.ops);
  auto* sort_opt = c.ops->add_option("--sort", a.sort, "Sort key: " + sort_key_names());
  c.ops->add_option("--row-limit", a.rows, "Rows shown")->capture_default_str()->check(whole_number(1, std::numeric_limits<int>::max()));
  auto* roofline_flag = c.ops->add_flag(
      "--roofline", a.roofline,
      "FLOPs, bytes, FLOP/byte, achieved GFLOP/s and GB/s and the share of peak per operator, from "
      "the recorded shapes (a trace recorded with record_shapes)");
  roofline_flag->excludes(sort_opt);
  c.ops->add_option("--cpu-peak-gflops", a.roofline_options.cpu_peak_gflops,
                    "The CPU's compute peak in GFLOP/s, for the CPU rows' share (a trace carries none)")
      ->check(number(1e-3, 1e9))->needs(roofline_flag);
  c.ops->add_option("--cpu-peak-gbps", a.roofline_options.cpu_peak_gbps,
                    "The CPU's memory bandwidth in GB/s, for the CPU rows' bound and share")
      ->check(number(1e-3, 1e9))->needs(roofline_flag);
  c.ops->add_option("--gpu-peak-tflops", a.roofline_options.gpu_peak_tflops,
                    "A measured GPU compute ceiling in TFLOP/s, in place of the vendor table's")
      ->check(number(1e-3, 1e6))->needs(roofline_flag);
  c.ops->add_option("--gpu-peak-gbps", a.roofline_options.gpu_peak_gbps,
                    "A measured GPU memory bandwidth in GB/s, in place of the vendor table's")
      ->check(number(1e-3, 1e9))->needs(roofline_flag);
  c.kernels = app.add_subcommand("kernels", "Kernel statistics");
  trace_arg(c.kernels);
  c.kernels->add_option("--range", a.range, "Only kernels launched inside slices of this name")
      ->check(non_empty("a slice's name"));
  c.api = app.add_subcommand("api", "CUDA runtime and driver calls");
  trace_arg(c.api);
  c.launches = app.add_subcommand("launches", "Launch delays, short kernels, graphs, outliers");
  trace_arg(c.launches);
  c.launches->add_option("--top", a.top, "Rows of the largest delays, and of the outliers")->capture_default_str()->check(whole_number(1));
  c.streams = app.add_subcommand("streams", "GPU busy and idle time per stream and step");
  trace_arg(c.streams);
  // --idle-rule by name only (a transformer from the map would also take 0 and 1, and name
  // them in its error line).
  auto idle_rule_opt = [&](CLI::App* sub) {
    sub->add_option("--idle-rule", a.idle_rule_name,
                    "How idle gaps are split: pil (default: merged overlaps, the launch call's end) or "
                    "hta (Holistic Trace Analysis's get_idle_time_breakdown)")
        ->transform(one_of({"pil", "hta"}));
  };
  idle_rule_opt(c.streams);
  idle_rule_opt(c.summary);
  c.streams->add_option("--gap-threshold-us", a.gap_us, "Largest gap counted as kernel wait")
      ->capture_default_str()
      ->check(number(0, 1e12));
  c.memory = app.add_subcommand("memory", "Allocations, the peak and where it came from");
  trace_arg(c.memory);
  c.expect = app.add_subcommand("expect", "Check predictions: yes or no, with the figure measured");
  c.expect->add_option("trace", a.path, "Trace file (.json or .json.gz)")->required();
  c.expect->add_option("predictions", a.predictions, "KEY=VALUE...: " + expectation_keys())->required();
  threads_opt(c.expect);
  c.chain = app.add_subcommand("chain", "A range down to its GPU work");
  trace_arg(c.chain);
  c.chain->add_option("--range", a.range, "Range or operator name")->required()->check(non_empty("a slice's name"));
  c.chain->add_option("--instance", a.instance, "Which occurrence (0 = first)")->capture_default_str()->check(whole_number(0));
  c.diff = app.add_subcommand("diff", "Compare two runs: A, then B");
  c.diff->add_option("a", a.path, "Trace A (.json or .json.gz)")->required();
  c.diff->add_option("b", a.path_b, "Trace B (.json or .json.gz)")->required();
  c.diff->add_option("--tolerance", a.tolerance, "Relative change counted as the same")
      ->capture_default_str()
      ->check(number(0, 10));
  c.diff->add_flag("--json", a.as_json, "Print JSON instead of a table");
  threads_opt(c.diff);
  c.ranks = app.add_subcommand("ranks", "Data-parallel ranks side by side (one trace per rank, or a folder)");
  c.ranks->add_option("traces", a.rank_paths, "Trace files (one per rank) or folders of them")->required();
  c.ranks->add_option("--threads", a.rank_threads, "Reader threads in all, as for one trace: files read at once up to that many, the rest shared among them (0: the cores)")
      ->check(whole_number(0, 1024));
  CLI::Option* ranks_svg = c.ranks->add_option("--svg", a.out, "Also write a timeline with one lane per rank");
  c.out_options.push_back(ranks_svg);
  c.ranks->add_option("--title", a.title, "The picture's title")->needs(ranks_svg);
  c.ranks->add_option("--step", a.rank_step, "The picture shows this step only (0 = first recorded)")
      ->check(whole_number(0))
      ->needs(ranks_svg);
  c.ranks->add_flag("--json", a.as_json, "Print JSON instead of tables");
  c.check = app.add_subcommand("check", "Can I trust this trace? What makes its figures wrong (exit 1 with findings)");
  trace_arg(c.check);
  c.check->add_option("--examples", a.examples, "Examples shown per finding")->capture_default_str()->check(whole_number(0));
  c.advise = app.add_subcommand("advise", "What to fix: findings with evidence, gain and the lesson that teaches the fix");
  trace_arg(c.advise);
  c.advise->add_option("--examples", a.advise_options.examples, "Worst examples shown per symptom")
      ->capture_default_str()
      ->check(whole_number(0));
  c.advise->add_option("--cpu-peak-gflops", a.advise_options.cpu_peak_gflops,
                       "The CPU's compute peak in GFLOP/s: the CPU's matrix products' roofline "
                       "figures in the evidence (a trace carries none)")
      ->check(number(1e-3, 1e9));
  c.advise->add_option("--gpu-peak-tflops", a.advise_options.gpu_peak_tflops,
                       "A measured GPU ceiling in TFLOP/s, in place of the table of peaks', for "
                       "the GPU's matrix products' roofline figures")
      ->check(number(1e-3, 1e6));
  c.advise->add_option("--min-share", a.min_share_pct,
                       "The floor under every finding, in % of the profiled steps: a symptom "
                       "saving less is not reported (rules with a threshold of their own above "
                       "it keep theirs)")
      ->check(number(0, 100))
      ->default_str("2");
  c.slice = app.add_subcommand("slice", "A small trace of one step, range or window, for Perfetto");
  c.slice->add_option("trace", a.path, "Trace file (.json or .json.gz)")->required();
  c.out_options.push_back(c.slice->add_option("--out", a.out, "Trace file to write (.json; .json.gz is gzip-compressed)")->required());
  threads_opt(c.slice);
  auto window_options = [&](CLI::App* sub, const std::string& noun) {
    WindowOptions w{sub->add_option("--step", a.step, noun + ": the K-th profiled step (0 = first)")->check(whole_number(0)),
                    sub->add_option("--range", a.range, noun + ": a slice of this name")->check(non_empty("a slice's name")),
                    nullptr, nullptr};
    sub->add_option("--instance", a.instance, "Which occurrence of --range (0 = first)")
        ->capture_default_str()
        ->check(whole_number(0))
        ->needs(w.range);
    w.from = sub->add_option("--from-us", a.from_us,
                             noun + " start, us after the trace window's start (the first step's, or the "
                                    "first event's without steps)")
                 ->check(number(-std::numeric_limits<double>::infinity()));
    w.to = sub->add_option("--to-us", a.to_us, noun + " end, us after the trace window's start")
               ->check(number(-std::numeric_limits<double>::infinity()));
    w.step->excludes(w.range)->excludes(w.from);
    w.range->excludes(w.from);
    w.to->needs(w.from);
    return w;
  };
  c.slice_window = window_options(c.slice, "Span");
  c.walk = app.add_subcommand("walk", "Walk the events without analysis (benchmark ceiling)");
  c.walk->add_option("trace", a.path, "Trace file (.json or .json.gz)")->required();
  c.walk->add_flag("--fields", a.every_field, "Visit every field of every event, not just each event");
  c.svg = app.add_subcommand("svg", "Timeline picture");
  c.svg->add_option("trace", a.path, "Trace file (.json or .json.gz)")->required();
  c.out_options.push_back(c.svg->add_option("--out", a.out, "SVG file to write")->required());
  threads_opt(c.svg);
  c.svg_window = window_options(c.svg, "Window");
  c.svg->add_option("--width", a.width, "Picture width in pixels")->capture_default_str()->check(whole_number(400, 20000));
  c.svg->add_option("--title", a.title, "Title shown at the top");
  c.svg->add_option("--mark", a.marks,
                    "Point an arrow and a label at the first slice of this name in the window (repeatable)")
      ->allow_extra_args(false);
  return c;
}

/// The command line parsed and checked: "" when it is usable, else the one line that says why.
std::string parse_command_line(CLI::App& app, const Commands& c, const Args& a, int argc, char** argv) {
  std::string bad = before_parsing(app, argc, argv);
  if (bad.empty()) {
    app.parse(argc, argv);
    bad = given_twice(app);
  }
  if (bad.empty() &&
      std::any_of(c.out_options.begin(), c.out_options.end(), [](CLI::Option* o) { return o->count() > 0; })) {
    std::vector<std::string> inputs = a.rank_paths;
    inputs.push_back(a.path);
    bad = output_problem(*c.ranks ? "--svg" : "--out", a.out, inputs);
  }
  return bad;
}

/// What of the trace the command reads beyond its events (each costs time on a large trace).
ParseOptions reading_for(const Commands& c, const Args& a) {
  ParseOptions o = a.read_options;
  o.keep_sources = bool(*c.slice);
  // The kernel table's Launch column, and the launch report's outliers (each against its name
  // and shape): only these.
  o.read_launch_shapes = *c.kernels || *c.launches;
  // Only these read the operators' inputs: the roofline (every operator's), and advise (the
  // few its rules judge by them, with their concrete values: advise_read_options).
  o.read_shapes = a.roofline;
  // And the roofline the concrete values: a fused attention kernel's is_causal.
  o.read_concrete = a.roofline;
  if (*c.ops && !a.roofline) {
    // The table's FLOPs column, in a trace recorded with_flops (its header says so): the
    // inputs of the operators Python counts, with their values (conv2d's stride...).
    o.read_shapes = o.read_concrete = true;
    o.shapes_for = [](std::string_view) { return false; };  // none but those:
    o.shapes_also_for = counts_python_flops;
    o.shapes_also_if = [](const Trace& head) { return head.with_flops; };
  }
  // The outliers also against their GEMM operator's input shapes (a kernel's grid does not
  // follow K): the matrix products' inputs only.
  if (*c.launches && !a.roofline) {
    o.read_shapes = true;
    o.shapes_for = advise_rules::is_gemm_op;
  }
  if (*c.advise) o = advise_read_options(o, a.advise_options);
  return o;
}

/// A trace read for a command, its skipped and unread fields noted; nullopt (said) where it is
/// of no use (no events, a ROCm trace...).
std::optional<Trace> read_usable_trace(const std::string& path, const ParseOptions& o) {
  Trace t = parse_trace_file(path, o);
  note_skipped(path, t.skipped);
  if (!t.events.empty()) note_unread(path, t.unread);  // else the error says what it holds
  if (const std::string why = unusable_trace_problem(t, path); !why.empty()) {
    std::cerr << "pil-trace: error: " << why << "\n";
    return std::nullopt;
  }
  return t;
}

/// expect's predictions read; nullopt (said in one line) where one is not a prediction.
std::optional<std::vector<Expectation>> parse_predictions(const Args& a) {
  std::vector<Expectation> parsed;
  try {
    for (const auto& p : a.predictions) parsed.push_back(parse_expectation(p));
  } catch (const std::invalid_argument& bad) {
    // A prediction first and the trace after ("expect steps=3 trace.json"): said as the order.
    if (a.path.find('=') != std::string::npos && !a.predictions.empty() &&
        a.predictions.front().find('=') == std::string::npos) {
      std::cerr << "pil-trace: error: '" << a.path << "' is where the trace goes and '" << a.predictions.front()
                << "' has no '=': the trace comes first; allowed: pil-trace expect TRACE KEY=VALUE...\n";
      return std::nullopt;
    }
    // The lessons' flag is --expect; here each prediction is a word of its own.
    std::string what = bad.what();
    if (what.rfind("--expect ", 0) == 0) what.replace(0, 9, "prediction ");
    std::cerr << "pil-trace: error: " << what << "\n";
    return std::nullopt;
  }
  return parsed;
}

int run_expect(const TraceIndex& index, const std::vector<Expectation>& predictions) {
  bool all = true;  // exit 0 when every prediction holds, 1 when one does not
  for (const auto& e : predictions) {
    const ExpectAnswer answer = check_expectation(index, e);
    std::cout << answer.line() << "\n";
    all = all && answer.yes;
  }
  return all ? 0 : 1;
}

int run_ranks(const Args& a) {
  const RanksReport r = read_ranks(a.rank_paths, a.rank_threads);
  for (const RankProfile& p : r.ranks) {
    note_skipped(p.label, p.skipped);
    note_unread(p.label, p.unread);
  }
  if (a.rank_step >= long(r.steps.size())) {
    std::cerr << "pil-trace: error: --step " << a.rank_step << ": the ranks' traces compare "
              << counted(static_cast<long long>(r.steps.size()), "step") << steps_allowed(r.steps.size()) << "\n";
    return 2;
  }
  std::cout << (a.as_json ? ranks_json(r) : format_ranks(r));
  if (!a.out.empty()) {
    write_out(a.out, render_ranks_svg(r, a.width, a.rank_step, a.title));
    if (!a.as_json) std::cout << "svg: " << a.out << "\n";
  }
  return 0;
}

int run_advise(const TraceIndex& index, Args& a, const ParseOptions& read, const char* program) {
  a.advise_options.threads = read.threads;
  a.advise_options.min_saved_share = a.min_share_pct / 100;
  a.advise_options.trace_path = a.path;
  a.advise_options.program = program;
  const Advice advice = advise(index, a.advise_options);
  if (a.as_json)
    std::cout << advice_json(advice).dump(2) << "\n";
  else
    std::cout << format_advice(advice, a.path);
  return 0;  // advice is not a failure: exit 0 with findings
}

/// --step K's window, or false (said) where the trace has no K-th step.
bool step_window_or_say(const TraceIndex& index, size_t step, int64_t& from, int64_t& to) {
  if (step_window(index, step, from, to)) return true;
  std::cerr << "pil-trace: error: --step " << step << ": the trace has "
            << counted(static_cast<long long>(index.steps.size()), "profiled step") << steps_allowed(index.steps.size())
            << "\n";
  return false;
}

/// svg's and slice's --from-us A [--to-us B]: B, or the window's end; false (said) for an empty
/// span, or one wholly outside the recorded window.
bool us_window(const TraceIndex& index, const Args& a, bool to_given, int64_t& from, int64_t& to) {
  const std::string window_text =
      "the recorded window ends " + format_time_ns(index.window_end - index.window_start) + " after its start";
  for (const auto& [flag, us] : {std::pair<const char*, double>{"--from-us", a.from_us}, {"--to-us", a.to_us}})
    if (!(std::fabs(us) < 1e12)) {  // past 11 days: no trace's, and past what int64 ns keep
      std::cerr << "pil-trace: error: " << flag << " " << us << ": out of range (" << window_text << ")\n";
      return false;
    }
  from = index.window_start + int64_t(a.from_us * 1000);
  to = to_given ? index.window_start + int64_t(a.to_us * 1000) : index.window_end;
  if (to <= from) {
    if (to_given)
      std::cerr << "pil-trace: error: --to-us must be past --from-us\n";
    else
      std::cerr << "pil-trace: error: --from-us " << a.from_us << ": past the recorded window, which ends "
                << format_time_ns(index.window_end - index.window_start) << " after its start; allowed: a smaller --from-us\n";
    return false;
  }
  if (to <= index.window_start || from >= index.window_end) {
    std::cerr << "pil-trace: error: --from-us " << a.from_us << " --to-us " << a.to_us
              << ": the span lies outside the recorded window (" << window_text << ")\n";
    return false;
  }
  return true;
}

int run_slice(const TraceIndex& index, const Args& a, const WindowOptions& w) {
  const Trace& t = index.trace();
  int64_t from = 0, to = 0;
  if (*w.step) {
    if (!step_window_or_say(index, a.step, from, to)) return 2;
    // The step's own CPU span: its GPU tail comes with its launch calls. (svg's window,
    // widened to that tail, would also take in the next step's range and operators, and
    // the slice would read back as two steps.)
    const Event& s = t.events[index.steps[a.step]];
    from = s.start_ns, to = s.end_ns();
  } else if (*w.range) {
    // The range's own CPU span (svg's range window also reaches to its GPU work).
    const std::vector<const Event*> found = slices_named(t, a.range);
    if (a.instance >= found.size()) {
      say_no_instance(t, a.range, a.instance);
      return 2;
    }
    from = found[a.instance]->start_ns, to = found[a.instance]->end_ns();
  } else if (*w.from) {
    if (!us_window(index, a, bool(*w.to), from, to)) return 2;
  } else {
    std::cerr << "pil-trace: error: slice: choose --step K, --range NAME or --from-us A [--to-us B]\n";
    return 2;
  }
  const TraceBytes bytes(a.path);
  SliceCounts n;
  write_out(a.out, slice_text(index, bytes.text(), from, to, &n), pil::Gzip::ByName);
  std::cout << "slice: " << a.out << ": " << n.events << " events (" << n.cpu << " on the CPU, " << n.gpu_work
            << " GPU work items, " << n.flows << " flow arrow ends, " << n.metadata << " names) from ts "
            << trace_ts(from) << " to " << trace_ts(to) << " us"
            // Where the window launched GPU work, how far past the window it ran.
            << (n.gpu_work ? ", GPU work to " + trace_ts(std::max(n.gpu_end_ns, to)) + " us" : std::string()) << "\n";
  return 0;
}

int run_svg(const TraceIndex& index, const Args& a, const WindowOptions& w) {
  SvgOptions o;
  o.width = a.width;
  o.title = a.title.empty() ? a.path : a.title;
  if (*w.step && !step_window_or_say(index, a.step, o.from_ns, o.to_ns)) return 2;
  if (*w.range && !range_window(index, a.range, a.instance, o.from_ns, o.to_ns)) {
    say_no_instance(index.trace(), a.range, a.instance);
    return 2;
  }
  if (*w.from && !us_window(index, a, bool(*w.to), o.from_ns, o.to_ns)) return 2;
  o.marks = a.marks;
  for (const auto& m : a.marks)
    if (!find_mark(index, o, m)) {
      std::cerr << "pil-trace: error: --mark: no slice named '" << m << "' in the window\n";
      return 2;
    }
  write_out(a.out, render_svg(index, o));
  std::cout << "svg: " << a.out << "\n";
  return 0;
}

/// The command given, run on its trace(s): its exit code.
int run_command(const Commands& c, Args& a, const char* program) {
  if (*c.walk) {
    std::cout << walk_trace_file(a.path, {}, a.every_field) << " events\n";
    return 0;
  }
  if (*c.ranks) return run_ranks(a);
  std::vector<Expectation> predictions;
  if (*c.expect) {
    auto parsed = parse_predictions(a);
    if (!parsed) return 2;
    predictions = std::move(*parsed);
  }
  const ParseOptions read = reading_for(c, a);
  const std::optional<Trace> t = read_usable_trace(a.path, read);
  if (!t) return 2;
  // The summary and the predictions ask for the operator table: it starts beside the index.
  const TraceIndex index(*t, read.threads, /*table_ahead=*/*c.summary || *c.expect);
  const IdleRule idle_rule = a.idle_rule_name == "hta" ? IdleRule::Hta : IdleRule::Pil;
  if (*c.summary) {
    std::cout << (a.as_json ? summary_json(index, idle_rule).dump(2) + "\n" : explain(index, idle_rule));
    return 0;
  }
  if (*c.ops)
    return a.roofline ? report_roofline(index, a.path, a.roofline_options, a.rows, a.as_json)
                      : report_ops(*t, a.sort, a.rows, a.as_json);
  if (*c.kernels) return report_kernels(index, a.range, a.as_json);
  if (*c.api) return report_api(index, a.as_json);
  if (*c.launches) return report_launches(index, a.top, a.as_json);
  if (*c.streams) return report_streams(index, a.gap_us, idle_rule, a.as_json);
  if (*c.memory) return report_memory(index, a.as_json);
  if (*c.expect) return run_expect(index, predictions);
  if (*c.chain) return report_chain(index, a.range, a.instance, a.as_json);
  if (*c.check) return report_check(index, a.path, a.examples, a.as_json);
  if (*c.advise) return run_advise(index, a, read, program);
  if (*c.slice) return run_slice(index, a, c.slice_window);
  if (*c.diff) {
    const std::optional<Trace> b = read_usable_trace(a.path_b, read);
    if (!b) return 2;
    return report_diff(*t, *b, a.tolerance, a.as_json);
  }
  if (*c.svg) return run_svg(index, a, c.svg_window);
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"pil-trace: explain a Kineto/Chrome trace (ours or torch.profiler's)", "pil-trace"};
  app.require_subcommand(1);
  // A flag given twice is refused after parsing (given_twice), naming both values.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  Args args;
  const Commands commands = define_commands(app, args);
  std::string bad;  // bad usage: one line, exit 2
  try {
    bad = parse_command_line(app, commands, args, argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    bad = said_plainly(app, e);
  }
  if (!bad.empty()) {
    std::cerr << "pil-trace: error: " << bad << "\n";
    return 2;
  }
  try {
    // Test only: with PIL_TRACE_TEST_INTERNAL_ERROR set, every command throws as a bug would (a
    // std::exception; with "unknown", something else), so that the tests see exit 70. No input
    // reaches those handlers on purpose: an error the code foresees is exit 2.
    if (const char* bug = std::getenv("PIL_TRACE_TEST_INTERNAL_ERROR")) {
      if (std::string_view(bug) == "unknown") throw 70;
      throw std::logic_error("PIL_TRACE_TEST_INTERNAL_ERROR is set");
    }
    return run_command(commands, args, argv[0]);
  } catch (const ParseError& e) {
    std::cerr << "pil-trace: error: " << e.what() << "\n";
    return 2;
  } catch (const RanksError& e) {
    std::cerr << "pil-trace: error: " << e.what() << "\n";
    return 2;
  } catch (const OutputError& e) {
    std::cerr << "pil-trace: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {  // a bug, not the input: 70 (EX_SOFTWARE), never 1
    std::cerr << "pil-trace: internal error: " << e.what() << "\n";
    return 70;
  } catch (...) {
    std::cerr << "pil-trace: internal error: an unknown exception\n";
    return 70;
  }
}

}  // namespace

int main(int argc, char** argv) {
  pil::StdoutCheck out;
  const int rc = run(argc, argv);
  // A report that did not reach standard output whole (a full disk, a closed descriptor) is not
  // a success, though every line was "printed": said, and exit 2 as for an --out.
  const std::string problem = out.problem();
  if (!problem.empty()) {
    std::cerr << "pil-trace: error: " << problem << "\n";
    return rc == 0 ? 2 : rc;
  }
  return rc;
}
