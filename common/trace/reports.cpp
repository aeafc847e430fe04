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

// The index every report reads (TraceIndex) and the statistics of a list of durations.

namespace pil::trace {

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
  if (const long stub = cut_short_last_step(t_, steps); stub >= 0) {
    cut_short_step = stub;
    steps.pop_back();
  }
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
        if (const long held = call_of[e.correlation];
            held >= 0 && takes_correlation(ev[api_calls_[size_t(held)]].name, e.name))
          call_of.replace(e.correlation, long(c));
        else
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

bool is_cut_short_step(int64_t last_ns, int64_t others_median_ns, bool holds_work) {
  return !holds_work && others_median_ns > 0 && 10 * last_ns < others_median_ns;
}

long cut_short_last_step(const Trace& t, const std::vector<size_t>& steps) {
  if (steps.size() < 2) return -1;
  const std::vector<Event>& ev = t.events;
  const Event& last = ev[steps.back()];
  std::vector<int64_t> others;
  for (size_t k = 0; k + 1 < steps.size(); ++k) others.push_back(ev[steps[k]].dur_ns);
  std::nth_element(others.begin(), others.begin() + ptrdiff_t(others.size() / 2), others.end());
  const int64_t median = others[others.size() / 2];
  // Only a short one is looked into (one pass over the events, rarely made).
  if (!is_cut_short_step(last.dur_ns, median, false)) return -1;
  const bool holds = std::any_of(ev.begin(), ev.end(), [&](const Event& e) {
    return e.pid == last.pid && e.start_ns >= last.start_ns && e.start_ns < last.end_ns() &&
           ((is_torch_scope(e.category) && !is_step(e)) || (is_launch_call(e.category) && starts_gpu_work(e.name)));
  });
  return is_cut_short_step(last.dur_ns, median, holds) ? long(steps.back()) : -1;
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
  return row.device_type == 0 ? std::string("cpu") : device_type_name(row.device_type) + ":" + std::to_string(row.device);
}

std::string memory_name(int device_type, int32_t device) {
  if (device_type == 0) return "host memory";
  return (device_type == 1 ? "GPU " + std::to_string(device) : device_type_name(device_type) + ":" + std::to_string(device)) +
         " memory";
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

}  // namespace pil::trace
