#pragma once
/// \file
/// A timeline picture of a trace: CPU threads and GPU streams as lanes over a chosen window,
/// slices colored by kind, CPU→GPU launch arrows, a time axis and a legend. Slices narrower than
/// a pixel are merged, so a picture of a large trace stays small.
#include <cstdint>
#include <string>

#include "trace/reports.h"

namespace pil::trace {

struct SvgOptions {
  int64_t from_ns = 0, to_ns = 0;  ///< the window, on the trace's clock; empty: the whole window
  int width = 1200;                ///< pixels, labels included
  std::string title;
};

/// The window of the `step`-th profiled step (0-based, in time order). False if there is none.
bool step_window(const TraceIndex& index, size_t step, int64_t& from, int64_t& to);
/// The window of the `instance`-th slice named `name`. False if there is none.
bool range_window(const TraceIndex& index, const std::string& name, size_t instance,
                  int64_t& from, int64_t& to);

/// The picture as SVG text.
std::string render_svg(const TraceIndex& index, const SvgOptions& options);

}  // namespace pil::trace
