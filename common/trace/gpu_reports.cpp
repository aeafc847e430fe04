#include "trace/reports.h"

#include "trace/report_helpers.h"
#include "trace/first_by_id.h"
#include "trace/intervals.h"
#include "trace/name_ids.h"
#include "trace/nesting.h"
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

// The GPU's reports: kernels (with their launch delays and outliers), streams (busy and idle, as
// pil and as Holistic Trace Analysis split it), the synchronizing calls.

namespace pil::trace {
using namespace report_helpers;

// --- Kernels ---------------------------------------------------------------------------------

namespace {

/// What `take(i)` gives for each event of `among` (indices in event order) that passes `keep(i)`,
/// grouped by name in one pass (a report that needs no more of each event does not come back to
/// it): groups in order of each name's first event, each group's items in event order.
template <typename T>
struct ByName {
  std::vector<std::string_view> names;
  std::vector<std::vector<T>> items;
};
template <typename Keep, typename Take>
auto group_by_name(const Trace& t, const std::vector<size_t>& among, Keep keep, Take take)
    -> ByName<decltype(take(size_t{}))> {
  NameIds ids;
  ByName<decltype(take(size_t{}))> g;
  for (size_t i : among) {
    if (!keep(i)) continue;
    const uint32_t id = ids(t.events[i].name);
    if (id >= g.items.size()) {
      g.items.resize(id + 1);
      g.names.push_back(t.events[i].name);
    }
    g.items[id].push_back(take(i));
  }
  return g;
}

/// Each row's share of the rows' total time, and the rows longest first (kernels', calls').
template <typename Row>
void share_and_sort(std::vector<Row>& rows) {
  int64_t all = 0;
  for (const Row& r : rows) all += r.time.total;
  for (Row& r : rows) r.share = all > 0 ? double(r.time.total) / double(all) : 0;
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.time.total > b.time.total; });
}

/// A kernel's launch shape: its own, or its launch call's (HIP's traces give it on the call).
const KernelInfo* launch_shape_of(const TraceIndex& index, size_t kernel) {
  const Trace& t = index.trace();
  if (const KernelInfo* k = t.kernel_info(t.events[kernel])) return k;
  const long call = index.launch_of(kernel);
  return call >= 0 ? t.kernel_info(t.events[size_t(call)]) : nullptr;
}

/// A launch shape as a key (grid, block, registers, shared memory); all -1 for none.
using ShapeKey = std::array<int64_t, 8>;
ShapeKey shape_key(const KernelInfo* k) {
  if (!k) return {-1, -1, -1, -1, -1, -1, -1, -1};
  return {k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->registers, k->shared_memory};
}

/// The durations of events `idx`, in their order.
std::vector<int64_t> durations(const Trace& t, const std::vector<size_t>& idx) {
  std::vector<int64_t> d;
  d.reserve(idx.size());
  for (size_t i : idx) d.push_back(t.events[i].dur_ns);
  return d;
}

/// Per-thread intervals of the slices named `name`, for "launched from inside the range".
std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> range_spans(
    const Trace& t, const std::string& name) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> spans;
  for (const auto& e : t.events)
    if (!e.on_device() && e.name == name) spans[{e.pid, e.tid}].push_back({e.start_ns, e.end_ns()});
  for (auto& [k, v] : spans) v = merge(v);
  return spans;
}

bool inside(const std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>>& spans,
            const Event& e) {
  auto it = spans.find({e.pid, e.tid});
  if (it == spans.end()) return false;
  // The spans are merged: sorted and disjoint. Only the last one starting at or before e can
  // hold it.
  const auto& v = it->second;
  auto after = std::upper_bound(v.begin(), v.end(), e.start_ns,
                                [](int64_t s, const std::pair<int64_t, int64_t>& iv) { return s < iv.first; });
  return after != v.begin() && e.end_ns() <= std::prev(after)->second;
}

}  // namespace

std::vector<KernelRow> kernel_report(const TraceIndex& index, const std::string& range) {
  const Trace& t = index.trace();
  const auto spans = range.empty() ? decltype(range_spans(t, range)){} : range_spans(t, range);
  // Without a launch call in the trace, fall back to the launching operator (external id).
  uint64_t max_id = 0;
  if (!range.empty())
    for (const auto& e : t.events)
      if (is_torch_scope(e.category)) max_id = std::max(max_id, e.external_id);
  FirstById op_by_id(max_id, t.events.size());
  if (!range.empty())
    for (size_t i = 0; i < t.events.size(); ++i)
      if (is_torch_scope(t.events[i].category)) op_by_id.add(t.events[i].external_id, long(i));

  const auto kernels = group_by_name(t, index.device_work(), [&](size_t i) {
    const Event& e = t.events[i];
    if (e.category != Category::Kernel) return false;
    if (range.empty()) return true;
    if (const long call = index.launch_of(i); call >= 0) return inside(spans, t.events[size_t(call)]);
    const long op = links_to_itself(e) ? -1 : op_by_id[e.external_id];  // no operator's id
    return op >= 0 && inside(spans, t.events[size_t(op)]);
  }, [](size_t i) { return i; });
  std::vector<KernelRow> rows;
  for (size_t g = 0; g < kernels.names.size(); ++g) {
    const std::vector<size_t>& idx = kernels.items[g];
    KernelRow r;
    r.name = std::string(kernels.names[g]);
    r.time = DurationStats::of(durations(t, idx));
    // Its launch shapes, most time first; calls without one in the trace a bucket of their own.
    std::map<ShapeKey, size_t> slot;  // shape -> its place in r.shapes
    for (size_t i : idx) {
      const KernelInfo* k = launch_shape_of(index, i);
      const auto [at, fresh] = slot.emplace(shape_key(k), r.shapes.size());
      if (fresh) r.shapes.push_back(KernelShape{k ? *k : KernelInfo{}, 0, 0, k != nullptr});
      KernelShape& x = r.shapes[at->second];
      ++x.calls;
      x.total_ns += t.events[i].dur_ns;
    }
    std::stable_sort(r.shapes.begin(), r.shapes.end(),
                     [](const KernelShape& a, const KernelShape& b) { return a.total_ns > b.total_ns; });
    if (!r.shapes.empty() && r.shapes.front().known) r.launch = r.shapes.front().launch;
    rows.push_back(std::move(r));
  }
  share_and_sort(rows);
  return rows;
}

std::vector<ApiRow> api_report(const TraceIndex& index) {
  const Trace& t = index.trace();
  auto calls = group_by_name(t, index.api_calls(), [](size_t) { return true; },
                             [&](size_t i) { return t.events[i].dur_ns; });
  std::vector<ApiRow> rows;
  for (size_t g = 0; g < calls.names.size(); ++g) {
    ApiRow r;
    r.name = std::string(calls.names[g]);
    r.time = DurationStats::of(std::move(calls.items[g]));
    rows.push_back(std::move(r));
  }
  share_and_sort(rows);
  return rows;
}

std::string offset_evidence(const ClockOffset& o) {
  if (o.late())
    return "no GPU work starts sooner than " + format_duration(o.least_delay_ns) + " after its launch call, and " +
           count_of(int64_t(o.idle_waits.size()), "item", "items") + " waited that long on an idle GPU";
  return std::to_string(o.early.size()) + " of " + std::to_string(o.async_launches) +
         " launches' GPU work starts before the launch call begins, up to " + format_duration(o.most_early_ns) +
         " before" +
         (o.drifts() ? std::string(o.early_devices > 1 ? ", on GPU " + std::to_string(o.drift_device) : "") +
                           (o.drift_to_ns > o.drift_from_ns ? ", earlier and earlier" : ", less and less early") +
                           ": from " + format_duration(o.drift_from_ns) + " to " +
                           format_duration(o.drift_to_ns) + " over " + format_duration(o.drift_span_ns) +
                           " (the clocks drift rather than stand offset)"
                     : std::string());
}

std::string offset_note(const ClockOffset& o) {
  return "GPU times look offset from CPU times: " + offset_evidence(o) + " (`pil-trace check`): " +
         (o.late() ? "launch delays include the offset, and host waits come out short by as much (counted as "
                     "other idle)"
                   : "launch delays read as none, and the GPU's waits on the host cannot be told from the "
                     "offset");
}

ClockOffset gpu_clock_offset(const TraceIndex& index) {
  const Trace& t = index.trace();
  // Per device, the least delay from a call's return to its work's start, over the calls that
  // return without waiting for their work (a synchronous copy returns after it: its delay is
  // negative whatever the clocks), and how many such calls there were.
  struct Least {
    int64_t ns = std::numeric_limits<int64_t>::max();
    int64_t calls = 0;
  };
  std::map<int64_t, Least> least;
  ClockOffset o;
  for (size_t w : index.device_work()) {
    const long call = index.launch_of(w);
    if (call < 0) continue;
    const Event& e = t.events[w];
    const Event& l = t.events[size_t(call)];
    if (!starts_gpu_work_async(l.name) || e.name.find("Pageable") != std::string_view::npos) continue;
    Least& d = least[e.pid];
    d.ns = std::min(d.ns, e.start_ns - l.end_ns());
    const bool first = index.work_of(size_t(call)).front() == w;  // once per call (a graph's many kernels)
    d.calls += first;
    if (first) {
      ++o.async_launches;
      if (e.start_ns < l.start_ns) {
        o.early.push_back(w);
        o.most_early_ns = std::max(o.most_early_ns, l.start_ns - e.start_ns);
      }
    }
  }
  // How early the early items start, against when their calls started: a slope is a drift.
  // Per device (two GPUs may stand offset by different amounts), by Theil and Sen's estimate
  // (the median of the slopes between every two items, the line through the median intercept):
  // one item far earlier than the rest tilts a least-squares line into a drift that is not there.
  std::map<int64_t, std::vector<std::pair<double, double>>> early_by_device;  // (call start, earliness)
  for (size_t w : o.early) {
    const Event& l = t.events[size_t(index.launch_of(w))];
    early_by_device[t.events[w].pid].push_back({double(l.start_ns), double(l.start_ns - t.events[w].start_ns)});
  }
  o.early_devices = int(early_by_device.size());
  for (auto& [device, items] : early_by_device) {
    if (items.size() < 5) continue;
    std::sort(items.begin(), items.end());
    double most = 0;  // over all of them, before any are left out
    for (const auto& item : items) most = std::max(most, item.second);
    if (items.size() > kDriftMostItems) {  // evenly spread, the first and the last kept
      std::vector<std::pair<double, double>> kept;
      for (size_t k = 0; k < kDriftMostItems; ++k) kept.push_back(items[k * (items.size() - 1) / (kDriftMostItems - 1)]);
      items = std::move(kept);
    }
    std::vector<double> slopes;
    for (size_t i = 0; i < items.size(); ++i)
      for (size_t j = i + 1; j < items.size(); ++j)
        if (items[j].first > items[i].first)
          slopes.push_back((items[j].second - items[i].second) / (items[j].first - items[i].first));
    if (slopes.empty()) continue;
    auto median = [](std::vector<double>& v) {
      std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    const double slope = median(slopes), x0 = items.front().first, x1 = items.back().first;
    std::vector<double> at;
    for (const auto& [x, y] : items) at.push_back(y - slope * (x - x0));
    const double at0 = median(at), at1 = at0 + slope * (x1 - x0);
    // A drift moves the earliness by half its most or more, and stays an earliness at both ends.
    if (at0 < 0 || at1 < 0 || std::abs(at1 - at0) * 2 < most ||
        std::abs(at1 - at0) <= double(std::abs(o.drift_to_ns - o.drift_from_ns)))
      continue;
    o.drift_from_ns = int64_t(std::llround(at0));
    o.drift_to_ns = int64_t(std::llround(at1));
    o.drift_span_ns = int64_t(x1 - x0);
    o.drift_device = device;
  }
  int64_t overall = std::numeric_limits<int64_t>::max(), offset = overall;
  std::map<int64_t, std::vector<Interval>> busy;  // per device that may be offset
  for (const auto& [device, d] : least) {
    overall = std::min(overall, d.ns);
    if (d.ns >= kClockOffsetNs && d.calls >= 2) busy[device];
  }
  if (!busy.empty()) {
    for (size_t w : index.device_work())
      if (auto it = busy.find(t.events[w].pid); it != busy.end())
        it->second.push_back({t.events[w].start_ns, t.events[w].end_ns()});
    for (auto& [device, v] : busy) merge(v);
    for (size_t w : index.device_work()) {
      const long call = index.launch_of(w);
      const auto it = busy.find(t.events[w].pid);
      if (call < 0 || it == busy.end()) continue;
      const Event& e = t.events[w];
      const int64_t returned = t.events[size_t(call)].end_ns();
      if (e.start_ns - returned >= kClockOffsetNs && clip(it->second, returned, e.start_ns).empty()) {
        o.idle_waits.push_back(w);
        offset = std::min(offset, least[e.pid].ns);
      }
    }
  }
  // A long synchronize that returned as the GPU's recorded work ended says the clocks agree: it
  // waited for that work, which truly ended as it returned; with the GPU's times late by d, the
  // work would read as ending d after the return. The late start was the GPU's own (a delay the
  // trace does not show: an arcws trace's first memset began 34.8 ms after its call, on an idle
  // A5000, and the 111 ms cudaDeviceSynchronize after the last launch returned 4 us after the
  // last kernel ended).
  if (o.late()) {
    // The suspect devices' work by its launch call's start, with the latest end so far.
    std::vector<std::pair<int64_t, int64_t>> launched;  // (launch call's start, work's end)
    for (size_t w : index.device_work())
      if (const long call = index.launch_of(w); call >= 0 && busy.count(t.events[w].pid))
        launched.push_back({t.events[size_t(call)].start_ns, t.events[w].end_ns()});
    std::sort(launched.begin(), launched.end());
    for (size_t k = 1; k < launched.size(); ++k)
      launched[k].second = std::max(launched[k].second, launched[k - 1].second);
    for (size_t s : index.synchronizes()) {
      const Event& sync = t.events[s];
      if (sync.dur_ns < kClockOffsetNs) continue;
      const auto before = std::lower_bound(launched.begin(), launched.end(),
                                           std::pair<int64_t, int64_t>{sync.start_ns, std::numeric_limits<int64_t>::min()});
      if (before == launched.begin()) continue;
      const int64_t last_end = std::prev(before)->second;  // the latest end of the work launched before it
      if (last_end > sync.start_ns && std::llabs(sync.end_ns() - last_end) < kClockOffsetNs) {
        o.refuted_by = long(s);
        o.idle_waits.clear();
        break;
      }
    }
  }
  o.least_delay_ns = o.found() ? offset : overall == std::numeric_limits<int64_t>::max() ? 0 : overall;
  return o;
}

bool ran_in_call(const Event& call, const Event& work) {
  if (work.end_ns() > call.end_ns()) return false;
  const std::string_view n = call.name;
  if (n.find("Memcpy") == std::string_view::npos && n.find("Memset") == std::string_view::npos) return false;
  return n.find("Async") == std::string_view::npos || work.name.find("Pageable") != std::string_view::npos;
}

LaunchReport launch_report(const TraceIndex& index, LaunchDetail detail) {
  const Trace& t = index.trace();
  LaunchReport r;
  std::vector<int64_t> clipped, latency, queueing, waited;
  const bool each = detail != LaunchDetail::Totals;
  clipped.reserve(index.launch_calls().size());
  latency.reserve(index.launch_calls().size());  // address space: only what is filled is used
  queueing.reserve(index.launch_calls().size());
  if (each) r.launches.reserve(index.launch_calls().size());
  for (size_t i : index.launch_calls()) {
    const auto work = index.work_of(i);
    const Event& call = t.events[i];
    const Event& first = t.events[work.front()];
    Launch l;
    l.call = i;
    l.first_work = work.front();
    l.work_count = work.size();
    l.delay_ns = first.start_ns - call.end_ns();
    l.work_shorter_than_call = first.dur_ns < call.dur_ns;
    // Queued: when the call returned, the stream was still running work that started earlier.
    const int64_t free_at = index.stream_free_before(work.front());
    l.queued = free_at > call.end_ns();
    if (l.queued) l.queue_ns = std::min(free_at, first.start_ns) - call.end_ns();
    l.waited = !l.queued && waited_after_return(l.delay_ns);
    l.in_call = !l.queued && work.size() == 1 && ran_in_call(call, first);
    // A graph's first node can be a memset or a copy: its first kernel is the one judged.
    if (const long kernel = index.first_kernel_of(l.call); kernel >= 0) {
      ++r.kernel_launches;
      if (t.events[size_t(kernel)].dur_ns < call.dur_ns) ++r.shorter_than_call;
    }
    if (work.size() > 1 || is_graph_launch(call.name)) {
      ++r.graph_launches;
      r.graph_work_items += int64_t(work.size());
      for (size_t w : work) {
        const Category c = t.events[w].category;
        if (c == Category::Kernel)
          ++r.graph_kernels;
        else if (c == Category::Memset)
          ++r.graph_memsets;
        else
          ++r.graph_copies;
      }
    }
    const int64_t d = std::max<int64_t>(l.delay_ns, 0);
    clipped.push_back(d);
    if (l.in_call)
      ++r.in_call;
    else
      (l.queued ? queueing : l.waited ? waited : latency).push_back(d);
    if (each) r.launches.push_back(l);
  }
  auto earlier = [&](const Launch& a, const Launch& b) {
    return t.events[a.call].start_ns < t.events[b.call].start_ns;
  };
  if (!std::is_sorted(r.launches.begin(), r.launches.end(), earlier))
    std::sort(r.launches.begin(), r.launches.end(), earlier);
  r.delay = DurationStats::of(std::move(clipped));
  r.latency = DurationStats::of(std::move(latency));
  r.queueing = DurationStats::of(std::move(queueing));
  r.waited = DurationStats::of(std::move(waited));
  if (detail != LaunchDetail::Each) return r;

  const auto kernels = group_by_name(
      t, index.device_work(), [&](size_t i) { return t.events[i].category == Category::Kernel; },
      [](size_t i) { return i; });
  // Against the calls of the same name and launch shape (a copy kernel's grid follows its
  // tensor's size: a larger copy is no outlier), and where the trace recorded them, the same
  // input shapes of the operator that launched them (its External id's): a GEMM's grid follows
  // M and N but not K (a public LoRA run's ampere_sgemm_128x128_tn, one grid for [4096, 768] x
  // [768, 768] and for the 4x longer [4096, 3072] x [3072, 768], read as 6 outliers).
  std::unordered_map<uint64_t, uint32_t> op_shapes;  // an operator's External id -> its input shapes
  if (!t.input_shapes.empty())
    for (const Event& e : t.events)
      if (e.category == Category::CpuOp && e.external_id && e.input_shapes < t.input_shapes.size())
        op_shapes.emplace(e.external_id, e.input_shapes);
  auto shapes_of_launcher = [&](size_t i) -> uint32_t {
    const Event& e = t.events[i];
    if (op_shapes.empty() || !e.external_id || links_to_itself(e)) return UINT32_MAX;
    const auto it = op_shapes.find(e.external_id);
    return it == op_shapes.end() ? UINT32_MAX : it->second;
  };
  std::vector<std::pair<size_t, int64_t>> outliers;  // (kernel, its group's median)
  for (const auto& named : kernels.items) {
    std::map<std::pair<ShapeKey, uint32_t>, std::vector<size_t>> by_shape;
    for (size_t i : named) by_shape[{shape_key(launch_shape_of(index, i)), shapes_of_launcher(i)}].push_back(i);
    for (const auto& [shape, idx] : by_shape) {
      if (idx.size() < 5) continue;
      const double median = DurationStats::of(durations(t, idx)).median;
      for (size_t i : idx)
        if (double(t.events[i].dur_ns) > 2.0 * median) outliers.push_back({i, int64_t(std::llround(median))});
    }
  }
  std::stable_sort(outliers.begin(), outliers.end(), [&](const auto& a, const auto& b) {
    return t.events[a.first].dur_ns - a.second > t.events[b.first].dur_ns - b.second;
  });
  for (const auto& [i, median] : outliers) {
    r.outliers.push_back(i);
    r.outlier_median_ns.push_back(median);
  }
  return r;
}

std::string graph_work_text(const LaunchReport& r) {
  if (r.graph_work_items == r.graph_kernels) return count_of(r.graph_kernels, "kernel", "kernels");
  std::string kinds = count_of(r.graph_kernels, "kernel", "kernels");
  if (r.graph_memsets) kinds += ", " + count_of(r.graph_memsets, "memset", "memsets");
  if (r.graph_copies) kinds += ", " + count_of(r.graph_copies, "copy", "copies");
  return count_of(r.graph_work_items, "GPU work item", "GPU work items") + " (" + kinds + ")";
}

// --- Streams ---------------------------------------------------------------------------------

const char* to_string(IdleRule rule) { return rule == IdleRule::Hta ? "hta" : "pil"; }

namespace {

// Holistic Trace Analysis's steps for its idle split: with two or more step names, the start of
// the last one, else INT64_MIN (no cut).
struct HtaSteps {
  int64_t last_start_us = std::numeric_limits<int64_t>::min();
};

// HTA reads times as float64 microseconds and rounds them, the start up and the end (start +
// duration, added in float64) down (hta/common/trace_parser.py, round_down_time_stamps). At the
// epoch times Kineto writes (about 1.7e15 us), float64 keeps quarter microseconds, so an end
// within an eighth of the next whole microsecond rounds onto it there (0.9 past one becomes the
// next): kept as HTA computes it.
double hta_us(int64_t ns) { return double(ns / 1000) + double(ns % 1000) / 1000.0; }
int64_t hta_start_us(int64_t ns) { return int64_t(std::ceil(hta_us(ns))); }
int64_t hta_end_us(const Event& e) { return int64_t(std::floor(hta_us(e.start_ns) + double(e.dur_ns) / 1000.0)); }

// HTA's last step (hta/common/trace.py, _filter_irrelevant_gpu_kernels): of every event named
// with "ProfilerStep" that is not GPU work, so the step ranges mirrored on a GPU stream
// (gpu_user_annotation) too, which start when the GPU reaches the step: later than the CPU's.
HtaSteps hta_steps(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::unordered_set<std::string_view> names;
  int64_t last = std::numeric_limits<int64_t>::min();
  auto add = [&](const Event& e) {
    names.insert(e.name);
    last = std::max(last, hta_start_us(e.start_ns));
  };
  for (size_t s : index.steps)
    if (t.events[s].name.find("ProfilerStep") != std::string_view::npos) add(t.events[s]);
  for (const Event& e : t.events)
    if (e.category == Category::GpuUserAnnotation && e.name.find("ProfilerStep") != std::string_view::npos) add(e);
  HtaSteps h;
  if (names.size() >= 2) h.last_start_us = last;
  return h;
}

// Holistic Trace Analysis's idle split of one stream (IdleRule::Hta), into `row`.
void hta_idle_split(const TraceIndex& index, const HtaSteps& steps, const std::vector<size_t>& work,
                    int64_t threshold_ns, StreamRow& row) {
  const Trace& t = index.trace();
  row.host_wait_ns = row.kernel_wait_ns = row.other_idle_ns = 0;
  // With two or more step names, HTA keeps only the GPU work whose launch call started before
  // the last step did (the last step may be incomplete), which drops work without a launch call
  // too.
  std::vector<size_t> kept;
  const std::vector<size_t>* items = &work;
  if (steps.last_start_us != std::numeric_limits<int64_t>::min()) {
    for (size_t w : work) {
      const long call = index.launch_of(w);
      if (call >= 0 && hta_start_us(t.events[size_t(call)].start_ns) < steps.last_start_us) kept.push_back(w);
    }
    items = &kept;
  }
  for (size_t k = 1; k < items->size(); ++k) {
    const Event& prev = t.events[(*items)[k - 1]];
    const Event& e = t.events[(*items)[k]];
    const int64_t prev_end = hta_end_us(prev), start = hta_start_us(e.start_ns);
    const int64_t gap_us = start - prev_end;
    const long call = index.launch_of((*items)[k]);
    if (call >= 0 && hta_start_us(t.events[size_t(call)].start_ns) > prev_end)
      row.host_wait_ns += gap_us * 1000;
    else if (gap_us * 1000 < threshold_ns)
      row.kernel_wait_ns += gap_us * 1000;
    else
      row.other_idle_ns += gap_us * 1000;
  }
}

}  // namespace

namespace {

/// How many of `sorted` (ascending) are below a time asked for. Asked in ascending order (the
/// steps' starts, or their ends), a cursor moves forward: no search; asked out of order, a
/// binary search.
class CountBelow {
 public:
  explicit CountBelow(const std::vector<int64_t>& sorted) : v_(sorted) {}
  size_t operator()(int64_t t) {
    if (t < last_) {
      at_ = size_t(std::lower_bound(v_.begin(), v_.end(), t) - v_.begin());
    } else {
      while (at_ < v_.size() && v_[at_] < t) ++at_;
    }
    last_ = t;
    return at_;
  }

 private:
  const std::vector<int64_t>& v_;
  size_t at_ = 0;
  int64_t last_ = std::numeric_limits<int64_t>::min();
};

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

/// The union of the streams' busy intervals (each stream's sorted and disjoint), and the time two
/// or more streams ran at once, from one walk over all the intervals in start order (a merge of
/// the streams' lists, not a sort of them all).
Intervals union_of_streams(std::vector<Intervals> streams, int64_t& overlap_ns) {
  overlap_ns = 0;
  if (streams.size() == 1) return std::move(streams.front());
  Intervals all;
  size_t total = 0;
  for (const Intervals& s : streams) total += s.size();
  all.reserve(total);
  using Head = std::pair<std::pair<int64_t, int64_t>, size_t>;  // (interval, stream): earliest first
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  std::vector<size_t> next(streams.size(), 0);
  for (size_t s = 0; s < streams.size(); ++s)
    if (!streams[s].empty()) heads.push({streams[s][0], s});
  // In start order, the part of an interval before the largest end so far (e1) is covered
  // twice (each stream's intervals are disjoint, so another stream's), less what was already
  // covered twice (before the second largest end, e2).
  int64_t e1 = std::numeric_limits<int64_t>::min(), e2 = e1;
  while (!heads.empty()) {
    const auto [a, b] = heads.top().first;
    const size_t s = heads.top().second;
    heads.pop();
    if (++next[s] < streams[s].size()) heads.push({streams[s][next[s]], s});
    const int64_t from = std::max(a, e2), to = std::min(b, e1);
    if (to > from) overlap_ns += to - from;
    if (b > e1) {
      e2 = e1;
      e1 = b;
    } else if (b > e2) {
      e2 = b;
    }
    if (!all.empty() && a <= all.back().second)
      all.back().second = std::max(all.back().second, b);
    else
      all.push_back({a, b});
  }
  return all;
}

}  // namespace

StreamReport stream_report(const TraceIndex& index, int64_t gap_threshold_ns, IdleRule idle_rule) {
  const Trace& t = index.trace();
  StreamReport r;
  r.idle_rule = idle_rule;
  r.window_start = index.gpu_window_start;
  r.window_end = index.gpu_window_end;
  r.gap_threshold_ns = gap_threshold_ns;
  const int64_t lo = r.window_start, hi = r.window_end;
  const auto& streams = index.streams();

  // GPU work in start order, per step: the union of the work it launched grows as each item
  // comes (what it adds past the latest end so far).
  const size_t n_steps = index.steps.size();
  std::vector<StepUtilization> rows(n_steps);
  std::vector<int64_t> latest_end(n_steps, std::numeric_limits<int64_t>::min());
  int64_t outside_end = std::numeric_limits<int64_t>::min();
  auto grow = [](int64_t& busy, int64_t& latest, const Event& e) {
    busy += std::max<int64_t>(0, e.end_ns() - std::max(e.start_ns, latest));
    latest = std::max(latest, e.end_ns());
  };
  auto visit = [&](size_t i) {  // the next GPU work item in start order, over all streams
    const Event& e = t.events[i];
    if (!index.has_launch(i)) ++r.without_launch_work_items;
    if (index.launched_before_recording(i)) ++r.before_recording_work_items;
    if (n_steps == 0) return;
    const long step = index.step_of_work(i);
    if (step < 0) {
      ++r.outside_steps_work_items;
      grow(r.outside_steps_busy_ns, outside_end, e);
      return;
    }
    StepUtilization& u = rows[size_t(step)];
    grow(u.launched_busy_ns, latest_end[size_t(step)], e);
    ++u.launched_work_items;
    if (e.category == Category::Kernel) ++u.launched_kernels;
    u.to_gpu_end_ns = std::max(u.to_gpu_end_ns, e.end_ns() - t.events[index.steps[size_t(step)]].start_ns);
  };

  // Per stream, one walk over its work in start order: the union of the work (overlapping work
  // counted once; the window holds it all), each idle gap put in one class as it closes, by
  // what ended it: the work that starts the next busy interval (the first to start there) and
  // its launch call. With one stream, that walk is the start order over all streams too.
  std::vector<Intervals> busy_of(streams.size());
  std::vector<std::vector<int64_t>> starts_of(streams.size());  // for the per-step counts
  const HtaSteps hta = idle_rule == IdleRule::Hta ? hta_steps(index) : HtaSteps{};
  for (size_t s = 0; s < streams.size(); ++s) {
    const std::vector<size_t>& idx = streams[s].work;  // in start order
    StreamRow row;
    row.device = streams[s].device;
    row.stream = streams[s].stream;
    row.window_ns = hi - lo;
    row.work_items = int64_t(idx.size());
    Intervals& busy = busy_of[s];
    std::vector<int64_t>& starts = starts_of[s];
    busy.reserve(idx.size());
    starts.reserve(idx.size());
    auto idle = [&](int64_t gap, long call, bool after_work) {
      if (gap <= 0) return;
      const int64_t prev_end = busy.empty() ? lo : busy.back().second;
      const int64_t returned = call >= 0 ? t.events[size_t(call)].end_ns() : prev_end;
      if (returned > prev_end) {  // then, past a latency, it waited on something else: other
        const int64_t host = host_wait_end(returned, prev_end + gap) - prev_end;
        row.host_wait_ns += host;
        row.other_idle_ns += gap - host;
      } else if (after_work && gap <= gap_threshold_ns)
        row.kernel_wait_ns += gap;
      else
        row.other_idle_ns += gap;
    };
    const bool only = streams.size() == 1;
    for (size_t i : idx) {
      const Event& e = t.events[i];
      if (only) visit(i);
      starts.push_back(e.start_ns);
      if (!busy.empty() && e.start_ns <= busy.back().second) {
        busy.back().second = std::max(busy.back().second, e.end_ns());
        continue;
      }
      idle(e.start_ns - (busy.empty() ? lo : busy.back().second), index.launch_of(i), !busy.empty());
      busy.push_back({e.start_ns, e.end_ns()});
    }
    // After the last work: nothing left to wait for.
    if (const int64_t tail = hi - (busy.empty() ? lo : busy.back().second); tail > 0) row.other_idle_ns += tail;
    row.busy_ns = covered(busy, lo, hi);
    if (idle_rule == IdleRule::Hta) hta_idle_split(index, hta, idx, gap_threshold_ns, row);
    r.streams.push_back(row);
  }
  if (streams.size() > 1) {  // the streams' lists merged, in start order
    using Head = std::pair<int64_t, size_t>;  // (start, stream): the earliest unread first
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
    std::vector<size_t> next(streams.size(), 0);
    for (size_t s = 0; s < streams.size(); ++s)
      if (!streams[s].work.empty()) heads.push({starts_of[s][0], s});
    while (!heads.empty()) {
      const size_t s = heads.top().second;
      heads.pop();
      const size_t i = streams[s].work[next[s]++];
      if (next[s] < streams[s].work.size()) heads.push({starts_of[s][next[s]], s});
      visit(i);
    }
  }
  // "GPU busy": the union over the streams, and the time two or more ran at once.
  const Intervals merged_all = union_of_streams(std::move(busy_of), r.overlap_ns);
  r.busy_ns = covered(merged_all, lo, hi);

  // The items that start in a step's wall time, counted per stream (the steps come in start
  // order: the counts of items starting before their starts move forward, as mostly do those
  // before their ends).
  std::vector<CountBelow> before_start, before_end;
  for (const auto& starts : starts_of) before_start.emplace_back(starts), before_end.emplace_back(starts);
  for (size_t k = 0; k < n_steps; ++k) {
    const Event& step = t.events[index.steps[k]];
    StepUtilization& u = rows[k];
    u.step = std::string(step.name);
    u.duration_ns = step.dur_ns;
    u.busy_ns = covered(merged_all, step.start_ns, step.end_ns());
    for (size_t s = 0; s < streams.size(); ++s)
      u.kernels += int64_t(before_end[s](step.end_ns()) - before_start[s](step.start_ns));
  }
  r.steps = std::move(rows);
  return r;
}

// --- Synchronize ---------------------------------------------------------------------------

bool is_synchronize(const Event& e) {
  return is_launch_call(e.category) && e.name.find("Synchronize") != std::string_view::npos;
}

bool waits_for_gpu(const Event& call) {
  return is_synchronize(call) || (starts_gpu_work(call.name) && !starts_gpu_work_async(call.name));
}

double SyncRow::idle_share(const Trace& t) const {
  const int64_t d = t.events[call].dur_ns;
  return d > 0 ? 1.0 - double(gpu_busy_ns) / double(d) : 0.0;
}

std::vector<SyncRow> sync_report(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::vector<size_t> calls = index.synchronizes();
  if (calls.empty()) return {};
  std::vector<std::pair<int64_t, int64_t>> work;
  work.reserve(index.device_work().size());
  for (size_t i : index.device_work()) work.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  std::sort(calls.begin(), calls.end(),
            [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; });
  std::sort(work.begin(), work.end());
  std::vector<int64_t> starts, ends;
  for (const auto& w : work) starts.push_back(w.first), ends.push_back(w.second);
  std::sort(ends.begin(), ends.end());
  const auto busy = merge(std::move(work));
  std::vector<SyncRow> rows;
  for (size_t c : calls) {
    const Event& e = t.events[c];
    SyncRow r;
    r.call = c;
    r.gpu_busy_ns = covered(busy, e.start_ns, e.end_ns());
    // Overlapping: started before the call ended, less those that ended before it began.
    r.work_items = (std::lower_bound(starts.begin(), starts.end(), e.end_ns()) - starts.begin()) -
                   (std::upper_bound(ends.begin(), ends.end(), e.start_ns) - ends.begin());
    rows.push_back(r);
  }
  return rows;
}

}  // namespace pil::trace
