#pragma once
/// \file
/// A timeline picture of a trace: CPU threads and GPU streams as lanes over a chosen window,
/// slices colored by kind, CPU→GPU launch arrows, a time axis and a legend. Slices narrower than
/// a pixel are merged, so a picture of a large trace stays small. Marks point an arrow and a
/// label at named slices, so a picture shows what the text names.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/reports.h"

namespace pil::trace {

struct SvgOptions {
  int64_t from_ns = 0, to_ns = 0;  ///< the window, on the trace's clock; empty: the whole window
  int width = 1200;                ///< pixels, labels included
  std::string title;
  /// Slices to point at: an arrow and a label at the first slice of each name in the window.
  std::vector<std::string> marks;
};

/// The window of the `step`-th profiled step (0-based, in time order): its CPU range, widened to
/// the end of the GPU work it launched (its GPU tail). False if there is none.
bool step_window(const TraceIndex& index, size_t step, int64_t& from, int64_t& to);
/// The CPU slices (operators, ranges, runtime calls) named `name`, by start time (ties in trace
/// order): what --range NAME --instance K counts in svg, slice and kernels.
std::vector<const Event*> slices_named(const Trace& trace, std::string_view name);
/// The window of the `instance`-th slice named `name` (slices_named). False if there is none.
bool range_window(const TraceIndex& index, const std::string& name, size_t instance,
                  int64_t& from, int64_t& to);

/// The first slice named `name` (by start time) that the picture of `options`' window draws:
/// a CPU or GPU slice overlapping the window. None if there is none.
std::optional<size_t> find_mark(const TraceIndex& index, const SvgOptions& options,
                                const std::string& name);

/// The picture as SVG text. Marks with no slice in the window are left out (find_mark says).
std::string render_svg(const TraceIndex& index, const SvgOptions& options);

/// Text made safe for an SVG's text and attributes: markup characters escaped, control
/// characters dropped.
std::string escape(std::string_view s);

}  // namespace pil::trace
