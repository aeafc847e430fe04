#pragma once
/// \file
/// The operator table: events grouped by name with self and total CPU time and the device time
/// of the GPU work each operator launched — what Python's `prof.key_averages().table()` prints.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event.h"
#include "trace/trace.h"

namespace pil::trace {

/// One row of the table. Times are nanoseconds summed over all calls.
struct KeyAverage {
  std::string name;  ///< the event name; every profiler step under one "ProfilerStep*"
  int64_t calls = 0;
  int64_t self_cpu_ns = 0;   ///< CPU time not spent in child slices on the same thread
  int64_t cpu_total_ns = 0;  ///< CPU time including children
  int64_t self_device_ns = 0;    ///< GPU work launched directly by this slice (or the work itself)
  int64_t device_total_ns = 0;   ///< GPU work launched by this slice and its children
  bool device_work = false;      ///< the row is GPU work (a kernel, copy or set), not a CPU slice
  // With memory events (profile_memory): bytes allocated minus bytes freed, summed over calls,
  // as Python's "CPU Mem" / "Self CPU Mem" and "CUDA Mem" / "Self CUDA Mem" columns.
  int64_t cpu_mem = 0;          ///< host memory, by this slice and its children
  int64_t self_cpu_mem = 0;     ///< host memory, by this slice itself
  int64_t device_mem = 0;       ///< GPU memory, by this slice and its children
  int64_t self_device_mem = 0;  ///< GPU memory, by this slice itself
  /// With group_by_input_shape: the operator's input shapes as Python prints them
  /// ("[[64, 64], [64, 64]]"); empty otherwise.
  std::string input_shapes;
  /// In a trace recorded with_flops: the FLOPs Python's profiler counts for its calls, added up
  /// (python_flops.h; 0 for the operators it does not count).
  uint64_t flops = 0;
  /// CPU total as Python's table sums it, in floating-point microseconds (python_float_times);
  /// < 0 where not computed. Its average is what the "CPU time avg" cell prints.
  double python_cpu_total_us = -1;
};

struct KeyAverages {
  std::vector<KeyAverage> rows;     ///< in order of first appearance
  int64_t self_cpu_total_ns = 0;    ///< sum of self CPU time over all rows
  int64_t self_device_total_ns = 0; ///< sum of GPU work time (each kernel counted once)
  bool has_cpu_memory = false;      ///< the trace has host memory events
  bool has_device_memory = false;   ///< the trace has GPU memory events
  /// Recorded with_flops and some row has FLOPs: Python's table has its "Total FLOPs" column.
  bool has_flops = false;
  /// Slices Python's EventList drops into their parent (a slice named as its parent, its only
  /// child: _remove_dup_nodes), by event index: they are in no row.
  std::vector<size_t> dropped;
  bool has_device_time() const { return self_device_total_ns > 0; }
  const KeyAverage* find(std::string_view name) const;
};

/// Builds the table from a profile's events.
///
/// CPU slices (operators, ranges, runtime and driver calls) nest per thread by containment: a
/// slice's parent is the innermost slice on the same (pid, tid) that contains it. Self CPU time
/// is the duration minus the direct children's durations. GPU work (kernels, copies, sets) is
/// attributed to the operator or range whose id equals its external id (where the trace wrote
/// the work's own correlation id there, as torch 2.0 to 2.2's Kineto did, to the innermost
/// operator or range around its launch call: the same one); ranges mirrored on the
/// GPU (`gpu_user_annotation`) are left out, so no GPU time counts twice. Memory events (with
/// their sizes in `memory`, Trace::memory) count for the innermost CPU slice on their thread
/// that holds their time.
///
/// Rows are grouped by name, every `ProfilerStep#N` under one `ProfilerStep*` row as Python's
/// table does; with `input_shapes` (Trace::input_shapes) by name and input shapes, as Python's
/// `key_averages(group_by_input_shape=True)`.
KeyAverages key_averages(const std::vector<Event>& events,
                         const std::vector<MemoryInfo>& memory = {},
                         const std::vector<std::string_view>* input_shapes = nullptr);
/// A trace's table. Recorded with_flops (Trace::with_flops), each row also gets the FLOPs
/// Python's profiler counts (python_flops.h) from its calls' recorded inputs, where they were
/// read (ParseOptions::read_shapes; counts_python_flops names whose are needed).
KeyAverages key_averages(const Trace& trace, bool group_by_input_shape = false);

/// Python's own arithmetic for the "CPU time avg" column, for the table of a trace Python wrote:
/// each CPU slice's time as its end minus its start, each in microseconds from the profiler's
/// start (the trace's "PyTorch Profiler (N)" span; 0 in the autograd profiler's format, whose
/// times are written from that start) as a double, added up per row in order of start (longer
/// first), over the slices the table keeps (not `dropped`). An average that falls halfway between
/// two printed digits then rounds as Python's did, which exact nanoseconds cannot say. Without
/// either, nothing is done (the average is the exact one, halves up).
void python_float_times(KeyAverages& table, const Trace& trace);

/// What the table is sorted by (descending), with the names Python's profiler uses.
/// Unsorted is Python's `sort_by=None`: rows in order of first appearance.
enum class SortKey { CpuTotal, SelfCpu, DeviceTotal, SelfDevice, CpuMemory, SelfCpuMemory, DeviceMemory, SelfDeviceMemory, Count, Unsorted };
std::optional<SortKey> parse_sort_key(std::string_view name);
/// The accepted names, for messages and --help.
std::string sort_key_names();

struct TableOptions {
  SortKey sort = SortKey::CpuTotal;
  int row_limit = 15;              ///< rows shown; the totals always cover every row
  std::string device_label = "CUDA";
};

/// The table in the layout of `key_averages().table()`: Name, Self CPU %, Self CPU, CPU total %,
/// CPU total, CPU time avg, the device columns when there is device time, the memory columns
/// when there are memory events, # of Calls, Python's "Total FLOPs" column (its unit scaled to
/// the least FLOPs of any row, "--" for none) in a trace recorded with_flops, totals.
std::string format_table(const KeyAverages& table, const TableOptions& options);

/// Time as Python's profiler prints it: "812.000us", "1.234ms", "2.500s".
std::string format_time_ns(int64_t ns);
/// An average (total / count) in the same format, the exact quotient rounded to the printed
/// digit. Python divides float totals and rounds when printing; where the quotient falls exactly
/// halfway (1462.5 ns), its float noise decides, which a trace cannot tell: halves go up here.
std::string format_average_ns(int64_t total_ns, int64_t count);

/// Bytes as Python's profiler prints them: "512 B", "3.81 MB", "-1.50 GB" (powers of 1024).
std::string format_bytes(int64_t bytes);

}  // namespace pil::trace
