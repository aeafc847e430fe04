#pragma once
/// \file
/// Writes a trace in the Chrome-trace JSON that Kineto writes, so Perfetto, chrome://tracing,
/// pil-trace and Python's tools read it alike: complete events ("X") by category, kernel launch
/// shapes in their args, a CPU→GPU flow arrow ("ac2g") from each launch call to its GPU work,
/// lane names as metadata. Used by the CUPTI tracer; knows nothing of CUDA itself.
#include <filesystem>
#include <ostream>
#include <string>

#include "trace/trace.h"

namespace pil::trace {

struct WriterOptions {
  std::string trace_name;  ///< "traceName"
  std::string producer;    ///< who wrote it, e.g. "pil CUPTI tracer"
};

/// The trace as JSON text on `out`, one event per line. Event times are written as they are held
/// (the trace's own clock: relative to base_time_ns, written as baseTimeNanoseconds, when the
/// trace has one), in microseconds with exactly three decimals.
void write_chrome_trace(const Trace& trace, std::ostream& out, const WriterOptions& options);

/// The same, to a file written whole or not at all (gzip-compressed where its name ends in .gz).
void write_chrome_trace_file(const Trace& trace, const std::filesystem::path& path,
                             const WriterOptions& options);

/// Kineto's category name for `c` ("cpu_op", "kernel", "cuda_runtime", ...).
const char* kineto_category(Category c);

}  // namespace pil::trace
