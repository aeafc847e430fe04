#pragma once
/// \file
/// One trace event's fields into the model: its phase, name, category, times, lanes and the
/// args the reports need (correlation, External id, device, stream, launch shape, memory).
/// Internal to the trace parser; the chunk reader hands it each event as simdjson finds it.
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/parse/part.h"
#include "trace/trace.h"

namespace pil::trace::detail {

namespace od = simdjson::ondemand;

/// Thrown inside the event loop for an event that is complete but wrong; becomes a ParseError
/// naming the event.
struct BadEvent {
  std::string what;
};

/// Kineto's category names (any case), and the older or shorter names other writers use. A
/// memory event is told by its name and phase, not its category (an instant of cpu_instant_event).
Category category_from(std::string_view cat);


/// The category of each "cat" text met so far: a trace has a handful, so a short list, compared
/// text to text, answers without a hash (and without keeping the text in the name pool).
class Categories {
 public:
  Category operator()(std::string_view cat) {
    for (size_t k = 0; k < used_; ++k)
      if (seen_[k].text == cat) return seen_[k].category;
    const Category c = category_from(cat);
    Seen& slot = seen_[used_ < kSize ? used_++ : next_++ % kSize];
    slot.text.assign(cat);
    slot.category = c;
    return c;
  }
  void clear() { used_ = next_ = 0; }

 private:
  static constexpr size_t kSize = 16;
  struct Seen {
    std::string text;
    Category category = Category::Other;
  };
  Seen seen_[kSize];
  size_t used_ = 0, next_ = 0;
};

/// Reads events into a trace, or into one stretch of a parallel read (names and named lanes
/// numbered on their own until the merge).
class EventFields {
 public:
  explicit EventFields(Trace* out) : out_(out) {}
  /// Reads into `part` from now on.
  void use_part(Part* part);
  /// Reads one event; throws BadEvent for an event that is whole but wrong.
  void read_event(od::object& obj);
  /// With keep_sources, read_event notes each element at `element_offset` in Trace::sources.
  bool keep_sources = false;
  uint64_t element_offset = 0;
  /// Kernels' launch shapes (ParseOptions::read_launch_shapes).
  bool read_launch_shapes = true;
  /// Without it, the kernels this accepts by name (ParseOptions::launch_shapes_for).
  bool (*launch_shapes_for)(std::string_view kernel) = nullptr;
  /// With read_shapes, an operator's "Input Dims" and "Input type" too (Trace::op_inputs).
  bool read_shapes = false;
  /// With read_shapes, only the operators this accepts by name (ParseOptions::shapes_for).
  bool (*shapes_for)(std::string_view op) = nullptr;
  /// With read_shapes and shapes_for, also these (ParseOptions::shapes_also_for, once its
  /// condition has been judged on the trace's head).
  bool (*shapes_also_for)(std::string_view op) = nullptr;
  /// With read_shapes, their "Concrete Inputs" too (ParseOptions::read_concrete).
  bool read_concrete = false;

 private:
  // Defined inline in event_fields.cpp, the one place that calls them (kept in read_event's
  // loop: a call per field costs about a third of the parse).
  std::string_view intern(std::string_view s);
  int64_t lane_id(od::value& v, bool& named);
  void note_lanes(uint8_t lanes_named);
  // An operator's recorded inputs (read_shapes): read into the buffers below while its args are
  // read, kept (once per distinct inputs) when the event is.
  void read_input_dims(od::value& v);
  void read_input_types(od::value& v);
  void read_concrete_inputs(od::value& v);
  uint32_t input_signature();
  struct PendingArg {
    bool list = false;
    uint32_t first_shape = 0, shapes = 0;  // into shapes_
  };
  bool has_dims_ = false;
  std::vector<int64_t> dims_;
  std::vector<std::pair<uint32_t, uint32_t>> shapes_;  // (first in dims_, rank)
  std::vector<PendingArg> args_;
  std::vector<std::string_view> types_;
  bool has_concrete_ = false;
  std::vector<std::string_view> concrete_;
  std::string key_;
  /// Each distinct inputs' key (interned: one address per text) -> its index in op_inputs.
  std::unordered_map<const char*, uint32_t> signatures_;

  Trace* out_;
  Part* part_ = nullptr;
  int64_t ts_ns_ = 0, dur_ns_ = 0;
  std::unordered_map<std::string_view, int64_t> named_lanes_;
  std::string_view last_lane_name_;  // the name of the last named lane read (lane_id)
  Categories categories_;
};

}  // namespace pil::trace::detail
