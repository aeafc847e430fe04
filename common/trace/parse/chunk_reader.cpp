#include "trace/parse/chunk_reader.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

#include "trace/parse/json_text.h"

namespace pil::trace::detail {

namespace od = simdjson::ondemand;

namespace {

/// What a file that is no trace begins with, for its error: "a JSON number", "text" ...
std::string begins_as(const char* p, size_t n) {
  if (n == 0) return "nothing";
  const char c = p[0];
  if (c == '-' || (c >= '0' && c <= '9')) return "a JSON number where '{' or '[' begins a trace";
  if (c == '"') return "a JSON string where '{' or '[' begins a trace";
  if ((n >= 4 && std::memcmp(p, "null", 4) == 0) || (n >= 4 && std::memcmp(p, "true", 4) == 0) ||
      (n >= 5 && std::memcmp(p, "false", 5) == 0))
    return "a JSON literal (null, true or false) where '{' or '[' begins a trace";
  return "not JSON (neither '{' nor '[' first)";
}


constexpr const char* after_array = "after the event array, inside the fields that follow it";

/// A file that starts with UTF-16's byte-order mark (Windows tools write one): refused by name,
/// not as "not JSON" at byte 0.
void refuse_utf16(const std::string& label, const char* data, size_t len) {
  if (len >= 2 && ((uint8_t(data[0]) == 0xFF && uint8_t(data[1]) == 0xFE) ||
                   (uint8_t(data[0]) == 0xFE && uint8_t(data[1]) == 0xFF)))
    throw ParseError(label + ": the file is UTF-16 text (it starts with UTF-16's byte-order mark); allowed: UTF-8 "
                     "JSON, as torch.profiler writes it (convert: iconv -f UTF-16 -t UTF-8 IN > OUT)");
}

/// Puts `c` at data_[i] until the guard goes, then restores the byte that was there.
struct Stopper {
  char* at;
  char saved;
  Stopper(char* p, char c) : at(p), saved(*p) { *p = c; }
  ~Stopper() { *at = saved; }
};

}  // namespace

Reader::Reader(std::unique_ptr<Source> source, std::string label, const ParseOptions& options,
               Trace* out)
    : source_(std::move(source)), label_(std::move(label)), out_(out), fields_(out) {
  cap_ = std::max<size_t>(options.chunk_bytes, 4096);
  fields_.keep_sources = options.keep_sources;
  fields_.read_launch_shapes = options.read_launch_shapes;
  fields_.launch_shapes_for = options.launch_shapes_for;
  fields_.read_shapes = options.read_shapes;
  fields_.shapes_for = options.shapes_for;
  if (!options.shapes_also_if) fields_.shapes_also_for = options.shapes_also_for;
  else shapes_also_ = options;  // judged on the head, in run() (the parallel read judges its own)
  fields_.read_concrete = options.read_concrete;
  buf_ = std::make_unique<char[]>(cap_ + simdjson::SIMDJSON_PADDING);
  data_ = buf_.get();
}

size_t Reader::run() {
  fill(0);
  size_t i = 0;
  if (len_ >= 3 && std::memcmp(data_, "\xEF\xBB\xBF", 3) == 0) i = 3;  // UTF-8 BOM
  refuse_utf16(label_, data_, len_);
  while (i < len_ && is_space(data_[i])) ++i;
  if (i == len_) throw ParseError(label_ + ": empty file, expected a Chrome trace (JSON)");
  size_t events_at = 0;
  if (data_[i] == '[') {
    events_at = i;
    bare_array_ = true;
  } else if (data_[i] == '{') {
    events_at = read_head(i);
  } else {
    throw ParseError(label_ + ": not a Chrome trace: " + begins_as(data_ + i, len_ - i) + " at byte " +
                     std::to_string(offset(i)) + "; allowed: a JSON object with \"traceEvents\", or an array of events");
  }
  if (shapes_also_.shapes_also_if) {
    judge_shapes_also(shapes_also_, *out_);
    fields_.shapes_also_for = shapes_also_.shapes_also_for;
  }
  read_events(events_at);
  return events_;
}

/// Keeps the bytes from `keep`, moves them to index 1, reads more.
void Reader::fill(size_t keep) {
  if (keep > 0) {
    const size_t n = len_ - std::min(keep, len_);
    std::memmove(data_ + 1, data_ + keep, n);
    base_ += int64_t(keep) - 1;
    len_ = n + 1;
  }
  while (!eof_ && len_ < cap_) {
    const size_t got = source_->read(data_ + len_, cap_ - len_);
    if (got == 0) eof_ = true;
    len_ += got;
  }
  std::memset(data_ + len_, 0, simdjson::SIMDJSON_PADDING);
}

/// A larger buffer, for an event (or head) bigger than a chunk.
void Reader::grow() {
  constexpr size_t kMax = size_t(3) << 30;  // simdjson's single-document limit is 4 GB
  if (cap_ >= kMax)
    throw ParseError(label_ + ": an event or the trace header is larger than 3 GB");
  const size_t cap = std::min(cap_ * 2, kMax);
  auto bigger = std::make_unique<char[]>(cap + simdjson::SIMDJSON_PADDING);
  std::memcpy(bigger.get(), data_, len_);
  buf_ = std::move(bigger);
  data_ = buf_.get();
  cap_ = cap;
  fill(0);
}

/// More bytes after `at` (which becomes 1): drop what is before it, or grow the buffer when
/// nothing is (one event, or the head, larger than the buffer).
void Reader::read_more(size_t& at) {
  if (at > 1) {
    fill(at);
    at = 1;
  } else {
    grow();
  }
}

/// End of the part of the buffer that may be parsed now: all of it at the end of the file,
/// else just after its last line break (a line break is never inside a JSON string).
size_t Reader::safe_end(size_t from) const {
  if (eof_) return len_;
  const void* nl = memrchr(data_ + from, '\n', len_ - from);
  return nl ? size_t(static_cast<const char*>(nl) - data_) + 1 : from;
}

/// The object's fields before "traceEvents"; returns the index of the array's '['.
size_t Reader::read_head(size_t start) {
  bool short_head = false;
  // At the file's end, a top-level object that never closes was cut short.
  const auto cut_head = [&] { return start < len_ && data_[start] == '{' && open_to_end(start); };
  const char* const before_array = "before its event array";
  for (;;) {
    size_t end = safe_end(start);
    // A broken event (an unclosed string, say) fails the whole window: the second try ends
    // the head just after the array's '[', so the event loop can say which event it was.
    if (short_head) end = std::min(end, head_end_guess(start, end));
    if (end > start) {
      const Stopper stop(data_ + end, '}');  // On Demand wants a root object to end so
      od::document doc;
      const simdjson::padded_string_view json(data_ + start, end + 1 - start,
                                              cap_ + simdjson::SIMDJSON_PADDING - start);
      od::object top;
      simdjson::error_code err = parser_.iterate(json).get(doc);
      if (!err) err = doc.get_object().get(top);
      if (!err) {
        // A head read again (it did not fit, or a broken event failed the window) starts over:
        // the fields that add to lists would hold it twice (3,000 ERROR messages before the
        // event array read as 6,295 on two threads).
        out_->profiler_log = {};
        out_->device_names.clear();
        out_->devices.clear();
        for (auto field : top) {
          od::raw_json_string key;
          if ((err = field.key().get(key))) break;
          od::value v;
          if ((err = field.value().get(v))) break;
          if (key == "traceEvents") {
            const char* at = nullptr;
            if ((err = v.current_location().get(at))) break;
            if (*at != '[' && size_t(at - data_) >= end && cut_head()) throw cut_short(label_, before_array);
            if (*at != '[')
              throw ParseError(label_ + ": \"traceEvents\" is not an array" +
                               where(size_t(at - data_)));
            return size_t(at - data_);
          }
          if ((err = read_top_field(key, v))) break;
        }
      }
      if (err && !short_head && head_end_guess(start, end) < end) {
        short_head = true;
        continue;
      }
      if (cut_head()) throw cut_short(label_, before_array);
      if (eof_) {
        if (err)
          throw ParseError(label_ + ": not a valid trace: " + simdjson::error_message(err));
        throw ParseError(label_ + ": no \"traceEvents\" array in the top-level object");
      }
    } else if (eof_) {
      throw cut_short(label_, before_array);
    }
    short_head = false;
    read_more(start);  // the head did not fit in the buffer
  }
}

/// Just past the '[' of the first `"traceEvents": [` in data_[start, end), or `end`.
size_t Reader::head_end_guess(size_t start, size_t end) const {
  static constexpr std::string_view key = "\"traceEvents\"";
  const std::string_view w(data_ + start, end - start);
  const size_t k = w.find(key);
  if (k == std::string_view::npos) return end;
  size_t i = k + key.size();
  while (i < w.size() && (is_space(w[i]) || w[i] == ':')) ++i;
  return i < w.size() && w[i] == '[' ? start + i + 1 : end;
}

/// Top-level fields other than traceEvents that the model keeps.
simdjson::error_code Reader::read_top_field(od::raw_json_string key, od::value& v) {
  if (key == "baseTimeNanoseconds") {
    int64_t ns = 0;
    if (!v.get_int64().get(ns)) out_->base_time_ns = ns;  // already nanoseconds
    return simdjson::SUCCESS;
  }
  if (key == "with_flops") {  // Python's profiler writes 1; a bool or "1" reads the same
    int64_t n = 0;
    bool b = false;
    std::string_view s;
    if (!v.get_int64().get(n)) out_->with_flops = n != 0;
    else if (!v.get_bool().get(b)) out_->with_flops = b;
    else if (!v.get_string().get(s)) out_->with_flops = s == "1" || s == "true";
    return simdjson::SUCCESS;
  }
  if (key == "ERROR" || key == "WARNING" || key == "INFO") {  // the profiler's own log (Trace::ProfilerLog)
    od::array arr;
    if (v.get_array().get(arr)) return simdjson::SUCCESS;  // not the shape we know: ignore
    Trace::ProfilerLog& log = out_->profiler_log;
    const bool info = key == "INFO";
    for (auto item : arr) {
      std::string_view s;
      if (item.get_string().get(s) || s.empty()) continue;
      if (!info) (key == "ERROR" ? log.errors : log.warnings).emplace_back(s);
      else if (s.find("] Record counts: ") != std::string_view::npos) log.record_counts = std::string(s);
    }
    return simdjson::SUCCESS;
  }
  if (key == "deviceProperties") {
    od::array arr;
    if (v.get_array().get(arr)) return simdjson::SUCCESS;  // not the shape we know: ignore
    // Kineto writes the same fields for CUDA and ROCm devices (libkineto/src/DeviceProperties.cpp);
    // a field missing or of another type keeps its "not given" value.
    for (auto item : arr) {
      od::object dev;
      if (item.get_object().get(dev)) continue;
      DeviceInfo d;
      for (auto f : dev) {
        od::raw_json_string k;
        if (f.key().get(k)) continue;
        std::string_view s;
        int64_t n = 0;
        auto whole = [&](auto& into) {
          if (!f.value().get_int64().get(n)) into = static_cast<std::remove_reference_t<decltype(into)>>(n);
        };
        if (k == "name") {
          if (!f.value().get_string().get(s)) d.name = std::string(s);
        } else if (k == "id") {
          whole(d.id);
        } else if (k == "totalGlobalMem") {
          whole(d.total_global_mem);
        } else if (k == "numSms") {
          whole(d.num_sms);
        } else if (k == "computeMajor") {
          whole(d.compute_major);
        } else if (k == "computeMinor") {
          whole(d.compute_minor);
        } else if (k == "warpSize") {
          whole(d.warp_size);
        }
      }
      out_->device_names.push_back(d.name);
      out_->devices.push_back(std::move(d));
    }
    return simdjson::SUCCESS;
  }
  return simdjson::SUCCESS;
}

void Reader::read_events(size_t at) {
  ev_at_ = at;
  ev_first_ = true;  // data_[at] is the array's own '['
  continue_events();
}

/// The event loop, from (ev_at_, ev_first_). Returns at the array's end (after reading the
/// tail, or, for a stretch of a parallel read, noting where the array closed), or at the first
/// event that starts at or past limit_ (its file offset in stopped_at_).
void Reader::continue_events() {
  size_t& at = ev_at_;
  bool& first = ev_first_;
  for (;;) {
    // Find where the unread part of the array starts: skip blanks and one ',' between events.
    size_t i = at;
    while (i < len_ && is_space(data_[i])) ++i;
    if (!first && i < len_ && data_[i] == ',') {
      ++i;
      while (i < len_ && is_space(data_[i])) ++i;
    }
    if (i >= len_) {
      if (eof_) throw cut_short(label_, "inside the event array");
      fill(at);
      at = 1;
      continue;
    }
    if (!first && data_[i] == ']') return close_array(i + 1);
    if (first) {  // data_[i] is the array's '[': an empty array closes at once
      size_t j = i + 1;
      while (j < len_ && is_space(data_[j])) ++j;
      if (j < len_ && data_[j] == ']') return close_array(j + 1);
    }
    if (uint64_t(offset(i)) >= limit_) {
      stopped_at_ = uint64_t(offset(i));
      return;
    }
    // The chunk is parsed as an array of its own: a '[' goes just before its first event (over
    // a blank or the ',' there; i >= 1 as chunks start at index 1), put back after parsing so
    // a retry over the same bytes finds them as they were.
    const size_t begin = first ? i : i - 1;
    const size_t end = safe_end(i);
    if (end <= i) {  // not one whole line in the buffer
      if (eof_) throw cut_short(label_, "inside the event array");
      read_more(at);
      continue;
    }
    size_t next = 0;
    bool array_closed = false;
    size_t done = 0;
    if (first) {
      done = parse_chunk(begin, end, next, array_closed);
    } else {
      const Stopper open(data_ + begin, '[');
      done = parse_chunk(begin, end, next, array_closed);
    }
    if (array_closed) return close_array(next);
    if (done > 0) first = false;  // until an event is taken, data_[at] is still the '['
    if (done == 0) {
      // Not one whole event in the parsable part: either an event larger than the buffer
      // (read more), or a bad one at the end of the file.
      if (eof_ && end == len_) throw_bad_structure(i);
      read_more(at);
      continue;
    }
    at = next;
    if (!eof_ || at < len_) {
      fill(at);
      at = 1;
    }
  }
}

/// The array ended just before data_[after]: read what follows, or, reading one stretch of a
/// parallel read, note where.
void Reader::close_array(size_t after) {
  if (stretch_) {
    closed_at_ = uint64_t(offset(after));
    return;
  }
  read_tail(after);
}

[[noreturn]] void Reader::throw_bad_structure(size_t i) {
  simdjson::dom::parser dom;
  // Blame the first event that does not parse on its own (its extent found by counting
  // brackets outside strings), so the answer does not depend on where a window began. Before
  // the first event, data_[i] is the array's own '['.
  size_t first = i;
  if (ev_first_ && first < len_ && data_[first] == '[')
    for (++first; first < len_ && is_space(data_[first]);) ++first;
  if (eof_ && first >= len_) throw cut_short(label_, "inside the event array");
  for (size_t at = first, index = events_; at < len_;) {
    const size_t end = extent_end(at);
    const std::string one(data_ + at, end - at);
    const auto r = dom.parse(simdjson::padded_string(one));
    if (r.error()) throw bad_event(index, at, simdjson::error_message(r.error()));
    at = end;
    while (at < len_ && is_space(data_[at])) ++at;
    if (at >= len_ && eof_) throw cut_short(label_, "inside the event array");
    // Every event whole and the array closed: what is wrong follows it (read_tail says what;
    // a stretch of a parallel read leaves the tail to the reader after it, but a cut is a cut).
    if (at < len_ && data_[at] == ']') {
      if (!stretch_) read_tail(at + 1);
      // Nothing yet, or the top object's next field: (a stretch does not know whether the
      // array was bare, which nothing may follow)
      size_t k = at + 1;
      while (k < len_ && is_space(data_[k])) ++k;
      if ((k == len_ || data_[k] == ',') && open_to_end(at + 1, 1)) throw cut_short(label_, after_array);
    }
    if (at >= len_ || data_[at] != ',') break;
    ++at;
    while (at < len_ && is_space(data_[at])) ++at;
    ++index;
  }
  // Validate the rest fully to get simdjson's own words for what is wrong.
  std::string rest(data_ + i, len_ - i);
  if (!rest.empty() && rest.front() != '[') rest.insert(rest.begin(), '[');
  const auto result = dom.parse(simdjson::padded_string(rest));
  const std::string why = result.error() ? simdjson::error_message(result.error())
                                         : "malformed or truncated event";
  throw bad_event(events_, i, why);
}

ParseError Reader::bad_event(size_t index, size_t at, const std::string& why) const {
  if (at < len_ && data_[at] == '{' && open_to_end(at))
    return cut_short(label_, "inside event " + std::to_string(index) + ", which begins" + where(at));
  return ParseError(label_ + ": event " + std::to_string(index) + where(at) + ": " + why);
}

bool Reader::open_to_end(size_t at, int depth) const {
  return eof_ && at <= len_ && detail::close_of(std::string_view(data_ + at, len_ - at), depth) >= len_ - at;
}

/// Parses the events in data_[begin, end) (data_[begin] == '['). Returns how many it took;
/// `next` is where the first event it did not take begins (or what follows the array).
///
/// On Demand wants a root array to end with ']', so one is put just past the parsable part.
/// An event that runs into that stand-in bracket is left for the next chunk, which holds more.
/// Events are read in one pass; an event that fails is read again "carefully" at the start of
/// the next chunk (its extent checked first), so a real error is told from a chunk's cut.
size_t Reader::parse_chunk(size_t begin, size_t end, size_t& next, bool& array_closed) {
  // In place (a chunk of a parallel read), the stand-ins were written before the threads
  // started: nothing is written here, as a neighbour's chunk may read these bytes.
  std::optional<Stopper> stop;
  if (!in_place_) stop.emplace(data_ + end, ']');
  const simdjson::padded_string_view json(data_ + begin, end + 1 - begin,
                                          cap_ + simdjson::SIMDJSON_PADDING - begin);
  od::document doc;
  od::array arr;
  if (parser_.iterate(json).get(doc) || doc.get_array().get(arr)) return 0;
  size_t taken = 0;
  next = begin + 1;
  for (auto item : arr) {
    od::value v;
    if (item.get(v)) break;
    const char* start = nullptr;
    if (v.current_location().get(start)) break;
    const size_t at = size_t(start - data_);
    if (at >= end) break;  // the stand-in bracket itself
    if (uint64_t(offset(at)) >= limit_) break;  // another stretch's events from here
    od::object obj;
    if (v.get_object().get(obj)) {
      if (*start != '{' && !in_place_)  // in place, the sequential read says what is wrong
        throw ParseError(label_ + ": event " + std::to_string(events_) + where(at) + ": not an object" +
                         (events_ == 0 && *start == '['
                              ? " but an array: not a Chrome trace (an array of arrays is what torch.profiler's "
                                "export_memory_timeline writes to a .json; export_chrome_trace writes a trace)"
                              : std::string()));
      break;
    }
    size_t after = 0;
    fields_.element_offset = uint64_t(offset(at));
    if (careful_ || (walk_only_ && !walk_fields_)) {
      // Check the event's extent before reading it: an unbalanced one needs more data.
      std::string_view raw;
      if (obj.raw_json().get(raw)) break;
      after = size_t(raw.data() + raw.size() - data_);  // the next ',' or ']'
      if (after >= end) break;
      if (walk_fields_) {
        if (obj.reset().error()) break;
        try {
          if (walk_value_fields(obj)) break;
        } catch (const BadEvent& bad) {
          throw bad_event(events_, at, bad.what);
        }
      } else if (!walk_only_) {
        if (obj.reset().error()) break;
        try {
          fields_.read_event(obj);
        } catch (const BadEvent& bad) {
          throw bad_event(events_, at, bad.what);
        }
      }
      careful_ = false;
    } else {
      const size_t n_events = out_->events.size(), n_kernels = out_->kernels.size(),
                   n_memory = out_->memory.size(), n_sources = out_->sources.size(),
                   n_copies = out_->copy_bytes.size();
      const FlowCounts n_flows = out_->flows;
      const SkippedFields n_skipped = out_->skipped;
      const size_t n_fixes = part_ ? part_->lane_fixes.size() : 0,
                   n_metas = part_ ? part_->metas.size() : 0;
      auto undo = [&] {  // everything read_event may have added
        out_->events.resize(n_events);
        out_->kernels.resize(n_kernels);
        out_->memory.resize(n_memory);
        out_->copy_bytes.resize(n_copies);
        out_->sources.resize(n_sources);
        out_->flows = n_flows;
        out_->skipped = n_skipped;
        if (part_) {
          part_->lane_fixes.resize(n_fixes);
          part_->metas.resize(n_metas);
        }
      };
      try {
        if (walk_fields_) {
          if (walk_value_fields(obj)) throw BadEvent{"malformed event"};
        } else {
          fields_.read_event(obj);
        }
      } catch (const BadEvent& bad) {
        undo();
        if (eof_)  // nothing was cut off: the event itself is wrong
          throw bad_event(events_, at, bad.what);
        careful_ = true;  // maybe cut short by the chunk's end: read it again, carefully
        break;
      }
      const char* p = nullptr;
      const bool located = !doc.current_location().get(p);
      // Reached the stand-in bracket: the event may continue in the next chunk. In place, the
      // stand-in stands for the ',' after an event, so an event that closes before it, by
      // its own text, is whole.
      if (!located || size_t(p - data_) > end ||
          (size_t(p - data_) == end && !(in_place_ && closes_before(at, end)))) {
        undo();
        break;
      }
      after = size_t(p - data_);
    }
    ++events_;
    ++taken;
    next = after;
    if (after == end) return taken;  // in place: the chunk read whole
    if (data_[after] == ']') {
      array_closed = true;
      next = after + 1;
      return taken;
    }
  }
  return taken;
}

/// Visits every field of an object, recursively, touching each value's text (walk --fields).
/// Returns true on a simdjson error; throws BadEvent for values nested deeper than simdjson's
/// own documents may be (1024 levels), before the recursion could exhaust the stack.
bool Reader::walk_value_fields(od::object& obj, int depth) {
  for (auto field : obj) {
    od::raw_json_string key;
    od::value v;
    if (field.key().get(key) || field.value().get(v)) return true;
    if (walk_value(v, depth + 1)) return true;
  }
  return false;
}
bool Reader::walk_value(od::value& v, int depth) {
  constexpr int kMaxDepth = 1024;  // simdjson's DEFAULT_MAX_DEPTH
  if (depth > kMaxDepth)
    throw BadEvent{"values nested more than " + std::to_string(kMaxDepth) + " levels deep"};
  od::json_type type;
  if (v.type().get(type)) return true;
  if (type == od::json_type::object) {
    od::object o;
    return v.get_object().get(o) || walk_value_fields(o, depth);
  }
  if (type == od::json_type::array) {
    od::array a;
    if (v.get_array().get(a)) return true;
    for (auto item : a) {
      od::value x;
      if (item.get(x) || walk_value(x, depth + 1)) return true;
    }
    return false;
  }
  (void)v.raw_json_token();  // moves the iterator over the scalar
  return false;
}

/// What follows the event array: ']' was consumed; the object's other fields may follow.
void Reader::read_tail(size_t at) {
  std::string tail(data_ + at, len_ - std::min(at, len_));
  constexpr size_t kTailLimit = size_t(16) << 20;
  while (!eof_ && tail.size() < kTailLimit) {
    char chunk[65536];
    const size_t got = source_->read(chunk, sizeof chunk);
    if (got == 0) eof_ = true;
    tail.append(chunk, got);
  }
  size_t i = 0;
  while (i < tail.size() && is_space(tail[i])) ++i;
  if (bare_array_) {
    if (i != tail.size())
      throw ParseError(label_ + ": unexpected text after the event array");
    return;
  }
  {
    // Text after the closing '}': a second document appended (a trace written twice into one
    // file), which the object read below would stop before.
    const std::string_view rest = std::string_view(tail).substr(i);
    size_t k = detail::close_of(rest, 1);
    if (k < rest.size() && rest[k] == '}')  // a stray ']' is the parse's to report, below
      for (++k; k < rest.size(); ++k)
        if (!is_space(rest[k]))
          throw ParseError(label_ + ": unexpected text after the trace's closing '}' (two JSON documents in one file?)");
  }
  // `, "key": value ... }` becomes a small object of its own.
  simdjson::padded_string p(std::string("{\"_\":0") + tail.substr(i));
  od::document doc;
  od::object obj;
  simdjson::error_code err = parser_.iterate(p).get(doc);
  if (!err) err = doc.get_object().get(obj);
  if (!err) {
    for (auto field : obj) {
      od::raw_json_string key;
      od::value v;
      if ((err = field.key().get(key)) || (err = field.value().get(v))) break;
      if ((err = read_top_field(key, v))) break;
    }
  }
  if (err) {
    const std::string_view rest = std::string_view(tail).substr(i);
    if (eof_ && detail::close_of(rest, 1) >= rest.size()) throw cut_short(label_, after_array);
    throw ParseError(label_ + ": after the event array: " + simdjson::error_message(err));
  }
}

/// Where the value starting at data_[at] ends, by its brackets counted outside strings (a
/// scalar runs to the next ',' or ']'); len_ when it does not end in the buffer.
size_t Reader::extent_end(size_t at) const {
  const size_t close = close_of(at, len_);
  if (close < len_) return close + 1;
  if (data_[at] == '{' || data_[at] == '[') return len_;
  size_t i = at;
  while (i < len_ && data_[i] != ',' && data_[i] != ']') ++i;
  return i;
}

/// True when the object starting at data_[at] ('{') closes before data_[end], with only
/// blanks between: its own brackets, counted outside strings, say it is whole.
bool Reader::closes_before(size_t at, size_t end) const {
  size_t i = close_of(at, end);
  if (i >= end) return false;
  for (++i; i < end; ++i)
    if (!is_space(data_[i])) return false;
  return true;
}

/// The index of the bracket that closes the one at data_[at], counting brackets outside
/// strings; `end` when it is not before `end`.
size_t Reader::close_of(size_t at, size_t end) const {
  return at + detail::close_of(std::string_view(data_ + at, end - at));
}

uint64_t Reader::read_head_only() {
  fill(0);
  size_t i = 0;
  if (len_ >= 3 && std::memcmp(data_, "\xEF\xBB\xBF", 3) == 0) i = 3;  // UTF-8 BOM
  refuse_utf16(label_, data_, len_);
  while (i < len_ && is_space(data_[i])) ++i;
  if (i == len_) throw ParseError(label_ + ": empty file, expected a Chrome trace (JSON)");
  if (data_[i] == '[') {
    bare_array_ = true;
    return uint64_t(offset(i));
  }
  if (data_[i] != '{')
    throw ParseError(label_ + ": not a Chrome trace: " + begins_as(data_ + i, len_ - i) + " at byte " +
                     std::to_string(offset(i)) + "; allowed: a JSON object with \"traceEvents\", or an array of events");
  return uint64_t(offset(read_head(i)));
}

void Reader::use_part(Part* part) {
  part_ = part;
  out_ = &part->t;
  fields_.use_part(part);
}

void Reader::read_chunk_in_place(char* data, size_t capacity, size_t open, size_t close,
                                 size_t resume_if_none, bool first_chunk, Part* part) {
  use_part(part);
  part->clear();
  data_ = data;
  base_ = 0;
  len_ = close + 1;
  cap_ = capacity - simdjson::SIMDJSON_PADDING;
  in_place_ = true;
  eof_ = false;
  careful_ = false;
  events_ = 0;
  size_t next = open + 1;
  bool closed = false;
  size_t taken = 0;
  try {
    taken = parse_chunk(open, close, next, closed);
  } catch (...) {  // whatever it was, the sequential read finds it again and says so
    part->clear();
    taken = 0;
    closed = false;
  }
  part->elements = taken;
  if (closed) {
    part->closed = true;
    part->closed_at = next;
  } else if (taken > 0 && next == close) {
    part->whole = true;
  } else if (taken > 0) {
    part->resume = next;
  } else {
    part->resume = resume_if_none;  // the array's '[', or the ',' before the chunk's event
    part->resume_first = first_chunk;
  }
}

void Reader::start_stretch(uint64_t from, bool first, size_t element) {
  stretch_ = true;
  base_ = int64_t(from) - 1;
  len_ = 1;
  data_[0] = ' ';
  fill(0);
  ev_at_ = 1;
  ev_first_ = first;
  events_ = element;
}
uint64_t Reader::run_stretch(uint64_t limit) {
  limit_ = limit;
  stopped_at_ = 0;
  closed_at_ = 0;
  continue_events();
  return closed_at_ ? 0 : stopped_at_;
}

void Reader::run_tail(bool bare_array) {
  bare_array_ = bare_array;
  base_ = 0;
  len_ = 0;
  fill(0);
  read_tail(0);
}

}  // namespace pil::trace::detail
