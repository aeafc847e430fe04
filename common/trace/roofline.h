#pragma once
/// \file
/// Roofline figures of a trace's operators: FLOPs and bytes from their recorded shapes
/// (roofline_formulas.h), the rate each call achieved, and how far that is from the peak that
/// bounds it (device_peaks.h for GPUs; the user's figure for the CPU). Needs a trace recorded
/// with shapes (record_shapes) and read with ParseOptions::read_shapes.
///
/// Which calls count. An operator with its own formula counts, with everything it calls (an
/// addmm's copy_ of its bias is part of the addmm: shown "in aten::addmm", not counted again).
/// A composite (matmul, linear, the scaled-dot-product attention front-ends, layer_norm,
/// softmax, ...) counts in the operators it calls that have a formula (shown "in aten::mm"),
/// and by its own formula only when none of them has one. So no FLOP is counted twice, and the
/// rate is measured where the work ran.
///
/// Over what time. On a GPU, over the GPU work the call launched: every kernel, copy and set
/// whose launch call (by correlation id) ran inside the operator's CPU range, the operators it
/// called included, durations added up. A call that launched no GPU work ran on the CPU, and is
/// measured over its CPU time: its whole duration, since everything inside it is its own work.
/// Rows group the calls by name, input dims and input types, as Python's
/// key_averages(group_by_input_shape=True) groups by name and shapes, and by where they ran.
///
/// Which peak. A row's bound is where its intensity (FLOP/byte) sits against the ridge point
/// (compute peak / memory bandwidth): below it memory, else compute; its share is the achieved
/// rate over that roof. GPU peaks come from the vendor table matched on the trace's
/// deviceProperties, for the row's type on tensor cores (matrix products, attention) or the
/// vector units (the rest); an FP32 product that ran faster than the FP32 vector peak used TF32
/// tensor cores (allow_tf32), and is held against the TF32 peak. A trace carries no CPU peak:
/// the CPU's share is given only against RooflineOptions' figures.
#include <string>
#include <vector>

#include "trace/reports.h"

namespace pil::trace {

struct RooflineOptions {
  double cpu_peak_gflops = 0;  ///< the CPU's compute ceiling, GFLOP/s; 0: none given
  double cpu_peak_gbps = 0;    ///< the CPU's memory bandwidth, GB/s; 0: none given
  /// A measured GPU ceiling, in place of the vendor table's (for every GPU row, whatever its
  /// type: measure it in the type you run); 0: the table's.
  double gpu_peak_tflops = 0;
  double gpu_peak_gbps = 0;
};

/// Where a row's work is counted.
enum class Counted {
  Yes,        ///< here: its figures are this row's
  InCallees,  ///< in the operators it called that have a formula (a composite: matmul -> mm)
  InCaller,   ///< in the counted operator that called it (addmm's copy_)
};
const char* to_string(Counted c);  // "yes", "in callees", "in caller"

/// Which roof bounds a row.
enum class Bound { Unknown, Compute, Memory };
const char* to_string(Bound b);  // "", "compute", "memory"

/// The peak a row is held against.
struct RooflinePeak {
  double gflops = 0;   ///< compute, GFLOP/s; 0: none
  double gbps = 0;     ///< memory bandwidth, GB/s; 0: none
  std::string kind;    ///< which compute peak: "fp32", "bf16 tensor", ... ("" on the CPU)
  std::string source;  ///< "H100 SXM5 80GB", "--cpu-peak-gflops", "--gpu-peak-tflops"
  /// FLOP/byte where the two roofs meet; 0 without both.
  double ridge() const { return gflops > 0 && gbps > 0 ? gflops / gbps : 0; }
};

struct RooflineRow {
  std::string name;                      ///< "aten::mm"
  std::string input_dims;                ///< as Python prints them: "[[512, 512], [512, 512]]"
  std::vector<std::string> input_types;  ///< as torch writes them: "float", "Scalar", ""
  /// Each input's value as "Concrete Inputs" writes it ("True", "0.125", "" for a tensor), where
  /// read: two rows of the same dims and types differ there (SDPA's is_causal), and say so.
  std::vector<std::string> concrete;
  std::string tensors;                   ///< the tensor inputs' sizes: "[512, 512]x[512, 512]"
  int64_t calls = 0;
  Counted counted = Counted::Yes;
  /// InCallees: the operators whose rows count it; InCaller: the operator that counts it.
  std::vector<std::string> counted_in;
  // Per call, by the row's formula (also for rows counted elsewhere: their own figures).
  double flops = 0;
  double bytes = 0;
  std::string dtype;    ///< the type it computes in: "float", "c10::BFloat16"
  bool matrix = false;  ///< a matrix product or attention
  // Counted rows: the time and the rates achieved over it, the peak, the bound.
  bool on_gpu = false;     ///< measured over GPU work, on GPU `device`; else over CPU time
  int64_t device = -1;
  int64_t time_ns = 0;     ///< all calls: their GPU work's durations, or their CPU time
  int64_t gpu_work_items = 0;
  /// Of its GPU work items, copies between host and GPU or between GPUs (is_link_copy).
  /// Where they are all of it, the link bounds its time: no peak of the GPU's is held against
  /// it (note says so).
  int64_t link_copies = 0;
  RooflinePeak peak;
  Bound bound = Bound::Unknown;  ///< needs both peaks
  double share = -1;  ///< the achieved rate over the peak of `share_of`, 0..1 (-1: no peak)
  Bound share_of = Bound::Unknown;  ///< the bound, or the one peak known
  std::string note;  ///< why a peak was chosen or left out (TF32, no figure for the type)

  double total_flops() const { return flops * double(calls); }
  double total_bytes() const { return bytes * double(calls); }
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  ///< FLOP/byte
  double gflops() const { return time_ns > 0 ? total_flops() / double(time_ns) : 0; }  ///< achieved
  double gbps() const { return time_ns > 0 ? total_bytes() / double(time_ns) : 0; }    ///< achieved
};

struct RooflineReport {
  /// The counted rows, most time first; then the rows counted elsewhere, most calls first.
  std::vector<RooflineRow> rows;
  /// One line per GPU the rows ran on: its entry in the table of peaks, or why it has none.
  std::vector<std::string> devices;
  /// Calls of operators with a formula whose recorded inputs it does not take (left out).
  int64_t calls_not_understood = 0;
};

/// True when the trace's operators carry recorded inputs (record_shapes, read with
/// ParseOptions::read_shapes): without them there are no rows.
bool has_recorded_inputs(const Trace& trace);

RooflineReport roofline_report(const TraceIndex& index, const RooflineOptions& options = {});

/// The rows alone, for other reports (advise) to cite.
inline std::vector<RooflineRow> roofline_rows(const TraceIndex& index, const RooflineOptions& options = {}) {
  return roofline_report(index, options).rows;
}

}  // namespace pil::trace
