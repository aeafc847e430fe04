#pragma once
/// \file
/// Reads Chrome-trace JSON as Kineto writes it — `{"traceEvents": [...], ...}` or a bare event
/// array, plain or gzip-compressed, of any size — into the trace kit's model.
///
/// Times are kept as integer nanoseconds parsed from the number's text, never through a double:
/// old traces carry absolute epoch microseconds with 19 significant digits, which a double
/// would round to 0.25 µs. The event array is read in chunks (cut at line breaks, which JSON
/// never puts inside a string), so memory stays near the size of the model, not of the file, and
/// files past simdjson's 4 GB single-document limit work. A file with no line breaks at all is
/// read whole (up to 4 GB). With ParseOptions::threads above 1 the chunks are read in parallel.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "trace/trace.h"

namespace pil::trace {

/// A trace that cannot be read. The message is one line naming the file and, for a bad event,
/// its index in the event array and its byte offset.
struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ParseOptions {
  /// Bytes read per chunk (grows for huge events). The parallel read cuts the file this far
  /// apart, down to 16 bytes (tests cut small traces everywhere); one thread's buffer holds at
  /// least 4 KB.
  size_t chunk_bytes = size_t(4) << 20;
  /// Threads reading the event array. Above 1, a plain file is memory-mapped, cut into chunks
  /// of about chunk_bytes at event boundaries and read on that many threads; the trace comes
  /// out exactly as one thread reads it (same events in the same order, same names, same
  /// errors). Gzip files and pipes are read by one thread. usable_cores() gives all of them.
  unsigned threads = 1;
  /// Also note where each element of the event array sits in the file (Trace::sources).
  bool keep_sources = false;
  /// Each kernel's launch shape (grid, block, registers, shared memory, blocks per SM, estimated
  /// occupancy: Trace::kernels), which the kernel table shows. Off, none is kept, and a
  /// kernel's args are left unread once its External id, device, stream and correlation are
  /// (Kineto writes the shape after them), a HIP launch call's after its correlation: `summary`
  /// and `advise` use none of it.
  bool read_launch_shapes = true;
  /// Without read_launch_shapes, still the launch shapes of the kernels this accepts by name
  /// (advise: fp32 GEMM kernels, whose outliers are held against their name and shape). A name
  /// written after its args in the file is not seen in time: that kernel keeps none.
  bool (*launch_shapes_for)(std::string_view kernel) = nullptr;
  /// Also read each operator's "Input Dims" and "Input type" (record_shapes) into
  /// Trace::op_inputs and Trace::input_shapes. Off by default: an operator's args are otherwise
  /// left unread after its "External id", which keeps `summary` at its speed.
  bool read_shapes = false;
  /// With read_shapes: only the operators whose name this accepts have their inputs read (all
  /// when null). An operator whose name comes after its args in the file is read whole.
  bool (*shapes_for)(std::string_view op) = nullptr;
  /// With read_shapes and shapes_for: also the operators this accepts, where `shapes_also_if`
  /// (when set) says yes of what the trace's head holds (the fields before its event array:
  /// its deviceProperties), before any event is read. advise reads the matrix products' inputs
  /// only where a peak can be put beside them (a GPU the table of peaks knows, a peak given).
  /// A head written after the events (not Kineto's way) is not seen: `shapes_also_if` is asked
  /// of a trace with no devices.
  bool (*shapes_also_for)(std::string_view op) = nullptr;
  std::function<bool(const Trace& head)> shapes_also_if;
  /// With read_shapes: also the "Concrete Inputs" of the operators whose inputs are read
  /// (InputArg::concrete): a factory's sizes ("[2, 1025]" for aten::ones, whose "Input Dims" are
  /// [[], [], [], [], []]), a Scalar's value. Calls that differ only there then get op_inputs
  /// entries of their own (the same input_shapes text). Off by default: the roofline's rows are
  /// op_inputs entries, and a Scalar's value (alpha, dim) must not split them.
  bool read_concrete = false;
};

/// The cores this process may run on (its CPU affinity), at least 1.
unsigned usable_cores();

/// Reads a trace file (.json or .json.gz, told apart by content). Throws ParseError.
Trace parse_trace_file(const std::string& path, const ParseOptions& options = {});

/// Reads a trace held in memory; `label` names it in messages. Throws ParseError.
Trace parse_trace_text(std::string_view json, const std::string& label = "<memory>",
                       const ParseOptions& options = {});

/// Walks every event of the file with simdjson without extracting anything: the parse ceiling
/// that benchmarks compare the full analysis with. Each event is skipped whole, or with
/// `every_field` each of its fields (nested ones too) is visited. Returns the number of events.
size_t walk_trace_file(const std::string& path, const ParseOptions& options = {},
                       bool every_field = false);

/// Microseconds as written ("1234.567", "-5", "1.5e3") to integer nanoseconds, rounded to the
/// nearest. False when the text is not a number or the value does not fit in 64 bits.
bool microseconds_text_to_ns(std::string_view text, int64_t& ns);

}  // namespace pil::trace
