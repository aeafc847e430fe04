#include "trace/reports.h"

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

namespace pil::trace {
namespace {


/// Runs `f` on a thread of its own when `parallel` (and a thread can be had), else when its
/// result is asked for.
template <typename F>
auto beside(bool parallel, F f) -> std::future<decltype(f())> {
  if (parallel) {
    try {
      return std::async(std::launch::async, std::move(f));
    } catch (const std::system_error&) {
    }
  }
  return std::async(std::launch::deferred, std::move(f));
}

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

/// Merges intervals (start, end) into a sorted union (in place: no second copy).
std::vector<std::pair<int64_t, int64_t>> merge(std::vector<std::pair<int64_t, int64_t>> v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  size_t kept = 0;
  for (size_t k = 0; k < v.size(); ++k) {
    if (kept > 0 && v[k].first <= v[kept - 1].second)
      v[kept - 1].second = std::max(v[kept - 1].second, v[k].second);
    else
      v[kept++] = v[k];
  }
  v.resize(kept);
  return v;
}

/// Length of the union of `merged` (sorted, disjoint) clipped to [lo, hi].
int64_t covered(const std::vector<std::pair<int64_t, int64_t>>& merged, int64_t lo, int64_t hi) {
  int64_t sum = 0;
  // The first interval that ends after lo; intervals are disjoint, so ends are sorted too.
  auto it = std::lower_bound(merged.begin(), merged.end(), lo,
                             [](const std::pair<int64_t, int64_t>& iv, int64_t v) { return iv.second <= v; });
  for (; it != merged.end() && it->first < hi; ++it) {
    const int64_t a = std::max(it->first, lo), b = std::min(it->second, hi);
    if (b > a) sum += b - a;
  }
  return sum;
}

}  // namespace

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

// --- Index -----------------------------------------------------------------------------------

TraceIndex::TraceIndex(const Trace& trace, unsigned threads, bool table_ahead)
    : t_(trace), threads_(threads) {
  if (t_.events.size() >= kNoOrdinal) throw std::length_error("a trace of more than 4 billion events");
  if (threads > 1 && table_ahead) {
    try {
      table_thread_ = std::thread([this] {
        try {
          key_averages();
        } catch (...) {  // asked for again on the caller's thread, which then sees the error
        }
      });
    } catch (const std::system_error&) {  // no thread to spare: computed on first use
    }
  }
  try {
    build();
  } catch (...) {  // no destructor runs for an index not made: the thread is joined here
    if (table_thread_.joinable()) table_thread_.join();
    throw;
  }
}

void TraceIndex::build() {
  const auto& ev = t_.events;
  const size_t n = ev.size();
  // Two passes over the events, no more: they are most of what building costs (a 1 GB trace
  // holds about 200 MB of them, and a lookup that comes back to an event finds it out of the
  // cache). The first counts what the second fills in, so each list is allocated once at its
  // size (a list grown by doubling copies itself into fresh pages), and finds the steps, which
  // the second needs.
  size_t n_calls = 0;
  uint64_t max_corr = 0;
  std::vector<size_t> stream_sizes;  // by place in streams_ (first seen first, sorted later)
  auto stream_slot = [&](const Event& e, size_t& last) {  // most GPU work follows its stream's
    if (last < streams_.size() && streams_[last].device == e.pid && streams_[last].stream == e.tid)
      return last;
    for (last = 0; last < streams_.size(); ++last)
      if (streams_[last].device == e.pid && streams_[last].stream == e.tid) return last;
    streams_.push_back(Stream{e.pid, e.tid, {}});
    stream_sizes.push_back(0);
    return last;
  };
  bool first = true;  // the window without steps: every event but metadata
  auto extend = [&](const Event& e) {
    if (first || e.start_ns < window_start) window_start = e.start_ns;
    if (first || e.end_ns() > window_end) window_end = e.end_ns();
    first = false;
  };
  {
    size_t last = 0;
    for (const Event& e : ev) {
      if (is_launch_call(e.category)) {
        ++n_calls;
        max_corr = std::max(max_corr, e.correlation);
      } else if (is_device_work(e.category)) {
        ++stream_sizes[stream_slot(e, last)];
      } else if (e.category == Category::UserAnnotation && is_step_name(e.name)) {
        steps.push_back(size_t(&e - ev.data()));
      }
      if (e.category != Category::Other) extend(e);
    }
  }
  size_t n_work = 0;
  for (size_t k = 0; k < streams_.size(); ++k) {
    streams_[k].work.reserve(stream_sizes[k]);
    n_work += stream_sizes[k];
  }
  // The steps in time order, and the profiled window: their span, or without steps, of all events.
  std::stable_sort(steps.begin(), steps.end(),
                   [&](size_t a, size_t b) { return ev[a].start_ns < ev[b].start_ns; });
  if (!steps.empty()) {
    first = true;
    for (size_t i : steps) extend(ev[i]);
  }
  for (size_t i : steps) {
    step_starts_.push_back(ev[i].start_ns);
    step_ends_.push_back(ev[i].end_ns());
  }
  auto step_from = [&](int64_t at, size_t& started) {  // `started`: a hint, then the answer's count
    started = steps_started_by(at, started);
    return started >= 1 && at < step_ends_[started - 1] ? int32_t(started - 1) : int32_t(-1);
  };
  // The GPU figures' window: the profiled window widened to every GPU work item (the GPU runs
  // behind the CPU).
  gpu_window_start = window_start;
  gpu_window_end = window_end;

  // The second pass: each event to the lists of its kind, with its place among its kind; a launch
  // call's correlation id (the first call with an id keeps it) and step (by its start); GPU work
  // to its stream, to its launch call where that came before it, and to its step (its launch
  // call's, else its own start's).
  api_calls_.reserve(n_calls);
  device_work_.reserve(n_work);
  ordinal_.resize(n);
  call_of_work_.resize(n_work);
  step_of_work_.resize(n_work);
  std::vector<int32_t> step_of_call(steps.empty() ? 0 : n_calls);
  std::vector<bool> stream_in_order(streams_.size(), true);  // each stream's work in start order
  // Each stream's latest end so far: in start order, when the earlier work had all ended.
  constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> busy_until(streams_.size(), kNever);
  free_before_.resize(n_work);
  std::vector<size_t> waiting;  // GPU work met before its launch call, if any
  FirstById call_of(max_corr, n);
  {
    std::string_view last_call;  // names are interned: most calls repeat the one before
    bool last_sync = false;
    size_t last = 0, started = 0;
    for (size_t i = 0; i < n; ++i) {
      const Event& e = ev[i];
      if (is_launch_call(e.category)) {
        const size_t c = api_calls_.size();
        ordinal_[i] = uint32_t(c);
        api_calls_.push_back(i);
        call_of.add(e.correlation, long(c));
        if (e.correlation && (!first_launch_correlation_ || e.correlation < first_launch_correlation_))
          first_launch_correlation_ = e.correlation;
        if (!steps.empty()) step_of_call[c] = step_from(e.start_ns, started);
        if (e.name.data() != last_call.data() || e.name.size() != last_call.size())
          last_call = e.name, last_sync = is_synchronize(e);
        if (last_sync) synchronizes_.push_back(i);
      } else if (is_device_work(e.category)) {
        const size_t k = device_work_.size();
        ordinal_[i] = uint32_t(k);
        device_work_.push_back(i);
        Stream& s = streams_[stream_slot(e, last)];
        if (!s.work.empty() && e.start_ns < ev[s.work.back()].start_ns) stream_in_order[last] = false;
        s.work.push_back(i);
        free_before_[k] = busy_until[last];
        busy_until[last] = std::max(busy_until[last], e.end_ns());
        gpu_window_start = std::min(gpu_window_start, e.start_ns);
        gpu_window_end = std::max(gpu_window_end, e.end_ns());
        if (const long c = call_of[e.correlation]; c >= 0) {
          call_of_work_[k] = uint32_t(c);
          step_of_work_[k] = steps.empty() ? -1 : step_of_call[size_t(c)];
        } else {
          call_of_work_[k] = kNoOrdinal;
          waiting.push_back(k);
        }
      } else {
        ordinal_[i] = kNoOrdinal;
        if (e.category == Category::UserAnnotation && !is_step_name(e.name)) named_ranges_.push_back(i);
      }
    }
  }
  {
    size_t started = 0;
    for (size_t k : waiting) {  // their launch call came later, or is not in the trace
      const Event& e = ev[device_work_[k]];
      if (const long c = call_of[e.correlation]; c >= 0) {
        call_of_work_[k] = uint32_t(c);
        step_of_work_[k] = steps.empty() ? -1 : step_of_call[size_t(c)];
      } else if (e.correlation && e.correlation < first_launch_correlation_) {  // launched_before_recording
        // Launched before recording began (its correlation id precedes every launch call's):
        // an earlier step's work, still running when recording began, is no recorded step's.
        step_of_work_[k] = -1;
      } else {
        step_of_work_[k] = steps.empty() ? -1 : step_from(e.start_ns, started);
      }
    }
  }
  auto earlier = [&](size_t a, size_t b) { return ev[a].start_ns < ev[b].start_ns; };
  // GPU work by stream, each in start order; streams by device, then stream.
  for (size_t s = 0; s < streams_.size(); ++s) {
    if (stream_in_order[s]) continue;
    std::stable_sort(streams_[s].work.begin(), streams_[s].work.end(), earlier);
    int64_t until = kNever;
    for (size_t i : streams_[s].work) {
      free_before_[ordinal_[i]] = until;
      until = std::max(until, ev[i].end_ns());
    }
  }
  std::sort(streams_.begin(), streams_.end(), [](const Stream& a, const Stream& b) {
    return std::pair(a.device, a.stream) < std::pair(b.device, b.stream);
  });

  // GPU work grouped by launch call (a counting sort), each call's work in start order:
  // the work of call ordinal c is work_[first_work_[c], first_work_[c + 1]).
  first_work_.assign(api_calls_.size() + 1, 0);
  for (uint32_t c : call_of_work_)
    if (c != kNoOrdinal) ++first_work_[c + 1];
  size_t launching = 0;  // calls that launched GPU work
  for (size_t c = 0; c < api_calls_.size(); ++c) {
    launching += first_work_[c + 1] > 0;
    first_work_[c + 1] += first_work_[c];
  }
  work_.resize(first_work_.back());
  {
    std::vector<uint32_t> fill(first_work_.begin(), first_work_.end() - 1);
    for (size_t k = 0; k < n_work; ++k)
      if (call_of_work_[k] != kNoOrdinal) work_[fill[call_of_work_[k]]++] = device_work_[k];
  }
  launch_calls_.reserve(launching);
  for (size_t c = 0; c < api_calls_.size(); ++c) {
    const uint32_t lo = first_work_[c], hi = first_work_[c + 1];
    if (hi == lo) continue;
    launch_calls_.push_back(api_calls_[c]);
    if (hi - lo > 1 && !std::is_sorted(work_.begin() + lo, work_.begin() + hi, earlier))
      std::stable_sort(work_.begin() + lo, work_.begin() + hi, earlier);
  }
}

size_t TraceIndex::steps_started_by(int64_t t, size_t hint) const {
  // The first step starting after t (steps are in time order): the hint or the one after it
  // when it fits, else a binary search.
  const size_t n = step_starts_.size();
  for (size_t k = hint; k <= hint + 1 && k <= n; ++k)
    if ((k == 0 || step_starts_[k - 1] <= t) && (k == n || step_starts_[k] > t)) return k;
  return size_t(std::upper_bound(step_starts_.begin(), step_starts_.end(), t) - step_starts_.begin());
}

long TraceIndex::step_at(int64_t t) const {
  size_t from_start = 0;
  return step_at(t, from_start);
}

long TraceIndex::step_at(int64_t t, size_t& hint) const {
  // The last step starting at or before t, if t is inside it.
  hint = steps_started_by(t, hint);
  return hint >= 1 && t < step_ends_[hint - 1] ? long(hint - 1) : -1;
}

TraceIndex::~TraceIndex() {
  if (table_thread_.joinable()) table_thread_.join();
}

const KeyAverages& TraceIndex::key_averages() const {
  return key_averages_.get([&] { return trace::key_averages(t_); });
}

const std::vector<MemoryRow>& TraceIndex::memory() const {
  return memory_.get([&] { return memory_report(*this); });
}

std::string device_label(const MemoryRow& row) {
  return row.cuda ? "cuda:" + std::to_string(row.device) : std::string("cpu");
}

const MemoryRow* main_memory_row(const std::vector<MemoryRow>& rows) {
  const MemoryRow* pick = nullptr;
  for (const auto& r : rows)
    if (!pick || (r.cuda && !pick->cuda)) pick = &r;
  return pick;
}

int64_t TraceIndex::stream_free_before(size_t i) const {
  return i < t_.events.size() && is_device_work(t_.events[i].category)
             ? free_before_[ordinal_[i]]
             : std::numeric_limits<int64_t>::min();
}

int64_t median_ns(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + long(n / 2), v.end());
  const int64_t upper = v[n / 2];
  if (n % 2) return upper;
  const int64_t lower = *std::max_element(v.begin(), v.begin() + long(n / 2));
  return lower + (upper - lower + 1) / 2;  // the middles' mean, rounded half up (5 and 6: 6)
}

DurationStats DurationStats::of(std::vector<int64_t> v) {
  DurationStats s;
  if (v.empty()) return s;
  s.count = int64_t(v.size());
  s.min = s.max = v.front();
  for (int64_t x : v) {
    s.total += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean = double(s.total) / double(s.count);
  // The median by selection, not a full sort (a kernel may have millions of calls): the middle
  // element, and for an even count the largest of the lower half beside it.
  const size_t n = v.size();
  const auto mid = v.begin() + ptrdiff_t(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  s.median = n % 2 ? double(*mid) : (double(*std::max_element(v.begin(), mid)) + double(*mid)) / 2.0;
  double sq = 0;
  for (int64_t x : v) sq += (double(x) - s.mean) * (double(x) - s.mean);
  s.stddev = n > 1 ? std::sqrt(sq / double(n - 1)) : 0.0;
  return s;
}

// --- Kernels ---------------------------------------------------------------------------------

namespace {

/// The events of `among` (indices in event order) that pass `keep(i)`, grouped by name: groups
/// in order of each name's first event, each group's event indices in event order.
struct ByName {
  std::vector<std::string_view> names;
  std::vector<std::vector<size_t>> events;
};
template <typename Keep>
ByName group_by_name(const Trace& t, const std::vector<size_t>& among, Keep keep) {
  NameIds ids;
  ByName g;
  for (size_t i : among) {
    if (!keep(i)) continue;
    const uint32_t id = ids(t.events[i].name);
    if (id >= g.events.size()) {
      g.events.resize(id + 1);
      g.names.push_back(t.events[i].name);
    }
    g.events[id].push_back(i);
  }
  return g;
}

/// The durations of the events of `among` (indices in event order) that pass `keep(i)`, grouped
/// by name as group_by_name groups them, in one pass (a report that needs no more of each event
/// does not come back to it): each group's durations in event order.
struct DurationsByName {
  std::vector<std::string_view> names;
  std::vector<std::vector<int64_t>> durations;
};
template <typename Keep>
DurationsByName durations_by_name(const Trace& t, const std::vector<size_t>& among, Keep keep) {
  NameIds ids;
  DurationsByName g;
  for (size_t i : among) {
    if (!keep(i)) continue;
    const Event& e = t.events[i];
    const uint32_t id = ids(e.name);
    if (id >= g.durations.size()) {
      g.durations.resize(id + 1);
      g.names.push_back(e.name);
    }
    g.durations[id].push_back(e.dur_ns);
  }
  return g;
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

  const ByName kernels = group_by_name(t, index.device_work(), [&](size_t i) {
    const Event& e = t.events[i];
    if (e.category != Category::Kernel) return false;
    if (range.empty()) return true;
    if (const long call = index.launch_of(i); call >= 0) return inside(spans, t.events[size_t(call)]);
    const long op = links_to_itself(e) ? -1 : op_by_id[e.external_id];  // no operator's id
    return op >= 0 && inside(spans, t.events[size_t(op)]);
  });
  std::vector<KernelRow> rows;
  int64_t all = 0;
  for (size_t g = 0; g < kernels.names.size(); ++g) {
    const std::vector<size_t>& idx = kernels.events[g];
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
    all += r.time.total;
    rows.push_back(std::move(r));
  }
  for (auto& r : rows) r.share = all > 0 ? double(r.time.total) / double(all) : 0;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const KernelRow& a, const KernelRow& b) { return a.time.total > b.time.total; });
  return rows;
}

std::vector<ApiRow> api_report(const TraceIndex& index) {
  const Trace& t = index.trace();
  DurationsByName calls = durations_by_name(t, index.api_calls(), [](size_t) { return true; });
  std::vector<ApiRow> rows;
  int64_t all = 0;
  for (size_t g = 0; g < calls.names.size(); ++g) {
    ApiRow r;
    r.name = std::string(calls.names[g]);
    r.time = DurationStats::of(std::move(calls.durations[g]));
    all += r.time.total;
    rows.push_back(std::move(r));
  }
  for (auto& r : rows) r.share = all > 0 ? double(r.time.total) / double(all) : 0;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const ApiRow& a, const ApiRow& b) { return a.time.total > b.time.total; });
  return rows;
}

std::string offset_evidence(const ClockOffset& o) {
  if (o.late())
    return "no GPU work starts sooner than " + format_duration(o.least_delay_ns) + " after its launch call, and " +
           count_of(int64_t(o.idle_waits.size()), "item", "items") + " waited that long on an idle GPU";
  return std::to_string(o.early.size()) + " of " + std::to_string(o.async_launches) +
         " launches' GPU work starts before the launch call begins, up to " + format_duration(o.most_early_ns) +
         " before";
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
  o.least_delay_ns = o.found() ? offset : overall == std::numeric_limits<int64_t>::max() ? 0 : overall;
  return o;
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
    if (first.category == Category::Kernel) {
      ++r.kernel_launches;
      if (l.work_shorter_than_call) ++r.shorter_than_call;
    }
    if (work.size() > 1 || is_graph_launch(call.name)) {
      ++r.graph_launches;
      r.graph_kernels += int64_t(work.size());
    }
    const int64_t d = std::max<int64_t>(l.delay_ns, 0);
    clipped.push_back(d);
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

  const ByName kernels = group_by_name(t, index.device_work(), [&](size_t i) { return t.events[i].category == Category::Kernel; });
  // Against the calls of the same name and launch shape (a copy kernel's grid follows its
  // tensor's size: a larger copy is no outlier).
  std::vector<std::pair<size_t, int64_t>> outliers;  // (kernel, its group's median)
  for (const auto& named : kernels.events) {
    std::map<ShapeKey, std::vector<size_t>> by_shape;
    for (size_t i : named) by_shape[shape_key(launch_shape_of(index, i))].push_back(i);
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

// --- Chain -----------------------------------------------------------------------------------

std::vector<ChainLine> chain_report(const TraceIndex& index, const std::string& range,
                                    size_t instance) {
  const Trace& t = index.trace();
  std::vector<size_t> found;
  for (size_t i = 0; i < t.events.size(); ++i)
    if (!t.events[i].on_device() && t.events[i].name == range) found.push_back(i);
  std::sort(found.begin(), found.end(),
            [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; });
  if (instance >= found.size()) return {};
  const Event& root = t.events[found[instance]];

  // The root whatever it is (a step, a range, an operator, a Python function recorded with
  // with_stack or with_modules), and the operators, ranges and calls of its thread inside it.
  std::vector<size_t> inner = {found[instance]};
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (i == found[instance] || !is_cpu_slice(e.category) || e.pid != root.pid || e.tid != root.tid)
      continue;
    if (e.start_ns >= root.start_ns && e.end_ns() <= root.end_ns()) inner.push_back(i);
  }
  order_for_nesting(t.events, inner);
  std::vector<ChainLine> lines;
  nest(t.events, inner, [&](size_t i, long, int depth) {
    const Event& e = t.events[i];
    lines.push_back({depth, i, false, e.start_ns - root.start_ns, 0});
    for (size_t w : index.work_of(i)) {
      const Event& g = t.events[w];
      const bool queued = index.stream_free_before(w) > e.end_ns();
      const int64_t delay = g.start_ns - e.end_ns();
      lines.push_back({depth + 1, w, true, g.start_ns - root.start_ns, delay, queued,
                       !queued && waited_after_return(delay)});
    }
    return true;
  });
  return lines;
}

// --- Diff ------------------------------------------------------------------------------------

const char* to_string(Change c) {
  switch (c) {
    case Change::Added: return "added";
    case Change::Removed: return "removed";
    case Change::Faster: return "faster";
    case Change::Slower: return "slower";
    case Change::Same: return "same";
  }
  return "?";
}

DiffReport diff_report(const Trace& a, const Trace& b, double tolerance) {
  const KeyAverages ka = key_averages(a), kb = key_averages(b);
  DiffReport d;
  d.cpu_a = ka.self_cpu_total_ns;
  d.cpu_b = kb.self_cpu_total_ns;
  d.device_a = ka.self_device_total_ns;
  d.device_b = kb.self_device_total_ns;
  for (const auto& e : a.events) d.kernels_a += e.category == Category::Kernel;
  for (const auto& e : b.events) d.kernels_b += e.category == Category::Kernel;

  std::map<std::string, DiffRow> rows;
  auto add = [&](const KeyAverages& k, bool is_a) {
    for (const auto& r : k.rows) {
      if (is_step_row(r.name)) continue;  // step numbers differ between runs
      DiffRow& row = rows[r.name];
      row.name = r.name;
      row.device = r.device_work;
      const int64_t time = r.device_work ? r.device_total_ns : r.cpu_total_ns;
      (is_a ? row.calls_a : row.calls_b) = r.calls;
      (is_a ? row.time_a : row.time_b) = time;
    }
  };
  add(ka, true);
  add(kb, false);
  for (auto& [name, row] : rows) {
    if (row.calls_a == 0)
      row.change = Change::Added;
    else if (row.calls_b == 0)
      row.change = Change::Removed;
    else if (double(row.time_b) > double(row.time_a) * (1 + tolerance))
      row.change = Change::Slower;
    else if (double(row.time_b) < double(row.time_a) * (1 - tolerance))
      row.change = Change::Faster;
    else
      row.change = Change::Same;
    d.rows.push_back(row);
  }
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::llabs(x.time_b - x.time_a) > std::llabs(y.time_b - y.time_a);
  });
  return d;
}

// --- Memory ----------------------------------------------------------------------------------

std::map<std::pair<bool, int32_t>, std::vector<size_t>> memory_events_by_device(const Trace& t) {
  std::map<std::pair<bool, int32_t>, std::vector<size_t>> by_device;
  if (t.memory.empty()) return by_device;  // no memory events: nothing to look for
  for (size_t i = 0; i < t.events.size(); ++i)
    if (const MemoryInfo* m = t.memory_info(t.events[i])) by_device[{m->cuda, m->device}].push_back(i);
  for (auto& [key, idx] : by_device)
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return t.events[a].start_ns < t.events[b].start_ns;
    });
  return by_device;
}

std::vector<MemoryRow> memory_report(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::vector<MemoryRow> rows;
  for (const auto& [key, idx] : memory_events_by_device(t)) {
    MemoryRow r;
    r.cuda = key.first;
    r.device = key.second;
    int64_t in_use = 0;
    size_t peak_event = idx.front();
    for (size_t i : idx) {
      const MemoryInfo& m = *t.memory_info(t.events[i]);
      (m.bytes >= 0 ? r.allocations : r.frees) += 1;
      if (m.bytes > 0) r.allocated_bytes += m.bytes;
      in_use += m.bytes;
      if (in_use > r.peak_growth) {
        r.peak_growth = in_use;
        peak_event = i;
      }
    }
    r.end_growth = in_use;
    if (r.peak_growth > 0) {  // memory rose above the start: say when and where
      const Event& p = t.events[peak_event];
      r.peak_at_ns = p.start_ns;
      r.peak_total = t.memory_info(p)->total_allocated;
      // The innermost range and operator open at that moment, by the table's rule: of the
      // slices holding the time, the latest to start, then the shortest. Ranges on the allocating thread first; else on any thread of the
      // process (LibTorch runs a GPU backward on its own thread, outside the user's ranges).
      auto innermost = [&](Category c, bool same_thread) {
        const Event* best = nullptr;
        for (const auto& e : t.events) {
          if (e.category != c || e.pid != p.pid || (same_thread && e.tid != p.tid) ||
              e.start_ns > p.start_ns || e.end_ns() < p.start_ns ||
              (c == Category::UserAnnotation && is_step_name(e.name)))
            continue;
          if (!best || e.start_ns > best->start_ns ||
              (e.start_ns == best->start_ns && e.dur_ns < best->dur_ns))
            best = &e;
        }
        return best ? std::string(best->name) : std::string();
      };
      r.peak_range = innermost(Category::UserAnnotation, true);
      if (r.peak_range.empty()) r.peak_range = innermost(Category::UserAnnotation, false);
      r.peak_op = innermost(Category::CpuOp, true);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// --- The profiler's own work ------------------------------------------------------------------

bool is_profiler_overhead(const Event& e) {
  if (e.category != Category::Other || e.dur_ns <= 0) return false;
  // libkineto's names for CUPTI's overhead kinds (CUpti_ActivityOverheadKind).
  for (std::string_view name : {"Activity Buffer Request", "Buffer Flush", "Driver Compiler",
                                "Runtime Triggered Module Loading", "Lazy Function Loading", "Command Buffer Full",
                                "UVM Activity Init"})
    if (e.name == name) return true;
  // Names a user's could have; "Unrecognized" for a kind the Kineto that wrote the trace did not
  // know (before 2025 it named CUDA 12.4's lazy-loading kinds so).
  for (std::string_view name : {"Instrumentation", "Resource", "Unknown", "Unrecognized"})
    if (e.name == name) return e.pid == -1;
  return false;
}

std::vector<ProfilerOverhead> profiler_overhead(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::vector<ProfilerOverhead> out;
  for (size_t i = 0; i < t.events.size(); ++i)
    if (is_profiler_overhead(t.events[i])) {
      ProfilerOverhead o;
      o.event = i;
      out.push_back(o);
    }
  if (out.empty()) return out;
  std::stable_sort(out.begin(), out.end(), [&](const ProfilerOverhead& a, const ProfilerOverhead& b) {
    return t.events[a.event].start_ns < t.events[b.event].start_ns;
  });
  int64_t longest_record = 0;
  for (ProfilerOverhead& o : out) {
    o.step = index.step_at(t.events[o.event].start_ns);
    longest_record = std::max(longest_record, t.events[o.event].dur_ns);
  }
  // Each call against the records that can overlap it: those starting from the call's start less
  // the longest record to the call's end (records in start order: a search, not a scan).
  for (size_t c : index.api_calls()) {
    const Event& call = t.events[c];
    // A synchronize, or a blocking copy or set, waits for the GPU whatever the profiler does.
    const bool waits_for_gpu = is_synchronize(call) || (starts_gpu_work(call.name) && !starts_gpu_work_async(call.name));
    auto first = std::lower_bound(out.begin(), out.end(), call.start_ns - longest_record,
                                  [&](const ProfilerOverhead& o, int64_t ts) { return t.events[o.event].start_ns < ts; });
    for (auto it = first; it != out.end() && t.events[it->event].start_ns < call.end_ns(); ++it) {
      const Event& e = t.events[it->event];
      if (call.end_ns() <= e.start_ns || call.start_ns >= e.end_ns()) continue;
      if (it->longest_call == ProfilerOverhead::npos || call.dur_ns > t.events[it->longest_call].dur_ns)
        it->longest_call = c;
      if (call.start_ns <= e.start_ns && call.end_ns() >= e.end_ns() && !waits_for_gpu &&
          (it->spanning_call == ProfilerOverhead::npos || call.dur_ns > t.events[it->spanning_call].dur_ns))
        it->spanning_call = c;
    }
  }
  for (ProfilerOverhead& o : out)
    if (o.spanning_call != ProfilerOverhead::npos) o.spanning_step = index.step_at(t.events[o.spanning_call].start_ns);
  // Where no call spans a record: a thread with no CUDA call during it whose next one begins just
  // after it ends was most likely held by it (the record ends as that thread's call begins).
  if (std::all_of(out.begin(), out.end(), [](const ProfilerOverhead& o) { return o.spanning_call != ProfilerOverhead::npos; }))
    return out;
  // Per thread: its calls by start, and the latest end among the first k of them (whether one
  // that started before a time still ran at another, in a search).
  struct ThreadCalls {
    std::vector<size_t> calls;
    std::vector<int64_t> reach;
  };
  std::map<std::pair<int64_t, int64_t>, ThreadCalls> calls_of;
  std::vector<size_t> by_start;
  for (size_t c : index.api_calls()) {
    calls_of[{t.events[c].pid, t.events[c].tid}].calls.push_back(c);
    by_start.push_back(c);
  }
  auto earlier = [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; };
  for (auto& [thread, tc] : calls_of) {
    std::stable_sort(tc.calls.begin(), tc.calls.end(), earlier);
    int64_t reach = std::numeric_limits<int64_t>::min();
    for (size_t c : tc.calls) tc.reach.push_back(reach = std::max(reach, t.events[c].end_ns()));
  }
  std::stable_sort(by_start.begin(), by_start.end(), earlier);
  auto starts_before = [&](size_t c, int64_t ts) { return t.events[c].start_ns < ts; };
  std::map<std::pair<int64_t, int64_t>, std::vector<ProfilerOverhead*>> resumed_on;  // by thread
  for (ProfilerOverhead& o : out) {
    if (o.spanning_call != ProfilerOverhead::npos) continue;
    const Event& e = t.events[o.event];
    const int64_t until = e.end_ns() + std::min(kOverheadResumeNs, e.dur_ns / 10);
    for (auto it = std::lower_bound(by_start.begin(), by_start.end(), e.end_ns(), starts_before);
         it != by_start.end() && t.events[*it].start_ns <= until; ++it) {
      const Event& call = t.events[*it];
      // None of that thread's calls during the record: those starting before its end all ended
      // before it began.
      const ThreadCalls& mine = calls_of.at({call.pid, call.tid});
      const size_t before = size_t(std::lower_bound(mine.calls.begin(), mine.calls.end(), e.end_ns(), starts_before) -
                                   mine.calls.begin());
      if (before > 0 && mine.reach[before - 1] > e.start_ns) continue;
      o.resumed_call = *it;
      o.resumed_step = index.step_at(call.start_ns);
      resumed_on[{call.pid, call.tid}].push_back(&o);
      break;
    }
  }
  if (resumed_on.empty()) return out;
  // The operator or range each held thread was inside, innermost (one pass over the events,
  // looking only at the held threads', and at the records that start inside each: the records
  // are in start order).
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& x = t.events[i];
    if (!is_torch_scope(x.category) || is_step(x)) continue;
    const auto held = resumed_on.find({x.pid, x.tid});
    if (held == resumed_on.end()) continue;
    const std::vector<ProfilerOverhead*>& records = held->second;
    for (auto it = std::lower_bound(records.begin(), records.end(), x.start_ns,
                                    [&](const ProfilerOverhead* o, int64_t ts) { return t.events[o->event].start_ns < ts; });
         it != records.end() && t.events[(*it)->event].start_ns <= x.end_ns(); ++it) {
      ProfilerOverhead* o = *it;
      if (x.end_ns() < t.events[o->event].end_ns()) continue;
      if (o->held_op == ProfilerOverhead::npos || x.dur_ns < t.events[o->held_op].dur_ns) o->held_op = i;
    }
  }
  return out;
}

std::string profiler_overhead_text(const TraceIndex& index, const std::vector<ProfilerOverhead>& overhead) {
  if (overhead.empty()) return "";
  const Trace& t = index.trace();
  auto where = [&](long step) {
    if (step >= 0) return "in " + std::string(t.events[index.steps[size_t(step)]].name);
    return std::string(index.steps.empty() ? "" : "outside the steps");  // no steps: nothing to be outside
  };
  auto then = [](const std::string& text, const char* before) { return text.empty() ? text : before + text; };
  std::string s = "the profiler's own work (CUPTI's overhead records, on a lane of their own; not the program's): ";
  for (size_t i = 0; i < std::min<size_t>(3, overhead.size()); ++i) {
    const Event& e = t.events[overhead[i].event];
    s += std::string(i ? ", " : "") + std::string(e.name) + " " + format_duration(e.dur_ns) + then(where(overhead[i].step), " ");
  }
  if (overhead.size() > 3) s += " and " + std::to_string(overhead.size() - 3) + " more";
  // The longest record a thread most likely waited for: a call spans it, or began just after it.
  auto waited = overhead.end();
  for (auto it = overhead.begin(); it != overhead.end(); ++it)
    if (it->waiting_call() != ProfilerOverhead::npos &&
        (waited == overhead.end() || t.events[it->event].dur_ns > t.events[waited->event].dur_ns))
      waited = it;
  if (waited != overhead.end() && waited->spanning_call != ProfilerOverhead::npos) {
    const Event& call = t.events[waited->spanning_call];
    return s + "; " + std::string(call.name) + " (" + format_duration(call.dur_ns) + then(where(waited->spanning_step), ", ") +
           ") spans " + std::string(t.events[waited->event].name) + " " + format_duration(t.events[waited->event].dur_ns) +
           ": its thread may have waited for the profiler" +
           (waited->spanning_step >= 0 ? ", and that step's time may hold the profiler's" : "");
  }
  if (waited != overhead.end()) {
    const Event &call = t.events[waited->resumed_call], &e = t.events[waited->event];
    std::string held;
    if (waited->held_op != ProfilerOverhead::npos) {
      const Event& op = t.events[waited->held_op];
      held = ", inside " + std::string(op.name) + " (" + format_duration(op.dur_ns) + ")";
    }
    const std::string in = where(waited->resumed_step);
    return s + "; " + std::string(call.name) + (in.empty() ? "" : " (" + in + ")") + " began " +
           format_duration(call.start_ns - e.end_ns()) + " after " + std::string(e.name) + " " +
           format_duration(e.dur_ns) + " ended, on a thread that made no CUDA call during it" + held +
           ": that thread most likely waited for the profiler" +
           (held.empty() ? std::string() : ", and " + std::string(t.events[waited->held_op].name) + "'s time holds the profiler's");
  }
  int64_t longest = -1;
  for (const ProfilerOverhead& o : overhead)
    if (o.longest_call != ProfilerOverhead::npos) longest = std::max(longest, t.events[o.longest_call].dur_ns);
  const bool one = overhead.size() == 1;
  return s + (longest < 0 ? std::string("; no CUDA call ran during ") + (one ? "it" : "them") +
                                ": the trace shows no thread waiting for the profiler"
                          : std::string("; no CUDA call lasts through ") + (one ? "it" : "any") +
                                ", synchronizes and blocking copies aside (the longest call during " + (one ? "it" : "them") + " took " +
                                format_duration(longest) + "): the trace shows no thread waiting for the profiler");
}

// --- Explain ---------------------------------------------------------------------------------

namespace {

/// The longest stretch of the GPU window with no GPU work on any stream that ends at GPU work
/// (the time after the last work is no wait for a launch).
/// The GPU's idle stretches (every stream idle) that end at GPU work, the idle after the last
/// work left out (no launch ends it): the longest, and those over kLongIdleNs.
struct IdleStretches {
  int64_t longest_ns = 0;
  int64_t long_ns = 0;  ///< over kLongIdleNs, added up
  int64_t long_count = 0;
};

IdleStretches idle_stretches(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::vector<Interval> busy;
  busy.reserve(index.device_work().size());
  for (size_t i : index.device_work()) busy.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  merge(busy);
  IdleStretches s;
  int64_t reached = index.gpu_window_start;
  for (const Interval& b : busy) {
    const int64_t gap = std::min(b.from, index.gpu_window_end) - reached;
    s.longest_ns = std::max(s.longest_ns, gap);
    if (gap > kLongIdleNs) s.long_ns += gap, ++s.long_count;
    reached = b.to;
  }
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
    if (m.step_processes > 1)
      s += "; recorded by " + std::to_string(m.step_processes) +
           " processes (several processes' traces merged into one file? the per-step figures mix them: "
           "`pil-trace check`)";
    line(s);
  }
  if (!m.overhead.empty()) line(profiler_overhead_text(index, m.overhead));
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
    line(std::string(r.cuda ? "GPU " + std::to_string(r.device) : "host") + " memory: peak " +
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
    for (const auto& [kind, n] : t.unread)
      if (!Trace::unread_kind_of_event(kind))
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
           "\"CPU functions\") holds a run's CPU side only, whether or not it used a GPU, so the table's CPU "
           "columns are all it tells");
    else if (calls == 0)
      line("no GPU work in this trace (a CPU run): the table's CPU columns are the whole story");
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
  // window): the busiest stream's own split beside it.
  if (sr.streams.size() > 1) {
    const StreamRow& main = *std::max_element(sr.streams.begin(), sr.streams.end(),
                                              [](const StreamRow& a, const StreamRow& b) { return a.busy_ns < b.busy_ns; });
    split_line += "; on the busiest, stream " + std::to_string(main.stream) +
                  (devices ? " (device " + std::to_string(main.device) + ")" : "") + ": " +
                  split(main.host_wait_ns, main.kernel_wait_ns, main.other_idle_ns);
  }
  // Where the GPU mostly waits: throughout (launch/overhead bound), or mostly in one stretch or
  // a few long ones (stalls: a first call loading a library, data loading), which advise's
  // host_stall names.
  std::string waits;
  if (window && sr.busy_ns < window / 2) {
    const IdleStretches s = idle_stretches(index);
    const int64_t idle_any = window - sr.busy_ns;
    const std::string then = ": not a launch-bound loop; `pil-trace advise` looks at what the host did then)";
    if (2 * s.longest_ns >= idle_any)
      waits = " (the GPU mostly waits, " + pct(double(s.longest_ns) / double(idle_any)) + " of it in one stretch of " +
              format_duration(s.longest_ns) + then;
    else if (2 * s.long_ns >= idle_any)
      waits = " (the GPU mostly waits, " + pct(double(s.long_ns) / double(idle_any)) + " of it in " +
              std::to_string(s.long_count) + " stretches longer than " + format_duration(kLongIdleNs) +
              ", the longest " + format_duration(s.longest_ns) + then;
    else
      waits = " (launch/overhead bound: the GPU mostly waits)";
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
    std::string s = std::string("launch delay (GPU work start - launch call end), in ") +
                    (lr.waited.count ? "three" : "two") + " kinds: ";
    s += lr.latency.count
             ? "launch latency (stream idle when the call returned) median " +
                   format_duration(int64_t(lr.latency.median)) + ", max " + format_duration(lr.latency.max) +
                   " over " + count_of(lr.latency.count, "launch", "launches")
             : "no launch onto an idle stream";
    s += lr.queueing.count
             ? "; queued behind earlier work on the stream: " +
                   count_of(lr.queueing.count, "launch", "launches") + ", median wait " + format_duration(int64_t(lr.queueing.median)) +
                   " (the CPU ran ahead of those streams: the GPU had work then)"
             : "; none queued behind earlier work";
    if (lr.waited.count)
      s += "; " + count_of(lr.waited.count, "launch", "launches") + " onto an idle stream started more than " +
           format_duration(kLatencyAfterReturnNs) + " after the call returned, up to " +
           format_duration(lr.waited.max) +
           " (waiting on another stream's event, or on work or a clock the trace does not show: not "
           "latency)";
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
    line(count_of(lr.graph_launches, "graph launch", "graph launches") + " ran " +
         count_of(lr.graph_kernels, "kernel", "kernels"));
  return out;
}

}  // namespace pil::trace
