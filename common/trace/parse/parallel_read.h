#pragma once
/// \file
/// The parallel read: a trace held whole in writable memory, cut into chunks at likely event
/// boundaries, the chunks read in place on several threads and merged in file order, so the
/// trace comes out exactly as one sequential read makes it. Internal to the trace parser.
#include <cstddef>
#include <string>

#include "trace/parse.h"
#include "trace/trace.h"

namespace pil::trace::detail {

/// Reads the trace in data[0, size) (writable; `capacity` bytes readable, zeroed past size) into
/// `out` on `threads` threads. `mapped`: data is a private file mapping whose read pages may go
/// back to the page cache. False, with nothing read, when the trace has no place to cut (read it
/// sequentially). Throws ParseError as the sequential read would.
bool read_in_parallel(char* data, size_t size, size_t capacity, const std::string& label,
                      const ParseOptions& options, bool mapped, unsigned threads, Trace& out);

}  // namespace pil::trace::detail
