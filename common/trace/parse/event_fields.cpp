#include "trace/parse/event_fields.h"

#include <cctype>
#include <charconv>
#include <limits>
#include <string>
#include <string_view>

#include "base/command_line.h"  // lowercase
#include "trace/parse.h"
#include "trace/parse/json_text.h"
#include "trace/parse/numbers.h"

namespace pil::trace::detail {

namespace {

/// A value as an error line shows it: at most 40 characters ("1234...", with its length), not a
/// million-digit number echoed whole.
std::string shown_value(std::string_view text) {
  if (text.size() <= 40) return std::string(text);
  return std::string(text.substr(0, 40)) + "... (" + std::to_string(text.size()) + " characters)";
}

/// A field's value as the message shows it: its text, or what it is where the token is only its
/// first character (an object's "{", an array's "[").
std::string shown_token(std::string_view text) {
  if (!text.empty() && text.front() == '{') return "(an object)";
  if (!text.empty() && text.front() == '[') return "(an array)";
  return shown_value(text);
}

/// The field a malformed one follows, for the message: "after 'ts'", or "(the event's first)".
/// key: the previous field's raw key (just past its opening quote), or null.
std::string after_field(const char* key) {
  if (!key) return "(the event's first)";
  std::string name;
  for (const char* c = key; *c && *c != '"' && name.size() < 40; ++c) name += *c;
  return "after '" + name + "'";
}

constexpr std::string_view kLegacyCpuLane = "CPU functions", kLegacyCudaLane = Trace::kUnreadLegacyCuda;

/// A flow arrow's phase: start, finish, or step.
simdjson_inline bool is_flow_phase(std::string_view ph) {
  return ph.size() == 1 && (ph[0] == 's' || ph[0] == 'f' || ph[0] == 't');
}

/// An argument that only adds detail (memory sizes, occupancy): read when it is a number,
/// ignored when it is not, so one odd value never makes a trace unreadable.
bool optional_whole(od::value& v, int64_t& out) {
  int64_t n = 0;
  if (!v.get_int64().get(n)) {
    out = n;
    return true;
  }
  int64_t ns = 0;
  if (!text_to_ns(v.raw_json_token(), ns)) return false;
  out = ns / 1000;
  return true;
}

/// An id (correlation, External id, device, stream): a number, or a string holding one in
/// decimal or in hex ("0x0": HIP writes a stream as a pointer). False for anything else.
bool id_of(od::value& v, int64_t& out) {
  int64_t n = 0;
  if (!v.get_int64().get(n)) {
    out = n;
    return true;
  }
  std::string_view s;
  if (v.get_string().get(s)) return optional_whole(v, out);
  if (s.empty() || s.size() > 18) return false;
  uint64_t value = 0;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  for (size_t i = hex ? 2 : 0; i < s.size(); ++i) {
    const char c = s[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (hex && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (hex && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return false;
    value = value * (hex ? 16 : 10) + uint64_t(digit);
  }
  if (value > uint64_t(std::numeric_limits<int64_t>::max())) return false;
  out = int64_t(value);
  return true;
}

bool optional_real(od::value& v, double& out) {
  double d = 0;
  if (v.get_double().get(d)) return false;
  out = d;
  return true;
}

/// A string value as it stands in the buffer when it has no escapes (no copy), else unescaped.
simdjson_inline bool string_of(od::value& v, std::string_view& out) {
  std::string_view tok = v.raw_json_token();
  while (!tok.empty() && is_space(tok.back())) tok.remove_suffix(1);
  if (tok.size() >= 2 && tok.front() == '"' && tok.back() == '"' &&
      tok.find('\\') == std::string_view::npos) {
    out = tok.substr(1, tok.size() - 2);
    return true;
  }
  return !v.get_string().get(out);
}

/// Why a field's value is not a string, for the error line: most often, in a string, a backslash
/// JSON does not allow (torch 1.13's with_stack on Windows wrote its paths so,
/// "torch\profiler\profiler.py(500): step"; Python's json refuses them too), said with the repair.
std::string not_a_string(od::value& v, const char* key) {
  std::string_view tok = v.raw_json_token();
  if (!tok.empty() && tok.front() == '"')
    for (size_t i = 1; i + 1 < tok.size(); ++i) {
      if (tok[i] != '\\') continue;
      const char next = tok[i + 1];
      const bool hex4 = next == 'u' && i + 5 < tok.size() &&
                        std::all_of(tok.begin() + long(i) + 2, tok.begin() + long(i) + 6,
                                    [](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; });
      if (std::string_view("\"\\/bfnrt").find(next) == std::string_view::npos && !hex4)
        return std::string("'") + key + "' holds \"\\" + next + "\", an escape JSON does not allow (a Windows "
               "path written with single backslashes, as torch 1.13's with_stack did on Windows; Python's json "
               "refuses it too): repair the file by doubling each such backslash (docs/troubleshooting.md, "
               "'pil-trace: a file it cannot read')";
      ++i;  // an allowed escape: its second character is not a backslash of its own
    }
  return std::string("'") + key + "' is not a string";
}

/// A launch shape ("grid": [x, y, z]): its numbers are kept, anything else in it is passed
/// over, but an array that is not valid JSON refuses the event (reading on past it would
/// read the events after it from the wrong place).
void triple(od::value& v, int32_t out[3], const char* what) {
  od::array a;
  if (v.get_array().get(a)) return;
  int k = 0;
  for (auto x : a) {
    od::value element;
    if (x.get(element)) throw BadEvent{std::string("'") + what + "' is not a valid array"};
    int64_t n = 0;
    if (k < 3 && !element.get_int64().get(n)) out[k] = int32_t(n);
    ++k;
  }
}

}  // namespace

Category category_from(std::string_view cat) {
  const std::string c = lowercase(cat);
  for (const auto& n : kCategoryNames)
    if (n.category != Category::Memory && c == n.kineto) return n.category;
  if (c == "operator") return Category::CpuOp;
  if (c == "runtime") return Category::Runtime;
  if (c == "driver") return Category::Driver;
  if (c == "memcpy") return Category::Memcpy;
  if (c == "memset") return Category::Memset;
  return Category::Other;
}

void EventFields::use_part(Part* part) {
  part_ = part;
  out_ = &part->t;
  named_lanes_.clear();
  categories_.clear();
  signatures_.clear();
}

simdjson_inline std::string_view EventFields::intern(std::string_view s) {
  return part_ ? part_->names.intern(s) : out_->intern(s);
}

/// A pid or tid; `named` is set for a named lane (a string), whose id a stretch of a parallel
/// read numbers on its own until the merge.
simdjson_inline int64_t EventFields::lane_id(od::value& v, bool& named) {
  switch (v.type().value_unsafe()) {
    case od::json_type::number: {
      int64_t id = 0;
      if (!v.get_int64().get(id)) return id;
      // An id past int64's range but within uint64's (an address, as some devices' traces
      // write): kept by its bits; a lane is only compared with lanes.
      if (uint64_t u = 0; !v.get_uint64().get(u)) return int64_t(u);
      if (text_to_ns(v.raw_json_token(), id)) return id / 1000;
      throw BadEvent{"pid/tid is not a whole number from -2^63 to 2^64-1"};
    }
    case od::json_type::string: {
      std::string_view s;
      if (v.get_string().get(s)) throw BadEvent{"bad pid/tid string"};
      // A whole number written as a string is that number: torch 1.9's Kineto wrote operators'
      // tids as "5786" and memory events' as 5786, the same thread. Digits only, as a number
      // within uint64 is read (kept by its bits); "-1" stays a name (named lanes' ids are
      // negative: it would be taken for one).
      if (uint64_t id = 0; !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos &&
                           std::from_chars(s.data(), s.data() + s.size(), id).ec == std::errc())
        return int64_t(id);
      // Named lanes ("Spans", "PyTorch Profiler") get negative ids of their own.
      const std::string_view name = intern(s);
      last_lane_name_ = name;
      auto [it, fresh] = named_lanes_.emplace(name, -int64_t(named_lanes_.size()) - 1);
      if (fresh && part_) part_->lanes.push_back(name);
      named = true;
      return it->second;
    }
    default:
      return 0;
  }
}

/// "Input Dims": one entry per argument, an array of sizes ([16, 16]; [] for a 0-d tensor, a
/// scalar or None) or, for a TensorList, an array of them ([[8, 16], [8, 16]]). Anything else in
/// it is passed over; an array that is not valid JSON refuses the event, as a launch shape does.
void EventFields::read_input_dims(od::value& v) {
  has_dims_ = false;
  dims_.clear();
  shapes_.clear();
  args_.clear();
  od::array a;
  if (v.get_array().get(a)) return;
  auto sizes = [&](od::array& shape) {  // the whole numbers of one shape
    const uint32_t first = uint32_t(dims_.size());
    for (auto y : shape) {
      od::value d;
      if (y.get(d)) throw BadEvent{"'Input Dims' is not a valid array"};
      int64_t n = 0;
      if (!d.get_int64().get(n)) dims_.push_back(n);
    }
    shapes_.push_back({first, uint32_t(dims_.size()) - first});
  };
  for (auto x : a) {
    od::value element;
    if (x.get(element)) throw BadEvent{"'Input Dims' is not a valid array"};
    PendingArg arg;
    arg.first_shape = uint32_t(shapes_.size());
    od::array inner;
    if (element.type().value_unsafe() == od::json_type::array && !element.get_array().get(inner)) {
      // A shape, or a list of them: told by its first item.
      const uint32_t first = uint32_t(dims_.size());
      for (auto y : inner) {
        od::value item;
        if (y.get(item)) throw BadEvent{"'Input Dims' is not a valid array"};
        switch (item.type().value_unsafe()) {
          case od::json_type::number: {
            int64_t n = 0;
            if (!arg.list && !item.get_int64().get(n)) dims_.push_back(n);
            break;
          }
          case od::json_type::array: {
            od::array shape;
            if (item.get_array().get(shape)) throw BadEvent{"'Input Dims' is not a valid array"};
            if (!arg.list) dims_.resize(first);  // a list: no sizes of its own
            arg.list = true;
            sizes(shape);
            break;
          }
          default:
            break;
        }
      }
      if (!arg.list) shapes_.push_back({first, uint32_t(dims_.size()) - first});
    } else {
      shapes_.push_back({uint32_t(dims_.size()), 0});  // not an array: no sizes
    }
    arg.shapes = uint32_t(shapes_.size()) - arg.first_shape;
    args_.push_back(arg);
  }
  has_dims_ = true;
}

/// "Input type": one string per argument ("float", "c10::BFloat16", "Scalar", ""); anything
/// else in it reads as "".
void EventFields::read_input_types(od::value& v) {
  types_.clear();
  od::array a;
  if (v.get_array().get(a)) return;
  for (auto x : a) {
    od::value t;
    if (x.get(t)) throw BadEvent{"'Input type' is not a valid array"};
    std::string_view type;
    if (t.type().value_unsafe() != od::json_type::string || !string_of(t, type)) type = {};
    types_.push_back(type);
  }
}

/// "Concrete Inputs" (read_concrete): one string per argument, its value as torch prints it
/// ("[2, 1025]" for a ScalarList, "4", "False"; "" for a tensor or None). Anything else in it (a
/// number, null, an array) reads as "", and a value that is not an array as none read, as
/// "Input type" is read; an array that is not valid JSON refuses the event.
void EventFields::read_concrete_inputs(od::value& v) {
  has_concrete_ = false;
  concrete_.clear();
  od::array a;
  if (v.get_array().get(a)) return;
  for (auto x : a) {
    od::value c;
    if (x.get(c)) throw BadEvent{"'Concrete Inputs' is not a valid array"};
    std::string_view text;
    if (c.type().value_unsafe() != od::json_type::string || !string_of(c, text)) text = {};
    concrete_.push_back(text);
  }
  has_concrete_ = true;
}

/// The event's inputs as one key (Python's text of the dims, then each type after a 0x1f, then,
/// where its "Concrete Inputs" were read, a 0x1e and each argument's value after a 0x1f), kept
/// once per distinct key: returns its index in op_inputs. The views in the OpInputs point into
/// the interned key; its dims_text is the key's start, the same for calls that differ only in
/// their values (the operator tables group by that text, as Python's key_averages does).
uint32_t EventFields::input_signature() {
  auto shape_text = [&](std::pair<uint32_t, uint32_t> shape) {
    key_ += '[';
    for (uint32_t d = 0; d < shape.second; ++d) {
      if (d) key_ += ", ";
      key_ += std::to_string(dims_[shape.first + d]);
    }
    key_ += ']';
  };
  key_.assign(1, '[');
  for (size_t k = 0; k < args_.size(); ++k) {
    if (k) key_ += ", ";
    const PendingArg& arg = args_[k];
    if (arg.list) key_ += '[';
    for (uint32_t j = 0; j < arg.shapes; ++j) {
      if (j) key_ += ", ";
      shape_text(shapes_[arg.first_shape + j]);
    }
    if (arg.list) key_ += ']';
  }
  key_ += ']';
  const size_t dims_len = key_.size();
  for (size_t k = 0; k < args_.size(); ++k) {
    key_ += '\x1f';
    if (k < types_.size()) key_ += types_[k];
  }
  if (has_concrete_) {
    key_ += '\x1e';
    for (size_t k = 0; k < args_.size(); ++k) {
      key_ += '\x1f';
      if (k < concrete_.size()) key_ += concrete_[k];
    }
  }
  const std::string_view key = intern(key_);
  const auto [it, fresh] = signatures_.emplace(key.data(), uint32_t(out_->op_inputs.size()));
  if (!fresh) return it->second;
  OpInputs in;
  in.dims_text = key.substr(0, dims_len);
  size_t at = dims_len;
  for (size_t k = 0; k < args_.size(); ++k) {
    const PendingArg& pending = args_[k];
    InputArg arg;
    const size_t len = k < types_.size() ? types_[k].size() : 0;
    arg.type = key.substr(at + 1, len);
    at += 1 + len;
    arg.is_list = pending.list;
    auto sizes = [&](std::pair<uint32_t, uint32_t> shape) {
      return std::vector<int64_t>(dims_.begin() + shape.first, dims_.begin() + shape.first + shape.second);
    };
    if (pending.list) {
      for (uint32_t j = 0; j < pending.shapes; ++j) arg.list.push_back(sizes(shapes_[pending.first_shape + j]));
    } else if (pending.shapes) {
      arg.dims = sizes(shapes_[pending.first_shape]);
    }
    in.args.push_back(std::move(arg));
  }
  if (has_concrete_) {
    in.has_concrete = true;
    ++at;  // the 0x1e
    for (size_t k = 0; k < args_.size(); ++k) {
      const size_t len = k < concrete_.size() ? concrete_[k].size() : 0;
      in.args[k].concrete = key.substr(at + 1, len);
      at += 1 + len;
    }
  }
  out_->input_shapes.push_back(in.dims_text);
  out_->op_inputs.push_back(std::move(in));
  if (part_) part_->input_keys.push_back(key);
  return it->second;
}

/// A stretch of a parallel read notes which events name their lanes, for the merge.
simdjson_inline void EventFields::note_lanes(uint8_t lanes_named) {
  if (part_ && lanes_named) part_->lane_fixes.push_back({uint32_t(out_->events.size()), lanes_named});
}

void EventFields::read_event(od::object& obj) {
  std::string_view ph, cat, name, ts_text, dur_text;
  int64_t pid = 0, tid = 0;
  uint64_t external = 0, correlation = 0;
  int64_t device = -1, stream = -1;
  KernelInfo kinfo;
  MemoryInfo minfo;
  bool has_kinfo = false, has_ts = false, has_dur = false, has_minfo = false;
  int64_t copy_bytes = -1;  // a GPU copy's or set's "bytes"
  std::string_view meta_name;
  uint8_t lanes_named = 0;  // bit 0: pid is a named lane, bit 1: tid
  std::string_view pid_name;  // the pid's name where it is a named lane
  Category category = Category::Other;
  bool skipped = false;  // an argument was skipped (counted in out_->skipped by name)
  const size_t events_before = out_->events.size();
  has_dims_ = false;
  has_concrete_ = false;
  types_.clear();
  auto skip = [&](size_t which) {
    out_->skipped.count[which] += 1;
    skipped = true;
  };
  // A kernel whose launch shape is not wanted needs nothing after its External id, device,
  // stream and correlation (Kineto writes the shape after them; with one of them missing it
  // reads on to the end).
  // Its shape is wanted: read_launch_shapes, or launch_shapes_for accepts its name (read by now,
  // or not in time).
  int8_t shape_wanted = read_launch_shapes ? 1 : launch_shapes_for ? -1 : 0;
  auto wants_shape = [&] {
    if (shape_wanted < 0 && !name.empty()) shape_wanted = launch_shapes_for(name) ? 1 : 0;
    return shape_wanted > 0;
  };
  auto kernel_placed = [&] {
    return category == Category::Kernel && device >= 0 && stream >= 0 && correlation != 0 && external != 0 &&
           !wants_shape();
  };
  // This operator's recorded inputs are to be read (read_shapes, and shapes_for or
  // shapes_also_for accepts its name; a name not seen yet, after the args in the file, is
  // accepted).
  auto wants_inputs = [&] {
    return read_shapes && (!shapes_for || name.empty() || shapes_for(name) ||
                           (shapes_also_for && shapes_also_for(name)));
  };
  bool arrow_done = false;
  const char* previous_key = nullptr;  // for the message of a malformed field
  for (auto result : obj) {
    // The field used in place: each copy of simdjson's field or value (key(), value() on the
    // result) is a store-to-load stall in this loop, the parser's hottest.
    if (result.error()) throw BadEvent{"malformed field " + after_field(previous_key)};
    if (arrow_done) continue;
    od::field& field = result.value_unsafe();
    od::value& v = field.value();
    const char* kr = field.key().raw();
    previous_key = kr;
    if (is_key(kr, "ph")) {
      if (!string_of(v, ph)) throw BadEvent{not_a_string(v, "ph")};
    } else if (is_key(kr, "name")) {
      // Kept (interned) only by the events that are stored, below: a flow arrow is only counted.
      if (!string_of(v, name)) throw BadEvent{not_a_string(v, "name")};
    } else if (is_key(kr, "cat")) {
      if (!string_of(v, cat)) throw BadEvent{not_a_string(v, "cat")};
      category = categories_(cat);
    } else if (is_key(kr, "ts")) {
      ts_text = v.raw_json_token();
      has_ts = true;
      if (!ts_text.empty() && ts_text.front() == '"') {
        if (v.get_string().get(ts_text)) throw BadEvent{"bad 'ts'"};
      }
      int64_t ns = 0;
      if (!text_to_ns(ts_text, ns))
        throw BadEvent{"'ts' " + shown_token(ts_text) + " is not a number or is too large"};
      ts_ns_ = ns;
      // A flow arrow is only counted (and its ts checked): the fields after it are passed over
      // unread (Kineto writes an arrow's ph, id, pid, tid and ts first, then its cat and
      // name). Passed over, not left by a break: the chunked read needs each event read to
      // its end.
      arrow_done = is_flow_phase(ph);
    } else if (is_key(kr, "dur")) {
      dur_text = v.raw_json_token();
      has_dur = true;
      int64_t ns = 0;
      if (!text_to_ns(dur_text, ns))
        throw BadEvent{"'dur' " + shown_token(dur_text) + " is not a number or is too large"};
      if (ns < 0) throw BadEvent{"negative duration " + shown_value(dur_text)};
      dur_ns_ = ns;
    } else if (is_key(kr, "pid")) {
      if (is_flow_phase(ph)) continue;  // an arrow's lanes are not kept
      bool named = false;
      pid = lane_id(v, named);
      lanes_named = (lanes_named & ~1u) | (named ? 1u : 0u);
      pid_name = named ? last_lane_name_ : std::string_view();
    } else if (is_key(kr, "tid")) {
      if (is_flow_phase(ph)) continue;
      bool named = false;
      tid = lane_id(v, named);
      lanes_named = (lanes_named & ~2u) | (named ? 2u : 0u);
    } else if (is_key(kr, "args")) {
      od::object args;
      if (v.get_object().get(args)) continue;
      for (auto a : args) {
        if (a.error()) throw BadEvent{"malformed args"};
        od::field& arg = a.value_unsafe();
        od::value& av = arg.value();
        const char* ak = arg.key().raw();
        // torch 1.8-1.9's Kineto wrote a kernel's and a runtime call's as "external id" (its
        // operators' as "External id"): the same link to the operator that launched them.
        if (is_key(ak, "External id") || (*ak == 'e' && is_key(ak, "external id"))) {
          int64_t id = 0;
          if (id_of(av, id)) external = uint64_t(id);
          else skip(0);
          // An operator or range needs nothing else from its args (input shapes and the
          // like) unless asked, for it: leave the rest for simdjson to skip, much quicker than
          // reading.
          if (is_torch_scope(category) && !wants_inputs()) break;
          if (kernel_placed()) break;
        } else if (is_key(ak, "correlation")) {
          int64_t id = 0;
          if (id_of(av, id)) correlation = uint64_t(id);
          else skip(1);
          // A CUDA launch call needs nothing after it; HIP's carries its kernel's launch shape.
          if (is_launch_call(category) && external &&
              (!read_launch_shapes || name.rfind("hip", 0) != 0))
            break;
          if (kernel_placed()) break;
        } else if (is_key(ak, "device")) {
          if (!id_of(av, device)) device = -1, skip(2);
          if (kernel_placed()) break;
        } else if (is_key(ak, "stream")) {
          if (!id_of(av, stream)) stream = -1, skip(3);
          if (kernel_placed()) break;
        } else if (is_key(ak, "grid")) {
          triple(av, kinfo.grid, "grid");
          has_kinfo = true;
        } else if (is_key(ak, "block")) {
          triple(av, kinfo.block, "block");
          has_kinfo = true;
        } else if (is_key(ak, "registers per thread")) {
          int64_t n = 0;
          if (optional_whole(av, n)) kinfo.registers = int32_t(n);
          else skip(4);
          has_kinfo = true;
        } else if (is_key(ak, "shared memory")) {
          if (!optional_whole(av, kinfo.shared_memory)) kinfo.shared_memory = 0, skip(5);
          has_kinfo = true;
        } else if (is_key(ak, "est. achieved occupancy %")) {
          if (optional_real(av, kinfo.est_occupancy_pct)) has_kinfo = true;
        } else if (is_key(ak, "blocks per SM")) {
          if (optional_real(av, kinfo.blocks_per_sm)) has_kinfo = true;
        } else if (is_key(ak, "name")) {
          std::string_view s;
          if (!av.get_string().get(s)) meta_name = intern(s);
        } else if (is_key(ak, "Bytes")) {
          has_minfo = optional_whole(av, minfo.bytes);
        } else if (is_key(ak, "Total Allocated")) {
          if (!optional_whole(av, minfo.total_allocated)) minfo.total_allocated = -1;
        } else if (is_key(ak, "Device Type")) {
          int64_t type = 0;
          // c10::DeviceType: 1 CUDA, 6 HIP (a ROCm build's GPU memory in some Kineto versions),
          // 12 XPU, 13 MPS... (a number past its range: read as the host's).
          if (optional_whole(av, type) && type > 0 && type < 128) {
            minfo.device_type = int8_t(type);
            minfo.cuda = type == 1 || type == 6;
          }
        } else if (is_key(ak, "Device Id")) {
          int64_t device = -1;
          if (optional_whole(av, device)) minfo.device = int32_t(device);
        } else if (is_key(ak, "bytes")) {
          if (!optional_whole(av, copy_bytes)) copy_bytes = -1;
        } else if ((is_key(ak, "Input Dims") || is_key(ak, "Input dims")) && wants_inputs()) {  // torch 1.7's: "dims"
          read_input_dims(av);
        } else if (is_key(ak, "Input type") && wants_inputs()) {
          read_input_types(av);
        } else if (read_concrete && is_key(ak, "Concrete Inputs") && wants_inputs()) {
          read_concrete_inputs(av);
        }
      }
    }
  }
  // The autograd profiler's own export (EventList.export_chrome_trace: torch.autograd.profiler's
  // trace before Kineto, and prof.events().export_chrome_trace() since) writes no category: its
  // CPU slices in the lane "CPU functions", operators and ranges alike, read as operators (the
  // step rule below makes ProfilerStep#N the step); torch 1.7's CUDA timings, in "CUDA
  // functions", are not kernels pil-trace can place, and are counted as not read.
  if (cat.empty() && ph == "X") {
    if (pid_name == kLegacyCpuLane) category = Category::CpuOp, out_->autograd_profiler_slices += 1;
    else if (pid_name == kLegacyCudaLane) out_->unread[Trace::kUnreadLegacyCuda] += 1;
  }
  if (ph == "X") {
    if (!has_ts) throw BadEvent{"complete event without 'ts'"};
    Event e;
    e.name = intern(name);
    e.category = category;
    // torch 1.8-1.9's Kineto traces wrote the step range as an operator ("cat": "Operator"):
    // it is the step all the same.
    if (category == Category::CpuOp && !name.empty() && name.front() == 'P' && is_step_name(name))
      e.category = Category::UserAnnotation;
    e.start_ns = ts_ns_;
    e.dur_ns = has_dur ? dur_ns_ : 0;
    e.pid = pid;
    e.tid = tid;
    e.external_id = external;
    e.correlation = correlation;
    if (e.on_device()) {
      if (device >= 0) e.pid = device, lanes_named &= uint8_t(~1u);
      if (stream >= 0) e.tid = stream, lanes_named &= uint8_t(~2u);
    }
    // A kernel's launch shape; HIP writes it on the launch call instead (hipLaunchKernel).
    // (Not kept without read_launch_shapes, even where the shape came before the fields that
    // let the args go: the model is the same whatever the fields' order.)
    if (has_kinfo && (read_launch_shapes || (e.category == Category::Kernel && wants_shape())) &&
        (e.category == Category::Kernel || is_launch_call(e.category))) {
      e.kernel_info = uint32_t(out_->kernels.size());
      out_->kernels.push_back(kinfo);
    }
    if (copy_bytes >= 0 && (e.category == Category::Memcpy || e.category == Category::Memset)) {
      e.memory_info = uint32_t(out_->copy_bytes.size());
      out_->copy_bytes.push_back(copy_bytes);
    }
    if (has_dims_ && is_torch_scope(e.category)) e.input_shapes = input_signature();
    note_lanes(lanes_named);
    out_->events.push_back(e);
  } else if (ph == "i" && has_minfo && name == "[memory]") {
    if (!has_ts) throw BadEvent{"memory event without 'ts'"};
    Event e;
    e.name = intern(name);
    e.category = Category::Memory;
    e.start_ns = ts_ns_;
    e.pid = pid;
    e.tid = tid;
    e.memory_info = uint32_t(out_->memory.size());
    out_->memory.push_back(minfo);
    note_lanes(lanes_named);
    out_->events.push_back(e);
  } else if (is_flow_phase(ph)) {
    if (!has_ts) throw BadEvent{"flow event without 'ts'"};
    (ph == "s" ? out_->flows.starts : out_->flows.finishes) += 1;
  } else if (ph == "M") {
    const bool thread = name == "thread_name", process = name == "process_name";
    if (part_ && (thread || process)) {
      part_->metas.push_back({pid, process ? -1 : tid,
                              uint8_t(process ? lanes_named & 1u : lanes_named), meta_name});
    } else {
      if (thread) out_->lane_names[{pid, tid}] = std::string(meta_name);
      if (process) out_->lane_names[{pid, -1}] = std::string(meta_name);
    }
  }
  // Other phases (other instant events, counters "C", ...) carry nothing the reports use;
  // begin and end events would, as would async ones, and are counted to say they were not read.
  if (ph == "B" || ph == "E") out_->unread[Trace::kUnreadBeginEnd] += 1;
  if (ph == "b" || ph == "e" || ph == "n") out_->unread[Trace::kUnreadAsync] += 1;
  if (category == Category::Other && !cat.empty() && is_unmodelled_device_category(cat))
    out_->unread[std::string(cat)] += 1;
  if (category == Category::Other && cat == "python_function") out_->python_functions += 1;
  if (category == Category::Other && cat == "cuda_sync") out_->cuda_sync_events += 1;
  if (category == Category::Other && cat == Trace::kUnreadCuptiRange) out_->unread[Trace::kUnreadCuptiRange] += 1;
  if (skipped) out_->skipped.events += 1;
  if (keep_sources) {
    ElementSource src;
    src.offset = element_offset;
    src.ts_ns = has_ts ? ts_ns_ : 0;
    if (out_->events.size() > events_before) src.event = uint32_t(events_before);
    src.ph = ph.empty() ? '\0' : ph.front();
    out_->sources.push_back(src);
  }
}
}  // namespace pil::trace::detail
