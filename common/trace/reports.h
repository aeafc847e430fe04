#pragma once
/// \file
/// The questions a trace answers, computed instead of read off by eye: kernel statistics, CUDA
/// API calls, launch delays, GPU busy and idle time per stream, the chain from a named range
/// down to its GPU work, and the difference between two runs. Each report is plain data; the
/// operator table's and the memory report's JSON are report_json.h's, the other reports' text and
/// JSON are written by pil-trace's commands (tool/pil_trace.cpp), and `explain` (here) says in
/// words what a lesson's own trace shows. Computed in reports.cpp (the index), gpu_reports.cpp
/// (kernels, streams, synchronizes), call_reports.cpp (chain, diff, memory, the profiler's own
/// work) and explain.cpp.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <string>
#include <vector>

#include "trace/key_averages.h"
#include "trace/trace.h"

namespace pil::trace {

/// Memory on one device over the recorded window, from the `[memory]` events.
struct MemoryRow {
  bool cuda = false;               ///< CUDA's or HIP's memory (device_type 1)
  int32_t device = -1;             ///< -1 for host memory
  int8_t device_type = 0;          ///< MemoryInfo::device_type, HIP's counted as CUDA's (1)
  int64_t allocations = 0, frees = 0;
  int64_t allocated_bytes = 0;     ///< summed over allocations
  /// Most memory in use at once, counted from the first event: the peak of (allocations -
  /// frees) so far. What the window's work added on top of what was already held.
  int64_t peak_growth = 0;
  int64_t end_growth = 0;          ///< still held at the end, counted the same way
  /// The allocator's own figure at that peak, where the trace gives totals (Kineto's files): the
  /// latest event's at or before it that gives one (an allocation of an allocator that keeps
  /// none, total 0, gives none); -1 where none does (LibTorch's in-process events).
  int64_t peak_total = -1;
  int64_t peak_at_ns = 0;          ///< when the peak was reached
  size_t first_event = 0;          ///< its earliest memory event (index into Trace::events)
  std::string peak_range;          ///< innermost named range then on that thread ("attn")
  std::string peak_op;             ///< innermost operator then ("aten::bmm")
};

/// "cuda:0", "mps:0" or "cpu": the device a memory row is about.
std::string device_label(const MemoryRow& row);

/// The row a one-line answer speaks of: the first GPU's where there is one, else the host's;
/// null when there are no rows.
const MemoryRow* main_memory_row(const std::vector<MemoryRow>& rows);

/// A value made on first use, once, by whichever thread asks first while the others wait; if
/// making it throws, the next caller tries again. (std::call_once is not used: its retry after an
/// exception hangs on some platforms, libstdc++ bug 66146.)
template <typename T>
class Lazy {
 public:
  template <typename Make>
  const T& get(Make make) const {
    if (!ready_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!ready_.load(std::memory_order_relaxed)) {
        value_.emplace(make());
        ready_.store(true, std::memory_order_release);
      }
    }
    return *value_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::atomic<bool> ready_{false};
  mutable std::optional<T> value_;
};

/// Lookups shared by the reports: which launch call and which GPU work share a correlation id,
/// the GPU work of each stream, the steps, and the profiled window. One pass over the events
/// sorts them by kind; the lookups and the reports then visit only the events they are about.
class TraceIndex {
 public:
  /// `threads`: how many the summary's reports may use at once (summarize). With more than one
  /// and `table_ahead`, the operator table is also started at once on a thread of its own, beside
  /// the rest of the index (key_averages() waits for it): for callers that will ask for it.
  explicit TraceIndex(const Trace& trace, unsigned threads = 1, bool table_ahead = false);
  ~TraceIndex();
  TraceIndex(const TraceIndex&) = delete;
  TraceIndex& operator=(const TraceIndex&) = delete;
  const Trace& trace() const { return t_; }
  /// The threads the index was built with: reports that can split their work use as many.
  unsigned threads() const { return threads_; }
  /// The operator table (key_averages) and the memory rows (memory_report), computed on first
  /// use and kept: a run asks for them from several reports. Safe to call from several threads.
  const KeyAverages& key_averages() const;
  const std::vector<MemoryRow>& memory() const;
  /// The runtime/driver call that launched GPU work `i`, or -1.
  long launch_of(size_t i) const;
  /// GPU work launched by call `i` (a cudaGraphLaunch may have many).
  /// (A view: valid while the index lives.)
  struct Span {
    const size_t* b;
    const size_t* e;
    const size_t* begin() const { return b; }
    const size_t* end() const { return e; }
    size_t size() const { return size_t(e - b); }
    bool empty() const { return b == e; }
    size_t front() const { return *b; }
    size_t operator[](size_t i) const { return b[i]; }
  };
  Span work_of(size_t launch) const;
  /// The first kernel call `launch` started (a graph's first node may be a memset or a copy), or -1.
  long first_kernel_of(size_t launch) const;
  /// Every runtime/driver call that launched GPU work, in event order.
  const std::vector<size_t>& launch_calls() const { return launch_calls_; }
  /// Every CUDA runtime and driver call, in event order.
  const std::vector<size_t>& api_calls() const { return api_calls_; }
  /// Every GPU work item (kernels, copies, sets), in event order.
  const std::vector<size_t>& device_work() const { return device_work_; }
  /// Every synchronize call (is_synchronize), in event order.
  const std::vector<size_t>& synchronizes() const { return synchronizes_; }
  /// Every named range on the CPU (user_annotation) but the steps, in event order.
  const std::vector<size_t>& named_ranges() const { return named_ranges_; }
  /// The GPU work of one stream, in start order (event order where two start together).
  struct Stream {
    int64_t device = 0, stream = 0;
    std::vector<size_t> work;
  };
  /// Every stream with GPU work, by device, then stream.
  const std::vector<Stream>& streams() const { return streams_; }
  /// The profiled window: the span of the ProfilerStep#N ranges, or of all events without them.
  /// The origin of `svg --from-us`.
  int64_t window_start = 0, window_end = 0;
  /// The window of the GPU figures: the profiled window widened to every GPU work item of the
  /// trace. The GPU runs behind the CPU: work launched in the last steps runs after the last
  /// step's CPU end, and a window of the steps alone would cut it off.
  int64_t gpu_window_start = 0, gpu_window_end = 0;
  /// GPU work `i` (an event index) has no launch call in the trace and a correlation id before
  /// every launch call's: launched before recording began (an earlier step's work still running
  /// when it began), so in no recorded step. A trace that lost its first launch calls looks the
  /// same: the trace cannot tell the two apart.
  bool launched_before_recording(size_t i) const {
    const Event& e = t_.events[i];
    return launch_of(i) < 0 && e.correlation != 0 && e.correlation < first_launch_correlation_;
  }
  /// ProfilerStep#N ranges (old traces: ProfileStep#N) in time order, but a last one cut short.
  std::vector<size_t> steps;
  /// The last ProfilerStep#N range, left out of `steps` (-1: none): the range the profiler's stop
  /// cut short (Python's `with profile(...)` block ends right after the loop's last prof.step()
  /// opened it), holding no operator, range or call that starts GPU work and lasting less than
  /// a tenth of the others' median (is_cut_short_step). Counted, a 29.8 us stub halved a
  /// public ResNet trace's median step (3.77 ms read 1.90 ms) and its work per step.
  long cut_short_step = -1;
  /// The step (index into `steps`) whose CPU range [start, end) holds time `t`, or -1.
  long step_at(int64_t t) const;
  /// The same, for times asked in rising order: `hint` (0 at first) keeps the steps started by
  /// the last time asked, so a walk in time order costs no search.
  long step_at(int64_t t, size_t& hint) const;
  /// The step GPU work `i` belongs to: the one whose CPU range its launch call started in (by
  /// correlation; a graph launch's kernels all go with the call), else, where the trace has no
  /// launch for it, the one whose range its own start falls in; -1 outside every step.
  long step_of_work(size_t i) const;
  /// True when GPU work `i` has a launch call in the trace (else it went by its own start).
  bool has_launch(size_t i) const { return launch_of(i) >= 0; }
  /// For GPU work `i`: when the earlier work on its stream (same device and stream, started
  /// before it) had all ended, or INT64_MIN when it is the stream's first. Work launched
  /// before that time waited in the stream's queue.
  int64_t stream_free_before(size_t i) const;

 private:
  const Trace& t_;
  unsigned threads_ = 1;
  Lazy<KeyAverages> key_averages_;
  Lazy<std::vector<MemoryRow>> memory_;
  std::thread table_thread_;  // the operator table, when computed beside the index
  void build();  // everything but the operator table
  /// How many steps start at or before `t`; `hint`, a count asked for a time just before, is
  /// tried first (a walk in time order costs no search).
  size_t steps_started_by(int64_t t, size_t hint) const;
  static constexpr uint32_t kNoOrdinal = 0xffffffffu;
  /// Each event's place among its kind: GPU work in device_work_, a runtime or driver call in
  /// api_calls_; kNoOrdinal for the rest. The lookups below are kept by that place, not for
  /// every event.
  std::vector<uint32_t> ordinal_;
  std::vector<size_t> launch_calls_, api_calls_, device_work_, synchronizes_, named_ranges_;
  uint64_t first_launch_correlation_ = 0;  ///< the smallest correlation id of a launch call (0: none)
  std::vector<uint32_t> call_of_work_;  ///< by GPU work: the ordinal of its launch call
  std::vector<int32_t> step_of_work_;   ///< by GPU work: its step (step_of_work), or -1
  std::vector<int64_t> free_before_;    ///< by GPU work: stream_free_before
  std::vector<int64_t> step_starts_, step_ends_;  ///< the steps' CPU ranges, in time order
  std::vector<Stream> streams_;
  /// GPU work grouped by launch call, each call's in start order: the work of call ordinal c
  /// is work_[first_work_[c], first_work_[c + 1]).
  std::vector<size_t> work_;
  std::vector<uint32_t> first_work_;
};

// The lookups the reports make per GPU work item, inline: millions of calls on a big trace.

inline long TraceIndex::launch_of(size_t i) const {
  if (i >= t_.events.size() || !is_device_work(t_.events[i].category)) return -1;
  const uint32_t c = call_of_work_[ordinal_[i]];
  return c == kNoOrdinal ? -1 : long(api_calls_[c]);
}

inline long TraceIndex::step_of_work(size_t i) const {
  if (i >= t_.events.size() || !is_device_work(t_.events[i].category)) return -1;
  return step_of_work_[ordinal_[i]];
}

inline TraceIndex::Span TraceIndex::work_of(size_t launch) const {
  if (launch >= t_.events.size() || !is_launch_call(t_.events[launch].category))
    return {work_.data(), work_.data()};
  const uint32_t c = ordinal_[launch];
  return {work_.data() + first_work_[c], work_.data() + first_work_[c + 1]};
}

inline long TraceIndex::first_kernel_of(size_t launch) const {
  for (size_t w : work_of(launch))
    if (t_.events[w].category == Category::Kernel) return long(w);
  return -1;
}

/// The named ranges' rows of the operator table (CPU ranges other than the steps: a lesson's
/// parts, attn, mlp...), most CPU time first.
std::vector<const KeyAverage*> named_range_rows(const TraceIndex& index);

/// Statistics of a set of durations (nanoseconds).
struct DurationStats {
  int64_t count = 0, total = 0, min = 0, max = 0;
  double mean = 0, median = 0, stddev = 0;
  static DurationStats of(std::vector<int64_t> values);
};

/// The median of `v` (the lower middle's and upper middle's mean for an even count, as
/// DurationStats and nsys take it), in whole nanoseconds; 0 if empty. Every report's median.
int64_t median_ns(std::vector<int64_t> v);

/// One launch shape (grid, block, registers, shared memory) a kernel ran with: its calls and
/// time; `known` false for the calls whose shape the trace does not give (a graph's kernels in
/// some traces), counted as one bucket.
struct KernelShape {
  KernelInfo launch;
  int64_t calls = 0;
  int64_t total_ns = 0;
  bool known = true;
};

struct KernelRow {
  std::string name;
  DurationStats time;
  double share = 0;  ///< of all kernel time in the report, 0..1
  /// The launch shapes its calls ran with, most time first (a name can run with many: a copy
  /// kernel's grid follows its tensor's size), the calls without one as a bucket of their own.
  std::vector<KernelShape> shapes;
  /// The shape with the most time (shapes.front()), or none where that is the unknown bucket.
  std::optional<KernelInfo> launch;
};

/// Kernels grouped by name, most total time first. With `range`, only kernels launched from
/// inside a slice of that name (an operator or a named range).
std::vector<KernelRow> kernel_report(const TraceIndex& index, const std::string& range = "");

struct ApiRow {
  std::string name;
  DurationStats time;
  double share = 0;  ///< of all runtime/driver call time
};

/// CUDA runtime and driver calls grouped by name (launches, copies, synchronizes, occupancy
/// queries...), most total time first.
std::vector<ApiRow> api_report(const TraceIndex& index);

/// Work that starts more than this after its launch call returned, on a stream (or GPU) idle
/// all that time, waited on something besides the host: another stream's event, work the trace
/// does not show, a clock offset. The host's wait ends when the call returns; a launch's own
/// latency after that is microseconds (every real trace seen: under 0.1 ms on an idle GPU).
inline constexpr int64_t kLatencyAfterReturnNs = 1'000'000;
/// Work that started `delay_ns` after its launch call returned, onto an idle stream, waited on
/// something besides the host (kLatencyAfterReturnNs).
inline bool waited_after_return(int64_t delay_ns) { return delay_ns > kLatencyAfterReturnNs; }
/// When the GPU stopped waiting on the host for work that started at `start`, launched by a call
/// that returned at `returned`: at the start, or at the return where the work waited after it.
inline int64_t host_wait_end(int64_t returned, int64_t start) {
  return waited_after_return(start - returned) ? returned : start;
}

/// A median launch latency (onto an idle stream) above this, over kSlowLatencyLaunches launches
/// or more, is not the driver's and the GPU's own: every real trace seen ran a median under
/// 10 us (a V100's 4 us, an MI250's 6.3 us, the H200's 3.9 us) but a public RTX 4090 trace's,
/// 178 us over 28 launches, its GPU idle 98% of the time. The GPU's idle time before each item
/// is then mostly after its launch call returned: the GPU shared with other work, a Windows or
/// virtualised driver, a GPU leaving a power-saving state, none of which a faster host changes.
inline constexpr int64_t kSlowLatencyNs = 50'000;
inline constexpr int64_t kSlowLatencyLaunches = 5;
/// What may make the launch latency slow, as summary and advise say it.
inline constexpr const char* kSlowLatencyWhy =
    "far above the few microseconds of an idle, unshared GPU: the GPU shared with other work, a Windows or "
    "virtualised driver, or a GPU leaving a power-saving state";

/// One launch and what its delay (first work start - call end) was made of. Two different
/// things read alike as "delay": on an idle stream it is launch latency, the time the driver and
/// the GPU take to start the work; on a stream still running earlier work when the call
/// returned, the work waited in the queue behind it, which is the sign of a GPU that is fed.
/// A launch's kind: "queueing" (its stream still ran earlier work when the call returned),
/// "waited" (not queued, its work started more than kLatencyAfterReturnNs after the return),
/// "in its call" (a copy or set whose work ended before its call returned: the call waited for
/// it, as a synchronous or pageable copy's does; its delay is no launch's latency) or "launch
/// latency".
inline const char* launch_kind(bool queued, bool waited, bool in_call = false) {
  return queued ? "queueing" : waited ? "waited" : in_call ? "in its call" : "launch latency";
}
/// Whether copy or set `work` ran inside call `call` because the call waits for it (launch_kind's
/// "in its call"): a blocking call (cudaMemcpy, cudaMemset, hipMemcpyWithStream: no Async in the
/// name) or a copy from or to pageable memory, its work ended by the call's return. An async
/// copy between pinned buffers that merely ran during a slow call is launch latency.
bool ran_in_call(const Event& call, const Event& work);

struct Launch {
  size_t call = 0;                     ///< the runtime/driver event
  size_t first_work = 0;               ///< its first GPU work
  size_t work_count = 0;               ///< > 1 for a graph launch
  int64_t delay_ns = 0;                ///< first work start - call end (can be negative)
  /// The stream was still running earlier work when the call returned.
  bool queued = false;
  /// Not queued, and the work started more than kLatencyAfterReturnNs after the call returned:
  /// it waited on something besides the host and its stream (another stream's event, work or a
  /// clock the trace does not show), not launch latency.
  bool waited = false;
  /// Of the delay, the time from the call's end until the stream's earlier work ended (0 when
  /// the stream was idle); the rest, delay - queue, is the latency after the stream was free.
  int64_t queue_ns = 0;
  bool work_shorter_than_call = false;  ///< the GPU work took less time than launching it
  bool in_call = false;  ///< a copy or set that ran before its call returned (ran_in_call)
  const char* kind() const { return launch_kind(queued, waited, in_call); }
};

struct LaunchReport {
  std::vector<Launch> launches;  ///< in time order (LaunchDetail::Each)
  DurationStats delay;           ///< of the delays clipped at 0, as HTA does (both kinds mixed)
  /// Launch latency: the delays (clipped at 0) of launches onto an idle stream (but `waited`).
  DurationStats latency;
  /// The delays of the launches that waited on something else (Launch::waited).
  DurationStats waited;
  /// Queueing: the delays of launches onto a stream still busy with earlier work.
  DurationStats queueing;
  /// Copies and sets that ran inside their call (Launch::in_call): in `delay`, not in the kinds'
  /// figures (a public H100 trace's 65 pageable copies, each delay clipped to 0, made its launch
  /// latency's median 68 ns; its kernels' was 826 ns).
  int64_t in_call = 0;
  /// Launches of kernels (a graph's: its first kernel, where a memset or copy comes first), and
  /// those whose kernel took less time than its launch call; a copy's or a set's call is left out
  /// (a pageable copy's call lasts as long as the copy: no launch overhead).
  int64_t kernel_launches = 0, shorter_than_call = 0;
  /// Launches that ran several GPU work items (graphs): how many, and what they ran, by kind (a
  /// graph's nodes are kernels, memsets and copies alike).
  int64_t graph_launches = 0, graph_work_items = 0, graph_kernels = 0, graph_memsets = 0, graph_copies = 0;
  /// Kernels much slower than others of the same name and launch shape (> 2x their median, at
  /// least 5 calls), and of the same input shapes of the operator that launched them where the
  /// trace has them, the most time over that median first; outlier_median_ns: it, for each.
  std::vector<size_t> outliers;
  std::vector<int64_t> outlier_median_ns;
  /// The launch latency is slow (kSlowLatencyNs): its median over kSlowLatencyLaunches or more.
  bool slow_latency() const {
    return latency.count >= kSlowLatencyLaunches && latency.median > double(kSlowLatencyNs);
  }
};

/// How much of a launch report to compute: the totals alone (delay statistics and counts, what
/// a summary says), also each launch (what advise's rules read), or also the kernel outliers (a
/// search per kernel name).
enum class LaunchDetail { Totals, Launches, Each };

/// With LaunchDetail::Totals, `launches` and `outliers` are left empty; with Launches, `outliers`.
LaunchReport launch_report(const TraceIndex& index, LaunchDetail detail = LaunchDetail::Each);

/// GPU times offset from CPU times (`check`'s gpu_clock_offset). On an idle GPU work starts
/// microseconds after its launch call: some work of every real trace seen starts under 0.02 ms
/// after its call, but for a GPU behind all along (a full queue) and offset traces. One wait on
/// an idle GPU can be long (463 ms after a hipStreamWaitEvent in TraceLens's SGLang decode
/// trace). When no GPU work of a device starts within kClockOffsetNs of its launch call
/// returning (over two calls or more that do not wait for their work), and some of it found the
/// device idle for that long, no queue explains the wait: the GPU's times are offset from the
/// CPU's (Kineto converts ROCm's GPU timestamps with one offset for the whole trace, kineto #991,
/// #1082), or work the trace does not show (another process's) held the GPU. A GPU that is
/// behind for the whole trace delays every launch too, but never on an idle device. Figures that
/// set GPU times against CPU times are then off: launch delays include the offset, and host
/// waits come out short (the idle split ends them when the call returns).
inline constexpr int64_t kClockOffsetNs = 1'000'000;
/// A clock drift's line is fitted to this many early items of a device at most (evenly spread
/// over them): its pairs' slopes are a quarter million.
inline constexpr size_t kDriftMostItems = 708;
struct ClockOffset {
  /// The least delay from a launch call's return to its GPU work's start (negative where work
  /// starts before its call returns) over the devices found offset, or over every device where
  /// none is; calls that wait for their work left out. 0 where no work has such a call.
  int64_t least_delay_ns = 0;
  /// GPU work that started kClockOffsetNs or more after its launch call returned, its device idle
  /// all that time, on a device whose every such delay is that long; in event order.
  std::vector<size_t> idle_waits;
  /// The other way: GPU work that starts before its launch call even began (the first item of
  /// each call that returns without waiting for it), in event order, out of `async_launches`
  /// such calls. A GPU clock ahead of the CPU's (a B200 trace: 113 of 179 kernels, up to 211 us
  /// early); a few such items are check's finding alone, a tenth of the launches is an offset.
  std::vector<size_t> early;
  int64_t async_launches = 0;
  int64_t most_early_ns = 0;  ///< the earliest start before its call, as a positive time
  /// Where the early items (five or more on a device) start earlier and earlier over the trace
  /// (or less and less early), the clocks drift rather than stand offset: Theil and Sen's line
  /// of how early each starts against its call's start, as the fitted earliness at the first and
  /// the last early item, and the span between them (a B200 trace's from 84.7 us to 203 us over
  /// 7.99 ms); of the device whose line moves most. 0 where it moves by less than half the most
  /// early of its device (an offset), or a fitted end is no earliness (below 0).
  int64_t drift_from_ns = 0, drift_to_ns = 0, drift_span_ns = 0;
  /// The device of that line, and how many devices have early items (the text names the device
  /// where they are several: the counts before it are over all of them).
  int64_t drift_device = -1;
  int early_devices = 0;
  bool drifts() const { return drift_span_ns > 0; }
  /// Where GPU work started late on an idle device but a synchronize of kClockOffsetNs or more
  /// returned within kClockOffsetNs of the end of the work launched before it (so the clocks
  /// agree: the late start was the GPU's own), that synchronize; `idle_waits` is then empty.
  /// -1: none.
  long refuted_by = -1;
  bool late() const { return !idle_waits.empty(); }
  bool ahead() const { return early.size() >= 2 && int64_t(early.size()) * 10 >= async_launches; }
  bool found() const { return late() || ahead(); }
};
ClockOffset gpu_clock_offset(const TraceIndex& index);
/// What shows the offset, in words ("no GPU work starts sooner than 1.20 ms after its launch
/// call, some of it on an idle GPU", or "113 of 179 GPU work items start before their launch
/// call begins, up to 211 us before").
std::string offset_evidence(const ClockOffset& o);
/// One line that says so, for the reports that show launch delays (summary, launches).
std::string offset_note(const ClockOffset& o);

/// What the graph launches ran: "345 kernels", or "345 GPU work items (135 kernels, 210
/// memsets)" where memsets or copies are among them.
std::string graph_work_text(const LaunchReport& r);

struct StreamRow {
  int64_t device = 0, stream = 0;
  int64_t window_ns = 0;
  int64_t busy_ns = 0;       ///< union of kernels, copies and sets: overlaps counted once
  int64_t host_wait_ns = 0;  ///< idle because the next launch ended after the stream went idle
  int64_t kernel_wait_ns = 0;///< short gaps between back-to-back work
  int64_t other_idle_ns = 0; ///< the rest of the idle time
  int64_t work_items = 0;
  double utilization() const { return window_ns > 0 ? double(busy_ns) / double(window_ns) : 0; }
};

/// One profiled step's GPU figures, both ways. The GPU runs behind the CPU, so the work a step
/// launched and the GPU time inside its wall time differ: a GPU-bound run launches step N while
/// the GPU still runs step N-1.
struct StepUtilization {
  std::string step;
  int64_t duration_ns = 0;  ///< the step's CPU wall time
  // Work launched by the step (step_of_work), wherever it ran:
  int64_t launched_busy_ns = 0;    ///< union over every stream of that work
  int64_t launched_work_items = 0; ///< kernels, copies and sets
  int64_t launched_kernels = 0;
  /// From the step's start to the end of the last GPU work it launched: past duration_ns, the
  /// GPU tail; 0 when it launched none.
  int64_t to_gpu_end_ns = 0;
  // GPU time inside the step's wall time, whoever launched it:
  int64_t busy_ns = 0;  ///< union over every stream, clipped to the step
  int64_t kernels = 0;  ///< GPU work items that start in the step
};

/// How an idle gap on a stream is put in a class.
enum class IdleRule {
  /// pil-trace's: over the union of the stream's work (overlaps merged), host wait when the
  /// next work's launch call *ended* after the stream went idle (until the call returned, where
  /// the work started more than kLatencyAfterReturnNs after that: the rest is other), kernel
  /// wait for a gap up to the threshold, other for the rest (the time after the last work
  /// included).
  Pil,
  /// Holistic Trace Analysis 0.5's (get_idle_time_breakdown): the work sorted by start and not
  /// merged, times rounded as its parser does (start up, end down, to whole microseconds),
  /// gaps only between the first and the last work item, each the next item's start minus the
  /// previous item's end (negative where they overlap, and added up all the same); host wait
  /// when the next item's launch call *started* after that end, else kernel wait when the gap
  /// is strictly under the threshold, else other.
  Hta,
};
const char* to_string(IdleRule rule);

struct StreamReport {
  IdleRule idle_rule = IdleRule::Pil;
  /// The GPU window (TraceIndex::gpu_window_start/end): the steps and every GPU work item.
  int64_t window_start = 0, window_end = 0;
  int64_t gap_threshold_ns = 0;
  std::vector<StreamRow> streams;
  std::vector<StepUtilization> steps;
  /// "GPU busy": time any stream ran GPU work (the union over the streams), and the time two
  /// or more ran at once.
  int64_t busy_ns = 0, overlap_ns = 0;
  /// GPU work that belongs to no step (launched, or without a launch started, outside every
  /// step), where there are steps: items and their busy time (union).
  int64_t outside_steps_work_items = 0, outside_steps_busy_ns = 0;
  /// GPU work whose launch call is not in the trace (placed by its own start), and of it, the
  /// work launched before recording began (TraceIndex::launched_before_recording: in no step).
  int64_t without_launch_work_items = 0, before_recording_work_items = 0;
  int64_t window_ns() const { return window_end - window_start; }
  double busy_share() const {
    return window_ns() > 0 ? double(busy_ns) / double(window_ns()) : 0;
  }

  /// The streams' idle time added up (each stream's host wait, kernel wait and other): how the
  /// idle split reads over the streams.
  struct Totals {
    int64_t host_wait_ns = 0, kernel_wait_ns = 0, other_idle_ns = 0;
    int64_t idle_ns() const { return host_wait_ns + kernel_wait_ns + other_idle_ns; }
  };
  Totals totals() const {
    Totals t;
    for (const StreamRow& s : streams) {
      t.host_wait_ns += s.host_wait_ns;
      t.kernel_wait_ns += s.kernel_wait_ns;
      t.other_idle_ns += s.other_idle_ns;
    }
    return t;
  }
};

/// GPU time per stream over the GPU window (no GPU work left out), idle time split as Holistic
/// Trace Analysis does: host wait, kernel wait (gaps up to `gap_threshold_ns`), other; the
/// union over the streams and their overlap; per step, the work each step launched and the GPU
/// time inside its wall time.
StreamReport stream_report(const TraceIndex& index, int64_t gap_threshold_ns = 30'000,
                           IdleRule idle_rule = IdleRule::Pil);

/// A synchronize call (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize and
/// their driver forms) and the GPU work that ran while the CPU waited in it. A long synchronize
/// alone says only that the CPU waited: the GPU is the bottleneck there when it was busy for
/// most of the wait, not when it was idle (the series' size-64 run: 1.78 ms of synchronize over
/// 26 us of GPU work).
struct SyncRow {
  size_t call = 0;
  int64_t gpu_busy_ns = 0;  ///< union of all GPU work (every stream) inside the call
  int64_t work_items = 0;   ///< GPU work items that overlap the call
  /// Share of the call's duration with no GPU work running, 0..1.
  double idle_share(const Trace& t) const;
};

/// Every synchronize call in the trace, in time order.
std::vector<SyncRow> sync_report(const TraceIndex& index);

/// True for the CUDA runtime and driver calls that block the CPU until GPU work is done.
bool is_synchronize(const Event& e);
/// A call that waits for the GPU whatever else happens: a synchronize, or a blocking copy or set
/// (cudaMemcpy, cudaMemset). Such a call may span work or records it did not cause.
bool waits_for_gpu(const Event& call);

/// One line of a chain: a CPU slice (depth > 0 inside the range) or GPU work under its launch.
struct ChainLine {
  int depth = 0;
  size_t event = 0;
  bool gpu = false;
  int64_t offset_ns = 0;  ///< start relative to the range's start
  int64_t delay_ns = 0;   ///< GPU lines: start - launch end
  bool queued = false;    ///< GPU lines: its stream still ran earlier work when the call ended
  bool waited = false;    ///< GPU lines: not queued, and waited_after_return(delay_ns)
  bool in_call = false;   ///< GPU lines: a copy or set that ran inside its call (ran_in_call)
  const char* kind() const { return launch_kind(queued, waited, in_call); }  ///< GPU lines
};

/// The k-th (0-based) slice named `range` and everything under it: operators, runtime calls and,
/// following correlation ids, the GPU work each call launched. Empty when there is none.
std::vector<ChainLine> chain_report(const TraceIndex& index, const std::string& range,
                                    size_t instance = 0);

/// The GPU work other threads of slice `range`'s process launched while it ran (their launch
/// calls starting inside it: autograd's threads in a backward range), which chain_report, on
/// the range's own thread, leaves out.
struct OtherThreadsWork {
  int64_t items = 0;
  int64_t gpu_ns = 0;  ///< the items' durations added
};
OtherThreadsWork launched_by_other_threads(const TraceIndex& index, size_t range);

enum class Change { Added, Removed, Faster, Slower, Same };
const char* to_string(Change c);

struct DiffRow {
  std::string name;
  bool device = false;  ///< compared by device time (kernels) rather than CPU time
  int64_t calls_a = 0, calls_b = 0;
  int64_t time_a = 0, time_b = 0;  ///< CPU total, or device total for GPU work
  Change change = Change::Same;
};

struct DiffReport {
  std::vector<DiffRow> rows;  ///< largest absolute change first
  int64_t cpu_a = 0, cpu_b = 0, device_a = 0, device_b = 0;
  int64_t kernels_a = 0, kernels_b = 0;
  /// GPU work launched before each trace's recording began, left out (items, GPU time).
  int64_t before_recording_a = 0, before_recording_b = 0;
  int64_t before_recording_ns_a = 0, before_recording_ns_b = 0;
  /// GPU rows whose names A and B spell differently (kernel_spelling), compared as one.
  int64_t respelled = 0;
  /// The coarser of the two traces' clock steps (written_step_ns): a row's change within the
  /// square root of its calls times this is no change.
  int64_t clock_step_ns = 0;
};

/// The finest step a trace's times are written in: 1, 10, 100 or 1000 ns (1000 for a trace of
/// whole microseconds, torch 1.x's and Kineto's before nanoseconds); 0 without events.
int64_t written_step_ns(const Trace& trace);

/// A GPU kernel's name in one spelling, so that two builds' names of one kernel compare equal:
/// at::detail::Array (older torch) as std::array, integer template arguments without their
/// suffix (2ul as 2), "> >" as ">>".
std::string kernel_spelling(std::string name);

/// Operators and kernels of two runs side by side, as Python's table has them, less the GPU work
/// launched before each recording began (TraceIndex::launched_before_recording: no step's of the
/// trace; counted apart). Kernels matched by kernel_spelling. A change under `tolerance`
/// (relative) counts as the same.
DiffReport diff_report(const TraceIndex& a, const TraceIndex& b, double tolerance = 0.05);

/// The memory events of each device, (device type, device index) -> event indices in time order;
/// host memory first (type 0, index -1), then CUDA's (1: HIP's, 6, counted as CUDA's), then
/// other devices' (MemoryInfo::device_type).
std::map<std::pair<int, int32_t>, std::vector<size_t>> memory_events_by_device(const Trace& trace);

/// How the memory of a device is named in a line: "host memory", "GPU 0 memory" (CUDA's or
/// HIP's), "mps:0 memory"; by memory_events_by_device's key, or a row's.
std::string memory_name(int device_type, int32_t device);
inline std::string memory_name(const MemoryRow& row) { return memory_name(row.device_type, row.device); }

/// Per device (host first): allocations, frees, the peak and where it came from.
std::vector<MemoryRow> memory_report(const TraceIndex& index);

/// What a trace says, as figures: computed once, printed by explain() and written as JSON by
/// `pil-trace summary --json`. Row pointers point into the index's operator table.
/// Per range of `ranges` (by name), over the union of its spans on each thread (a span inside
/// another of its name counted once, where the operator table counts both) inside the steps (the
/// whole trace without them): their time, and the
/// time of the GPU work whose launch call started inside them ([start, end)) on that thread. Unlike the operator table's device time (the work whose operator is the range or one
/// inside it, as torch.profiler joins them), this counts work that an operator around the range
/// launched inside it, as c10d's NCCL kernel under record_param_comms, launched inside its
/// nccl:all_reduce range.
struct RangeTimes {
  std::vector<int64_t> span_ns, launched_ns;
  /// The GPU time of the work whose launch call started inside its spans on the process's other
  /// threads: where the range launches nothing itself, the work it waits for may be launched
  /// there (a backward range around the autograd engine's threads).
  std::vector<int64_t> elsewhere_ns;
  /// The threads each range's time was on: with two or more (Gloo's all-reduce on its two
  /// worker threads at once), span_ns adds each thread's and can pass the step's wall time.
  std::vector<int64_t> threads;
};
RangeTimes named_range_times(const TraceIndex& index, const std::vector<const KeyAverage*>& ranges);

/// The CUDA runtime and driver calls that start GPU work (launches, copies, sets: starts_gpu_work).
/// On a trace that holds no GPU work, any such call says its GPU side was not recorded.
size_t calls_starting_gpu_work(const TraceIndex& index);

/// What says that a run whose trace holds no GPU work and no CUDA call used a device all the same:
/// its memory events on one (Kineto's "Device Type": CUDA, XPU, MPS...; recorded with
/// profile_memory), and operators that run on a GPU only (cuDNN's and MIOpen's: `aten::cudnn_*`,
/// `aten::miopen_*`). Where either is found, the profiler recorded the CPU's side only (torch.profiler
/// without the device's activity: ProfilerActivity.CUDA for an NVIDIA or AMD GPU).
struct DeviceUseWithoutWork {
  std::string device;       ///< the first device with memory events ("cuda:0", "mps:0"); "" for none
  int device_type = 0;      ///< its c10::DeviceType (HIP's as CUDA's, 1); 1 where a GPU-only operator says so
  int64_t allocations = 0, frees = 0;  ///< its allocations and frees
  size_t first_memory = 0;  ///< its earliest memory event (index into Trace::events), where `device` is set
  std::string op;           ///< the GPU-only operator called most ("aten::cudnn_convolution"); "" for none
  int64_t op_calls = 0;     ///< its calls
  size_t first_op = 0;      ///< its first call (index into Trace::events), where `op` is set
  /// The autograd engine's thread for a device that ran operators ("pt_autograd_0": the engine
  /// runs a backward's device work on a thread per device, a CPU backward on the caller's); ""
  /// for none.
  std::string autograd_thread;
  int64_t autograd_ops = 0;  ///< the operators it ran
  size_t first_autograd_op = 0;  ///< its first (index into Trace::events), where set
  bool found() const { return !device.empty() || !op.empty() || !autograd_thread.empty(); }
  /// "22 allocations on cuda:0; aten::cudnn_convolution called 3 times".
  std::string evidence() const;
  /// "once", "3 times": how often `op` was called.
  std::string op_times() const;
  /// Why the device's work is not in the trace, as torch.profiler has it: "the profiler's
  /// activities without ProfilerActivity.CUDA" (XPU, HPU, MTIA, PrivateUse1 likewise); MPS has no
  /// activity at all.
  std::string activity() const;
};
/// Whether `last`, a trace's last step range, is one the profiler's stop cut short: it holds
/// nothing (`holds_work`: an operator, a named range or a call that starts GPU work starts inside
/// it, on its process) and lasts less than a tenth of the other steps' median (`others_median_ns`;
/// 0: there are none, and it is no stub).
bool is_cut_short_step(int64_t last_ns, int64_t others_median_ns, bool holds_work);
/// The last of `steps` (step events' indices, in time order) where it is one the profiler's stop
/// cut short (is_cut_short_step, its work looked for on its process), else -1. TraceIndex leaves
/// it out of its steps. The ranks report keeps every rank's steps: decided rank by rank, a stub
/// cut on one rank and kept on another would read as two runs' step numbers.
long cut_short_last_step(const Trace& t, const std::vector<size_t>& steps);

/// An operator that runs on a GPU only: cuDNN's and MIOpen's (`aten::cudnn_*`, `aten::_cudnn_*`,
/// `aten::miopen_*`, `aten::_miopen_*`; not `aten::cudnn_is_acceptable`, which only asks), and
/// torch.compile's Triton kernels (is_triton_kernel_range).
bool is_gpu_only_operator(std::string_view name);
/// The range Inductor records around a Triton kernel's launch, named as the kernel
/// ("triton_poi_fused_add_0", "triton_per_fused_cumsum_0", "triton_red_...", "triton_tem_...").
bool is_triton_kernel_range(std::string_view name);
/// A trace with CUDA calls or GPU work but no operator and no named range (CpuOp or
/// UserAnnotation: steps are ranges): recorded without the profiler's CPU activity
/// (torch.profiler's activities=[ProfilerActivity.CUDA] alone), so the host's time is its CUDA
/// calls' alone, and what it did between them is not in the trace. Stops at the first operator.
bool cuda_side_only(const TraceIndex& index);

/// Looked for in a trace without GPU work or CUDA calls (empty otherwise: such a trace's device
/// side is judged from its calls).
DeviceUseWithoutWork device_use_without_work(const TraceIndex& index);

/// How many processes recorded the steps: 1 (Kineto writes one process's trace), more in several
/// processes' traces merged into one file (TraceLens merges a run's ranks so), whose per-step
/// figures mix theirs; 0 without steps.
size_t step_processes(const TraceIndex& index);

/// The profiler's own work in a trace: CUPTI's overhead records, which Kineto writes with
/// category "overhead" on a lane of their own (pid -1): "Activity Buffer Request" (CUPTI asking
/// for a buffer to hold its records), "Buffer Flush", "Instrumentation", "Resource", ... Not the
/// program's work, and the trace does not say which thread paid for it: where a CUDA runtime or
/// driver call that is not a synchronize or a blocking copy lasts through it, that call's thread
/// may have waited for it, and the step the call is in may hold the profiler's time.
struct ProfilerOverhead {
  static constexpr size_t npos = size_t(-1);
  size_t event = 0;            ///< index into Trace::events
  long step = -1;              ///< the step it starts in (index into TraceIndex::steps); -1: outside
  size_t longest_call = npos;  ///< the longest CUDA call that overlaps it, on any thread
  /// The longest CUDA call that spans it and does not wait for the GPU (a synchronize, a blocking
  /// copy or set wait for it whatever the profiler does); npos: none.
  size_t spanning_call = npos;
  long spanning_step = -1;     ///< the step that call starts in; -1: outside every step
  /// Where no call spans it: the first CUDA call of a thread that made none during it, beginning
  /// at most kOverheadResumeNs (and a tenth of the record) after it ended: that thread most
  /// likely waited for the profiler as it entered the call (npos: none).
  size_t resumed_call = npos;
  long resumed_step = -1;  ///< the step that call starts in; -1: outside every step
  /// The innermost operator or range of that thread that lasts through the record (npos: none).
  size_t held_op = npos;
  /// The thread that most likely waited for it: the spanning call's, else the resumed call's.
  size_t waiting_call() const { return spanning_call != npos ? spanning_call : resumed_call; }
};
/// An idle gap of the GPU (every stream idle) longer than this is not launch overhead (a launch
/// takes microseconds, an operator's dispatch tens of them): the host was busy with something
/// else. The summary says where such gaps hold most of the idle time; advise's host_stall rule
/// reports them (threshold::kHostStallNs is this).
inline constexpr int64_t kLongIdleNs = 1'000'000;

/// How soon after a CUPTI overhead record a thread's next CUDA call must begin for the thread to
/// count as having waited for it (ProfilerOverhead::resumed_call), at most: 20 us (three real
/// traces of one A100 program: 0.4, 9.9 and 17 us after a record of 1.8 ms, inside one operator).
inline constexpr int64_t kOverheadResumeNs = 20'000;
/// True for one of CUPTI's overhead records as Kineto names them (its overheadKindString): the
/// generic names ("Resource", "Instrumentation", "Unknown") only on Kineto's lane for them, pid -1.
bool is_profiler_overhead(const Event& e);
/// The trace's profiler overhead records, in time order.
std::vector<ProfilerOverhead> profiler_overhead(const TraceIndex& index);

/// CUDA's own work among CUPTI's overhead records (Kineto writes them beside the profiler's, on
/// its lane pid -1), which the program pays with or without a profiler: "lazy loading" (Runtime
/// Triggered Module Loading, Lazy Function Loading: a kernel's code loaded on its first launch,
/// CUDA 12's default), "the driver compiling" (Driver Compiler: PTX compiled for the GPU at load),
/// "the launch queue full" (Command Buffer Full: a launch waiting for room in the command buffer);
/// nullptr for any other event.
const char* cuda_overhead_kind(const Event& e);
/// Such records, by name, the names of a kind together (lazy loading's, the driver's, the queue's),
/// each kind's in order of first appearance.
struct CudaOverhead {
  static constexpr size_t npos = size_t(-1);
  std::string_view name;  ///< "Runtime Triggered Module Loading"
  const char* kind;       ///< cuda_overhead_kind
  int64_t records = 0, total_ns = 0;
  size_t longest = 0;     ///< the longest record (index into Trace::events)
  /// The shortest CUDA call that lasts through the longest record, any thread, a synchronize or
  /// a blocking copy aside: the call that paid for it (npos: none).
  size_t in_call = npos;
};
std::vector<CudaOverhead> cuda_overhead(const TraceIndex& index);
/// One line on them for a report, or "" where there are none.
std::string cuda_overhead_text(const TraceIndex& index, const std::vector<CudaOverhead>& overhead);
/// One line on them for a report ("Activity Buffer Request 2.54 ms in ProfilerStep#2 ..."), or ""
/// where there are none.
std::string profiler_overhead_text(const TraceIndex& index, const std::vector<ProfilerOverhead>& overhead);

struct Summary {
  std::vector<int64_t> step_ns;  ///< the profiled steps' durations, in time order
  DurationStats steps;
  size_t step_processes = 0;  ///< step_processes(): more than 1 in merged traces
  std::vector<ProfilerOverhead> overhead;  ///< profiler_overhead(): the profiler's own work
  std::vector<CudaOverhead> cuda_overhead; ///< cuda_overhead(): CUDA's own work in CUPTI's records
  std::vector<const KeyAverage*> top_ops;  ///< up to 3 CPU rows, most self CPU time first
  std::vector<const KeyAverage*> ranges;   ///< named_range_rows(), the most time (range_times) first
  RangeTimes range_times;                  ///< per range: its time, and its GPU work's
  int64_t per = 1;                         ///< what ranges' times are divided by: the steps, or 1
  bool gpu = false;                        ///< the trace has GPU work (kernels, copies or sets)
  // On a GPU (`gpu`; without GPU work these are left empty, and `kernels` is where there are
  // copies and sets alone):
  std::vector<KernelRow> kernels;
  StreamReport streams;
  /// GPU work items launched per step (median over the steps), where there are steps.
  std::optional<int64_t> work_items_per_step;
  LaunchReport launches;
  ClockOffset clock_offset;  ///< where found, the launch delays and the idle split are off
  std::vector<SyncRow> syncs;
};
Summary summarize(const TraceIndex& index, IdleRule idle_rule = IdleRule::Pil);

/// A few lines that say what the trace shows: steps, where the CPU time went, and on a GPU the
/// kernels per step, busy time, idle split and launch delay. Lessons print it after a run.
std::string explain(const TraceIndex& index, IdleRule idle_rule = IdleRule::Pil);

}  // namespace pil::trace
