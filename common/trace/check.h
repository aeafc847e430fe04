#pragma once
/// \file
/// Can I trust this trace? What in a trace makes figures wrong, each with a count and the first
/// few examples by name and timestamp (in the trace's own units, so a user finds them in
/// Perfetto): GPU work with no launch and launches with no GPU work (by correlation), GPU events
/// that stop early, GPU work that starts before its launch, overlapping work on one stream,
/// children that outlast their parent, steps missing, repeated or overlapping, arguments
/// skipped as unusable; and the clock (unit, base, the precision it leaves, GPU times offset
/// from CPU times).
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "trace/intervals.h"
#include "trace/profiler_log.h"
#include "trace/reports.h"

namespace pil::trace {

struct CheckExample {
  std::string name;
  int64_t ts_ns = 0;     ///< on the trace's clock, as the parser reads it
  std::string detail;    ///< what about it ("ends 2.000 us after its parent ProfilerStep#3")
};

struct CheckFinding {
  std::string key;       ///< stable, for JSON and tests: "stream_overlap", ...
  std::string title;     ///< one line a user reads
  int64_t count = 0;
  std::vector<CheckExample> examples;  ///< the first few, in time order
};

/// The clock the trace's times are on, and what precision that leaves.
struct ClockInfo {
  bool base_time = false;     ///< relative to baseTimeNanoseconds
  bool absolute = false;      ///< absolute epoch time (no base, times past 1973)
  int64_t base_time_ns = 0;
  int64_t max_abs_ns = 0;     ///< the largest |time| written (start or end)
  int64_t finest_ns = 0;      ///< the finest step the times are written in: 1, 10, 100, 1000 ns
  /// The spacing of doubles at the largest time, in ns: what a reader that keeps microseconds
  /// in a double (Perfetto's JSON import, Python) can tell apart.
  double double_step_ns = 0;
};

struct CheckReport {
  ClockInfo clock;
  /// The profiler's record counts (Kineto's INFO log in the trace), a line apart; and where it
  /// logged finding no GPU in a trace without GPU work or launch calls (a CPU run's: torch's
  /// Python profiler logs "gpuGetDeviceCount failed with code 35" on a machine without a driver),
  /// that message, a line apart too.
  ProfilerCounts profiler_counts;
  std::string no_gpu_logged;
  /// launch_calls: the calls that start GPU work (kernel and graph launches, copies and sets,
  /// starts_gpu_work: the count summary gives).
  int64_t events = 0, gpu_work = 0, launch_calls = 0, steps = 0;
  /// GPU work whose External id is its own correlation id (links_to_itself): no link to an
  /// operator; pil-trace gives such work to the operator around its launch call (key_averages).
  int64_t self_linked = 0;
  /// Not findings, said on lines of their own: launch calls made inside a stream capture
  /// (cudaStreamBeginCapture to cudaStreamEndCapture on their thread; HIP's and the driver's
  /// alike), which record into a graph and run nothing then; copy and set calls of 1 us or less
  /// with no GPU work (most likely of zero bytes, which start none: a call's size is not in the
  /// trace); GPU work with no launch call whose correlation id precedes every launch call's
  /// (launched before recording began: earlier steps' work still running when it began).
  int64_t captured_launches = 0, short_copies_without_work = 0, launched_before_recording = 0;
  /// CUDA calls and GPU work but no operator or range (cuda_side_only): a line apart.
  bool cuda_side_only = false;
  /// The profiler's own work: CUPTI's overhead records (profiler_overhead, reports.h). A line
  /// apart; a CUDA call inside a step that spans one (a synchronize aside) is also a finding,
  /// once per call (profiler_overhead_in_step).
  int64_t profiler_overhead = 0;
  /// Kineto's cuda_sync records (Trace::cuda_sync_events): a line apart, as pil-trace does not
  /// read them.
  int64_t cuda_sync_events = 0;
  /// GPU work that starts before the work before it on its stream ends, launched by an extended
  /// launch or a graph's on a GPU with programmatic dependent launch (compute capability 9.0 and
  /// later, or not given): PDL, by design, not stream_overlap; the most such an overlap was.
  int64_t dependent_launch_overlaps = 0, dependent_launch_max_ns = 0;
  /// Kernels of one graph launch side by side on its stream (the graph's branches): not
  /// stream_overlap either.
  int64_t graph_branch_overlaps = 0;
  std::vector<CheckFinding> findings;  ///< only those with a count above zero
  bool clean() const { return findings.empty(); }
};

/// How far before the end of the CPU's side the recorded GPU work may end, at most, for launches
/// at the end that found no work to count as run after recording stopped (LaunchExpectations):
/// a launch's latency, with room. Work that could have run earlier, on a GPU that had caught up,
/// would have run while recording went on, and been recorded.
inline constexpr int64_t kLostTailBusyNs = 50'000;

/// Steps that hold no operator, range or CUDA call while most such calls ran outside every step:
/// the step ranges do not hold the work (check's steps_empty; advise says so in its header).
struct EmptySteps {
  std::vector<size_t> empty;  ///< the empty steps (indices into Trace::events); none unless found
  int64_t inside = 0, outside = 0;  ///< the calls inside the steps, and outside every one
  bool found() const { return !empty.empty(); }
};
EmptySteps empty_steps_of(const TraceIndex& index);

/// Stream captures per thread (pid, tid): from a StreamBeginCapture call's return to its
/// StreamEndCapture's start, the outermost where one thread captures several streams at once. One
/// the trace sees end but not begin began before recording (from INT64_MIN); one it sees begin but
/// not end goes on past it (to INT64_MAX). Each thread's list is in time order and disjoint
/// (merged, no empty one). Launch calls inside one are recorded into a graph and run nothing
/// then (its graph's launches do).
using StreamCaptures = std::map<std::pair<int64_t, int64_t>, std::vector<Interval>>;
StreamCaptures stream_captures(const TraceIndex& index);
/// Every thread's captures together, merged and clipped to [from, to).
std::vector<Interval> capture_spans(const StreamCaptures& captures, int64_t from, int64_t to);

/// The calls that start GPU work, and those of them that must find some in the trace: check's
/// launch_without_gpu_work and gpu_events_stop_early judge those, and summary and advise open
/// with the second.
struct LaunchExpectations {
  int64_t launch_calls = 0;  ///< the calls that start GPU work (starts_gpu_work), as summary counts them
  int64_t captured = 0;      ///< of them, made inside a stream capture and with no work: recorded into a graph
  int64_t short_copies = 0;  ///< async copies or sets of 1 us or less with no work: of zero bytes, most likely
  /// The others among the calls that always start work (starts_gpu_work_async), in time order.
  std::vector<size_t> expecting;
  size_t last_found = 0;  ///< in `expecting`, the last that found its work (expecting.size(): none did)
  /// Where the GPU events stop early, the first of the calls after `last_found` (two or more) that
  /// found none; expecting.size() where they do not.
  size_t lost_from = 0;
  // Where they stop early:
  int64_t cpu_end = 0;    ///< the end of the CPU's side: its last slice or call
  int64_t gpu_end = std::numeric_limits<int64_t>::min();  ///< the end of the recorded GPU work
  int64_t lag_ns = 0;     ///< how long after the last found call ended its work started
  /// The recorded GPU work lasts to the CPU's end (within kLostTailBusyNs) or past it: the GPU was
  /// behind its host, and the lost work most likely ran after recording stopped (Kineto keeps no
  /// GPU record past its window: its "Out-of-range" count); else its events were dropped.
  bool after_recording = false;
  /// The profiler logged that GPU events are missing (profiler_messages' gpu_loss): they were
  /// dropped, whatever the times say.
  bool loss_logged = false;
  size_t lost() const { return expecting.size() - lost_from; }
  bool stops_early() const { return lost_from < expecting.size(); }
};
LaunchExpectations launch_expectations(const TraceIndex& index);
/// The likelier cause of GPU events that stop early, in a few words ("the recorded GPU work lasts
/// to the recording's end: run after the profiler stopped, most likely").
std::string lost_tail_cause(const LaunchExpectations& x);
/// The opening words summary and advise give a trace whose GPU events stop early, the likelier
/// cause with them; "" where they do not.
std::string lost_tail_said(const LaunchExpectations& x);
/// What that does to the figures: the recorded work's alone (run after recording), or idle time
/// too high (dropped).
std::string lost_tail_consequence(const LaunchExpectations& x);

/// True for a finding whose examples have no time (their ts_ns 0): skipped_fields' kinds, the
/// profiler's logged messages.
bool untimed_finding(const std::string& key);

/// Every check over the trace; `examples` per finding at most.
CheckReport check_trace(const TraceIndex& index, size_t examples = 3);


/// The report in a few lines per finding.
std::string format_check(const CheckReport& report, const std::string& path);

}  // namespace pil::trace
