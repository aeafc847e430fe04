#pragma once
/// \file
/// A small trace cut out of a big one, for Perfetto or the browser: a span of the CPU timeline
/// (a step, a named range, or a window), the GPU work launched inside it with its tail, the GPU
/// work that ran inside it with its launch calls, and the flow arrows whose ends are both kept.
/// Every event kept is copied byte for byte from the input (every field), as are the trace's
/// fields around the event array (deviceProperties, distributedInfo, baseTimeNanoseconds...) and
/// its metadata events (process and thread names).
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/parse.h"
#include "trace/reports.h"

namespace pil::trace {

struct SliceCounts {
  int64_t events = 0;     ///< array elements kept (events, flow arrows and metadata)
  int64_t cpu = 0;        ///< CPU slices, calls, instants and memory events
  int64_t gpu_work = 0;   ///< kernels, copies and sets
  int64_t flows = 0;      ///< flow arrow ends
  int64_t metadata = 0;   ///< process and thread names ("M" events)
  int64_t gpu_end_ns = 0; ///< end of the last GPU work kept (the span's GPU tail)
};

/// A span with nothing in it to keep (no event starts there, no GPU work runs there): refused,
/// not written as an empty or names-only trace (an empty event array does not read back).
struct EmptySlice : ParseError {
  using ParseError::ParseError;
};

/// The text of the slice of `text` (the whole trace, unpacked) over the CPU span [from_ns,
/// to_ns): its CPU events that start in the span, the GPU work their launch calls launched, the
/// GPU work that ran in the span with its launch calls (so the span's GPU figures, both ways,
/// read the same), the GPU annotations over them, instants and counters in the span, every
/// metadata event, and the flow arrows with both ends kept (`ac2g` by correlation, others when
/// the slice each end binds to is kept: the enclosing one on its thread, or for a finish
/// without bp "e" the next one to start there). `index` is of `text` read with
/// ParseOptions::keep_sources. Throws EmptySlice when nothing but metadata would be kept, and
/// ParseError when the trace has no event array elements or the sources do not match the text.
std::string slice_text(const TraceIndex& index, std::string_view text, int64_t from_ns,
                       int64_t to_ns, SliceCounts* counts = nullptr);

/// The bytes of a trace file, unpacked (.json.gz) or mapped (.json). Throws ParseError.
class TraceBytes {
 public:
  explicit TraceBytes(const std::string& path);
  ~TraceBytes();
  TraceBytes(const TraceBytes&) = delete;
  TraceBytes& operator=(const TraceBytes&) = delete;
  std::string_view text() const { return view_; }

 private:
  std::string unpacked_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::string_view view_;
};

}  // namespace pil::trace
