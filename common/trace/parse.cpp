#include "trace/parse.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>

namespace od = simdjson::ondemand;

namespace pil::trace {

// --- Numbers ---------------------------------------------------------------------------------

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/// The common case, fast: [-]digits[.digits] with at most 15 integer digits. False to let the
/// general path decide (exponents, long numbers, anything unusual).
inline bool plain_microseconds(std::string_view t, int64_t& ns) {
  size_t i = 0;
  const bool negative = !t.empty() && t[0] == '-';
  if (negative) ++i;
  uint64_t whole = 0;
  const size_t int_start = i;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') whole = whole * 10 + uint64_t(t[i++] - '0');
  if (i == int_start || i - int_start > 15) return false;
  uint64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    const size_t frac_start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (frac_digits < 3) {
        frac = frac * 10 + uint64_t(t[i] - '0');
        ++frac_digits;
      } else if (i == frac_start + 3) {
        round_up = t[i] >= '5';
      }
      ++i;
    }
    if (i == frac_start) return false;
  }
  while (i < t.size() && is_space(t[i])) ++i;
  if (i != t.size()) return false;
  for (; frac_digits < 3; ++frac_digits) frac *= 10;
  const uint64_t v = whole * 1000 + frac + (round_up ? 1 : 0);
  ns = negative ? -int64_t(v) : int64_t(v);
  return true;
}

}  // namespace

bool microseconds_text_to_ns(std::string_view t, int64_t& ns) {
  if (plain_microseconds(t, ns)) return true;
  while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
  size_t i = 0;
  const bool negative = i < t.size() && t[i] == '-';
  if (negative) ++i;
  // Collect the significant digits into an integer and a power of ten.
  using u128 = unsigned __int128;
  u128 digits = 0;
  int exponent = 0, count = 0;
  bool any = false, seen_dot = false;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (count < 36) {
        digits = digits * 10 + unsigned(c - '0');
        if (digits != 0) ++count;
        if (seen_dot) --exponent;
      } else if (!seen_dot) {
        ++exponent;  // beyond the precision kept: scale only
      }
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!any) return false;
  if (i < t.size()) {
    if (t[i] != 'e' && t[i] != 'E') return false;
    ++i;
    bool exp_negative = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) exp_negative = t[i++] == '-';
    if (i >= t.size()) return false;
    int e = 0;
    for (; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      if (e < 10000) e = e * 10 + (t[i] - '0');
    }
    exponent += exp_negative ? -e : e;
  }
  exponent += 3;  // microseconds -> nanoseconds
  // Scale to an integer, rounding half away from zero.
  constexpr u128 kLimit = static_cast<u128>(std::numeric_limits<int64_t>::max());
  if (digits == 0) {
    ns = 0;
    return true;
  }
  if (exponent >= 0) {
    for (int k = 0; k < exponent; ++k) {
      digits *= 10;
      if (digits > kLimit) return false;
    }
  } else {
    u128 divisor = 1;
    for (int k = 0; k < -exponent; ++k) {
      divisor *= 10;
      if (divisor > digits * 10) {
        digits = 0;
        divisor = 1;
        break;
      }
    }
    digits = (digits + divisor / 2) / divisor;
  }
  if (digits > kLimit) return false;
  ns = negative ? -int64_t(digits) : int64_t(digits);
  return true;
}

namespace {

// --- Byte sources: a plain file, a gzip file, or memory --------------------------------------

class Source {
 public:
  virtual ~Source() = default;
  /// Reads up to n bytes; 0 at the end. Throws ParseError on a read error.
  virtual size_t read(char* dst, size_t n) = 0;
};

class FileSource : public Source {
 public:
  FileSource(int fd, std::string label) : fd_(fd), label_(std::move(label)) {}
  ~FileSource() override { ::close(fd_); }
  size_t read(char* dst, size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return size_t(got);
      if (errno != EINTR) throw ParseError(label_ + ": read failed: " + std::strerror(errno));
    }
  }

 private:
  int fd_;
  std::string label_;
};

class GzipSource : public Source {
 public:
  GzipSource(gzFile f, std::string label) : f_(f), label_(std::move(label)) {}
  ~GzipSource() override { gzclose(f_); }
  size_t read(char* dst, size_t n) override {
    const unsigned want = unsigned(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f_, dst, want);
    if (got < 0) {
      int err = 0;
      throw ParseError(label_ + ": not a readable gzip file: " + gzerror(f_, &err));
    }
    return size_t(got);
  }

 private:
  gzFile f_;
  std::string label_;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view s) : s_(s) {}
  size_t read(char* dst, size_t n) override {
    n = std::min(n, s_.size());
    std::memcpy(dst, s_.data(), n);
    s_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view s_;
};

std::unique_ptr<Source> open_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ParseError(path + ": cannot open: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ParseError(path + ": is a folder, not a trace file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ParseError(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const ssize_t got = ::pread(fd, magic, 2, 0);
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gzFile f = gzdopen(fd, "rb");
    if (!f) {
      ::close(fd);
      throw ParseError(path + ": cannot open as gzip");
    }
    gzbuffer(f, 1u << 20);
    return std::make_unique<GzipSource>(f, path);
  }
  return std::make_unique<FileSource>(fd, path);
}

/// A raw (still escaped) key from simdjson equals `lit`: the text matches and the closing quote
/// follows. Quicker than a general comparison, for the few keys a trace event has.
template <size_t N>
inline bool is_key(const char* raw, const char (&lit)[N]) {
  return std::memcmp(raw, lit, N - 1) == 0 && raw[N - 1] == '"';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Kineto's category names (any case), and the older or shorter names other writers use. A
/// memory event is told by its name and phase, not its category (an instant of cpu_instant_event).
Category category_from(std::string_view cat) {
  const std::string c = lower(cat);
  for (const auto& n : kCategoryNames)
    if (n.category != Category::Memory && c == n.kineto) return n.category;
  if (c == "operator") return Category::CpuOp;
  if (c == "runtime") return Category::Runtime;
  if (c == "driver") return Category::Driver;
  if (c == "memcpy") return Category::Memcpy;
  if (c == "memset") return Category::Memset;
  return Category::Other;
}

/// Thrown inside the event loop for an event that is complete but wrong; becomes a ParseError
/// naming the event.
struct BadEvent {
  std::string what;
};

// --- The chunked reader ----------------------------------------------------------------------

class Reader {
 public:
  Reader(std::unique_ptr<Source> source, std::string label, const ParseOptions& options,
         Trace* out)
      : source_(std::move(source)), label_(std::move(label)), out_(out) {
    cap_ = std::max<size_t>(options.chunk_bytes, 4096);
    buf_ = std::make_unique<char[]>(cap_ + simdjson::SIMDJSON_PADDING);
  }

  size_t run() {
    fill(0);
    size_t i = 0;
    if (len_ >= 3 && std::memcmp(buf_.get(), "\xEF\xBB\xBF", 3) == 0) i = 3;  // UTF-8 BOM
    while (i < len_ && is_space(buf_[i])) ++i;
    if (i == len_) throw ParseError(label_ + ": empty file, expected a Chrome trace (JSON)");
    size_t events_at = 0;
    if (buf_[i] == '[') {
      events_at = i;
      bare_array_ = true;
    } else if (buf_[i] == '{') {
      events_at = read_head(i);
    } else {
      throw ParseError(label_ + ": not JSON: expected '{' or '[' at byte " +
                       std::to_string(offset(i)));
    }
    read_events(events_at);
    return events_;
  }

 private:
  // The buffer holds file bytes [base_, base_ + len_); buf_[0] is free for a '[' when a chunk
  // starts in the middle of the event array.

  size_t offset(size_t i) const { return size_t(base_) + i; }

  /// Keeps the bytes from `keep`, moves them to index 1, reads more.
  void fill(size_t keep) {
    if (keep > 0) {
      const size_t n = len_ - std::min(keep, len_);
      std::memmove(buf_.get() + 1, buf_.get() + keep, n);
      base_ += int64_t(keep) - 1;
      len_ = n + 1;
    }
    while (!eof_ && len_ < cap_) {
      const size_t got = source_->read(buf_.get() + len_, cap_ - len_);
      if (got == 0) eof_ = true;
      len_ += got;
    }
    std::memset(buf_.get() + len_, 0, simdjson::SIMDJSON_PADDING);
  }

  /// A larger buffer, for an event (or head) bigger than a chunk.
  void grow() {
    constexpr size_t kMax = size_t(3) << 30;  // simdjson's single-document limit is 4 GB
    if (cap_ >= kMax)
      throw ParseError(label_ + ": an event or the trace header is larger than 3 GB");
    const size_t cap = std::min(cap_ * 2, kMax);
    auto bigger = std::make_unique<char[]>(cap + simdjson::SIMDJSON_PADDING);
    std::memcpy(bigger.get(), buf_.get(), len_);
    buf_ = std::move(bigger);
    cap_ = cap;
    fill(0);
  }

  /// More bytes after `at` (which becomes 1): drop what is before it, or grow the buffer when
  /// nothing is (one event, or the head, larger than the buffer).
  void read_more(size_t& at) {
    if (at > 1) {
      fill(at);
      at = 1;
    } else {
      grow();
    }
  }

  /// End of the part of the buffer that may be parsed now: all of it at the end of the file,
  /// else just after its last line break (a line break is never inside a JSON string).
  size_t safe_end(size_t from) const {
    if (eof_) return len_;
    const void* nl = memrchr(buf_.get() + from, '\n', len_ - from);
    return nl ? size_t(static_cast<const char*>(nl) - buf_.get()) + 1 : from;
  }

  std::string where(size_t i) const { return " at byte " + std::to_string(offset(i)); }

  /// The object's fields before "traceEvents"; returns the index of the array's '['.
  size_t read_head(size_t start) {
    for (;;) {
      const size_t end = safe_end(start);
      if (end > start) {
        const Stopper stop(buf_.get() + end, '}');  // On Demand wants a root object to end so
        od::document doc;
        const simdjson::padded_string_view json(buf_.get() + start, end + 1 - start,
                                                cap_ + simdjson::SIMDJSON_PADDING - start);
        od::object top;
        simdjson::error_code err = parser_.iterate(json).get(doc);
        if (!err) err = doc.get_object().get(top);
        if (!err) {
          for (auto field : top) {
            od::raw_json_string key;
            if ((err = field.key().get(key))) break;
            od::value v;
            if ((err = field.value().get(v))) break;
            if (key == "traceEvents") {
              const char* at = nullptr;
              if ((err = v.current_location().get(at))) break;
              if (*at != '[')
                throw ParseError(label_ + ": \"traceEvents\" is not an array" +
                                 where(size_t(at - buf_.get())));
              return size_t(at - buf_.get());
            }
            if ((err = read_top_field(key, v))) break;
          }
        }
        if (eof_) {
          if (err)
            throw ParseError(label_ + ": not a valid trace: " + simdjson::error_message(err));
          throw ParseError(label_ + ": no \"traceEvents\" array in the top-level object");
        }
      } else if (eof_) {
        throw ParseError(label_ + ": truncated before \"traceEvents\"");
      }
      read_more(start);  // the head did not fit in the buffer
    }
  }

  /// Top-level fields other than traceEvents that the model keeps.
  simdjson::error_code read_top_field(od::raw_json_string key, od::value& v) {
    if (key == "baseTimeNanoseconds") {
      int64_t ns = 0;
      if (!v.get_int64().get(ns)) out_->base_time_ns = ns;  // already nanoseconds
      return simdjson::SUCCESS;
    }
    if (key == "deviceProperties") {
      od::array arr;
      if (v.get_array().get(arr)) return simdjson::SUCCESS;  // not the shape we know: ignore
      for (auto item : arr) {
        od::object dev;
        if (item.get_object().get(dev)) continue;
        std::string name;
        for (auto f : dev) {
          od::raw_json_string k;
          if (f.key().get(k)) continue;
          std::string_view s;
          if (k == "name" && !f.value().get_string().get(s)) name = std::string(s);
        }
        out_->device_names.push_back(name);
      }
      return simdjson::SUCCESS;
    }
    return simdjson::SUCCESS;
  }

  void read_events(size_t at) {
    bool first = true;  // buf_[at] is the array's own '['
    for (;;) {
      // Find where the unread part of the array starts: skip blanks and one ',' between events.
      size_t i = at;
      while (i < len_ && is_space(buf_[i])) ++i;
      if (!first && i < len_ && buf_[i] == ',') {
        ++i;
        while (i < len_ && is_space(buf_[i])) ++i;
      }
      if (i >= len_) {
        if (eof_) throw ParseError(label_ + ": truncated: the file ends inside the event array");
        fill(at);
        at = 1;
        continue;
      }
      if (!first && buf_[i] == ']') return read_tail(i + 1);
      // The chunk is parsed as an array of its own: a '[' goes just before its first event (over
      // a blank or the ',' there; i >= 1 as chunks start at index 1), put back after parsing so
      // a retry over the same bytes finds them as they were.
      const size_t begin = first ? i : i - 1;
      const size_t end = safe_end(i);
      if (end <= i) {  // not one whole line in the buffer
        if (eof_) throw ParseError(label_ + ": truncated: the file ends inside the event array");
        read_more(at);
        continue;
      }
      size_t next = 0;
      bool array_closed = false;
      size_t done = 0;
      if (first) {
        done = parse_chunk(begin, end, next, array_closed);
      } else {
        const Stopper open(buf_.get() + begin, '[');
        done = parse_chunk(begin, end, next, array_closed);
      }
      if (array_closed) return read_tail(next);
      if (done > 0) first = false;  // until an event is taken, buf_[at] is still the '['
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

  [[noreturn]] void throw_bad_structure(size_t i) {
    // Validate the rest fully to get simdjson's own words for what is wrong.
    simdjson::dom::parser dom;
    std::string rest(buf_.get() + i, len_ - i);
    if (!rest.empty() && rest.front() != '[') rest.insert(rest.begin(), '[');
    const auto result = dom.parse(simdjson::padded_string(rest));
    const std::string why = result.error() ? simdjson::error_message(result.error())
                                           : "malformed or truncated event";
    throw ParseError(label_ + ": event " + std::to_string(events_) + where(i) + ": " + why);
  }

  /// Puts `c` at buf_[i] until the guard goes, then restores the byte that was there.
  struct Stopper {
    char* at;
    char saved;
    Stopper(char* p, char c) : at(p), saved(*p) { *p = c; }
    ~Stopper() { *at = saved; }
  };

  /// Parses the events in buf_[begin, end) (buf_[begin] == '['). Returns how many it took;
  /// `next` is where the first event it did not take begins (or what follows the array).
  ///
  /// On Demand wants a root array to end with ']', so one is put just past the parsable part.
  /// An event that runs into that stand-in bracket is left for the next chunk, which holds more.
  /// Events are read in one pass; an event that fails is read again "carefully" at the start of
  /// the next chunk (its extent checked first), so a real error is told from a chunk's cut.
  size_t parse_chunk(size_t begin, size_t end, size_t& next, bool& array_closed) {
    const Stopper stop(buf_.get() + end, ']');
    const simdjson::padded_string_view json(buf_.get() + begin, end + 1 - begin,
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
      const size_t at = size_t(start - buf_.get());
      if (at >= end) break;  // the stand-in bracket itself
      od::object obj;
      if (v.get_object().get(obj)) {
        if (*start != '{')
          throw ParseError(label_ + ": event " + std::to_string(events_) + where(at) +
                           ": not an object");
        break;
      }
      size_t after = 0;
      if (careful_ || (walk_only_ && !walk_fields_)) {
        // Check the event's extent before reading it: an unbalanced one needs more data.
        std::string_view raw;
        if (obj.raw_json().get(raw)) break;
        after = size_t(raw.data() + raw.size() - buf_.get());  // the next ',' or ']'
        if (after >= end) break;
        if (walk_fields_) {
          if (obj.reset().error()) break;
          if (walk_value_fields(obj)) break;
        } else if (!walk_only_) {
          if (obj.reset().error()) break;
          try {
            read_event(obj);
          } catch (const BadEvent& bad) {
            throw ParseError(label_ + ": event " + std::to_string(events_) + where(at) + ": " +
                             bad.what);
          }
        }
        careful_ = false;
      } else {
        const size_t n_events = out_->events.size(), n_kernels = out_->kernels.size(),
                     n_memory = out_->memory.size();
        const FlowCounts n_flows = out_->flows;
        auto undo = [&] {  // everything read_event may have added
          out_->events.resize(n_events);
          out_->kernels.resize(n_kernels);
          out_->memory.resize(n_memory);
          out_->flows = n_flows;
        };
        try {
          if (walk_fields_) {
            if (walk_value_fields(obj)) throw BadEvent{"malformed event"};
          } else {
            read_event(obj);
          }
        } catch (const BadEvent& bad) {
          undo();
          if (eof_)  // nothing was cut off: the event itself is wrong
            throw ParseError(label_ + ": event " + std::to_string(events_) + where(at) + ": " +
                             bad.what);
          careful_ = true;  // maybe cut short by the chunk's end: read it again, carefully
          break;
        }
        const char* p = nullptr;
        if (doc.current_location().get(p) || size_t(p - buf_.get()) >= end) {
          undo();  // reached the stand-in bracket: the event may continue in the next chunk
          break;
        }
        after = size_t(p - buf_.get());
      }
      ++events_;
      ++taken;
      next = after;
      if (buf_[after] == ']') {
        array_closed = true;
        next = after + 1;
        return taken;
      }
    }
    return taken;
  }

  /// Visits every field of an object, recursively, touching each value's text (walk --fields).
  /// Returns true on a simdjson error.
  bool walk_value_fields(od::object& obj) {
    for (auto field : obj) {
      od::raw_json_string key;
      od::value v;
      if (field.key().get(key) || field.value().get(v)) return true;
      if (walk_value(v)) return true;
    }
    return false;
  }
  bool walk_value(od::value& v) {
    od::json_type type;
    if (v.type().get(type)) return true;
    if (type == od::json_type::object) {
      od::object o;
      return v.get_object().get(o) || walk_value_fields(o);
    }
    if (type == od::json_type::array) {
      od::array a;
      if (v.get_array().get(a)) return true;
      for (auto item : a) {
        od::value x;
        if (item.get(x) || walk_value(x)) return true;
      }
      return false;
    }
    (void)v.raw_json_token();  // moves the iterator over the scalar
    return false;
  }

  /// What follows the event array: ']' was consumed; the object's other fields may follow.
  void read_tail(size_t at) {
    std::string tail(buf_.get() + at, len_ - std::min(at, len_));
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
    if (err)
      throw ParseError(label_ + ": after the event array: " + simdjson::error_message(err));
  }

  int64_t lane_id(od::value& v) {
    switch (v.type().value_unsafe()) {
      case od::json_type::number: {
        int64_t id = 0;
        if (microseconds_text_to_ns(v.raw_json_token(), id)) return id / 1000;
        throw BadEvent{"pid/tid is not a whole number"};
      }
      case od::json_type::string: {
        std::string_view s;
        if (v.get_string().get(s)) throw BadEvent{"bad pid/tid string"};
        // Named lanes ("Spans", "PyTorch Profiler") get negative ids of their own.
        const std::string_view name = out_->intern(s);
        auto [it, fresh] = named_lanes_.emplace(name, -int64_t(named_lanes_.size()) - 1);
        return it->second;
      }
      default:
        return 0;
    }
  }

  /// An argument the reports need (ids, device, stream, launch shape): a number, else the event
  /// is refused.
  static int64_t whole(od::value& v, const char* what) {
    int64_t n = 0;
    if (!optional_whole(v, n)) throw BadEvent{std::string("'") + what + "' is not a number"};
    return n;
  }

  /// An argument that only adds detail (memory sizes, occupancy): read when it is a number,
  /// ignored when it is not, so one odd value never makes a trace unreadable.
  static bool optional_whole(od::value& v, int64_t& out) {
    int64_t n = 0;
    if (!v.get_int64().get(n)) {
      out = n;
      return true;
    }
    int64_t ns = 0;
    if (!microseconds_text_to_ns(v.raw_json_token(), ns)) return false;
    out = ns / 1000;
    return true;
  }
  static bool optional_real(od::value& v, double& out) {
    double d = 0;
    if (v.get_double().get(d)) return false;
    out = d;
    return true;
  }

  /// A string value as it stands in the buffer when it has no escapes (no copy), else unescaped.
  static bool string_of(od::value& v, std::string_view& out) {
    std::string_view tok = v.raw_json_token();
    while (!tok.empty() && is_space(tok.back())) tok.remove_suffix(1);
    if (tok.size() >= 2 && tok.front() == '"' && tok.back() == '"' &&
        tok.find('\\') == std::string_view::npos) {
      out = tok.substr(1, tok.size() - 2);
      return true;
    }
    return !v.get_string().get(out);
  }

  static void triple(od::value& v, int32_t out[3]) {
    od::array a;
    if (v.get_array().get(a)) return;
    int k = 0;
    for (auto x : a) {
      int64_t n = 0;
      if (k < 3 && !x.get_int64().get(n)) out[k] = int32_t(n);
      ++k;
    }
  }

  void read_event(od::object& obj) {
    std::string_view ph, cat, name, ts_text, dur_text;
    int64_t pid = 0, tid = 0;
    uint64_t external = 0, correlation = 0;
    int64_t device = -1, stream = -1;
    KernelInfo kinfo;
    MemoryInfo minfo;
    bool has_kinfo = false, has_ts = false, has_dur = false, has_minfo = false;
    std::string_view meta_name;
    Category category = Category::Other;
    for (auto field : obj) {
      od::raw_json_string key;
      od::value v;
      if (field.key().get(key) || field.value().get(v)) throw BadEvent{"malformed field"};
      const char* kr = key.raw();
      if (is_key(kr, "ph")) {
        if (!string_of(v, ph)) throw BadEvent{"'ph' is not a string"};
      } else if (is_key(kr, "name")) {
        if (!string_of(v, name)) throw BadEvent{"'name' is not a string"};
        name = out_->intern(name);
      } else if (is_key(kr, "cat")) {
        if (!string_of(v, cat)) throw BadEvent{"'cat' is not a string"};
        cat = out_->intern(cat);
        auto [it, fresh] = categories_.emplace(cat.data(), Category::Other);
        if (fresh) it->second = category_from(cat);
        category = it->second;
      } else if (is_key(kr, "ts")) {
        ts_text = v.raw_json_token();
        has_ts = true;
        if (!ts_text.empty() && ts_text.front() == '"') {
          if (v.get_string().get(ts_text)) throw BadEvent{"bad 'ts'"};
        }
        int64_t ns = 0;
        if (!microseconds_text_to_ns(ts_text, ns))
          throw BadEvent{"'ts' " + std::string(ts_text) + " is not a number or is too large"};
        ts_ns_ = ns;
      } else if (is_key(kr, "dur")) {
        dur_text = v.raw_json_token();
        has_dur = true;
        int64_t ns = 0;
        if (!microseconds_text_to_ns(dur_text, ns))
          throw BadEvent{"'dur' " + std::string(dur_text) + " is not a number or is too large"};
        if (ns < 0) throw BadEvent{"negative duration " + std::string(dur_text)};
        dur_ns_ = ns;
      } else if (is_key(kr, "pid")) {
        pid = lane_id(v);
      } else if (is_key(kr, "tid")) {
        tid = lane_id(v);
      } else if (is_key(kr, "args")) {
        od::object args;
        if (v.get_object().get(args)) continue;
        for (auto a : args) {
          od::raw_json_string k;
          od::value av;
          if (a.key().get(k) || a.value().get(av)) throw BadEvent{"malformed args"};
          const char* ak = k.raw();
          if (is_key(ak, "External id")) {
            external = uint64_t(whole(av, "External id"));
            // An operator or range needs nothing else from its args (input shapes and the
            // like): leave the rest for simdjson to skip, which is much quicker than reading.
            if (is_torch_scope(category)) break;
          } else if (is_key(ak, "correlation")) {
            correlation = uint64_t(whole(av, "correlation"));
            if (is_launch_call(category) && external) break;
          } else if (is_key(ak, "device")) {
            device = whole(av, "device");
          } else if (is_key(ak, "stream")) {
            stream = whole(av, "stream");
          } else if (is_key(ak, "grid")) {
            triple(av, kinfo.grid);
            has_kinfo = true;
          } else if (is_key(ak, "block")) {
            triple(av, kinfo.block);
            has_kinfo = true;
          } else if (is_key(ak, "registers per thread")) {
            kinfo.registers = int32_t(whole(av, "registers per thread"));
            has_kinfo = true;
          } else if (is_key(ak, "shared memory")) {
            kinfo.shared_memory = whole(av, "shared memory");
            has_kinfo = true;
          } else if (is_key(ak, "est. achieved occupancy %")) {
            if (optional_real(av, kinfo.est_occupancy_pct)) has_kinfo = true;
          } else if (is_key(ak, "blocks per SM")) {
            if (optional_real(av, kinfo.blocks_per_sm)) has_kinfo = true;
          } else if (is_key(ak, "name")) {
            std::string_view s;
            if (!av.get_string().get(s)) meta_name = out_->intern(s);
          } else if (is_key(ak, "Bytes")) {
            has_minfo = optional_whole(av, minfo.bytes);
          } else if (is_key(ak, "Total Allocated")) {
            if (!optional_whole(av, minfo.total_allocated)) minfo.total_allocated = -1;
          } else if (is_key(ak, "Device Type")) {
            int64_t type = 0;
            if (optional_whole(av, type)) minfo.cuda = type == 1;
          } else if (is_key(ak, "Device Id")) {
            int64_t device = -1;
            if (optional_whole(av, device)) minfo.device = int32_t(device);
          }
        }
      }
    }
    if (ph == "X") {
      if (!has_ts) throw BadEvent{"complete event without 'ts'"};
      Event e;
      e.name = name;
      e.category = category;
      e.start_ns = ts_ns_;
      e.dur_ns = has_dur ? dur_ns_ : 0;
      e.pid = pid;
      e.tid = tid;
      e.external_id = external;
      e.correlation = correlation;
      if (e.on_device()) {
        if (device >= 0) e.pid = device;
        if (stream >= 0) e.tid = stream;
      }
      if (has_kinfo && e.category == Category::Kernel) {
        e.kernel_info = uint32_t(out_->kernels.size());
        out_->kernels.push_back(kinfo);
      }
      out_->events.push_back(e);
    } else if (ph == "i" && has_minfo && name == "[memory]") {
      if (!has_ts) throw BadEvent{"memory event without 'ts'"};
      Event e;
      e.name = name;
      e.category = Category::Memory;
      e.start_ns = ts_ns_;
      e.pid = pid;
      e.tid = tid;
      e.memory_info = uint32_t(out_->memory.size());
      out_->memory.push_back(minfo);
      out_->events.push_back(e);
    } else if (ph == "s" || ph == "f" || ph == "t") {
      if (!has_ts) throw BadEvent{"flow event without 'ts'"};
      (ph == "s" ? out_->flows.starts : out_->flows.finishes) += 1;
    } else if (ph == "M") {
      if (name == "thread_name") out_->lane_names[{pid, tid}] = std::string(meta_name);
      if (name == "process_name") out_->lane_names[{pid, -1}] = std::string(meta_name);
    }
    // Other phases (other instant events, counters "C", ...) carry nothing the reports use.
  }

 public:
  bool walk_only_ = false;
  bool walk_fields_ = false;  // with walk_only_: visit every field too

 private:
  std::unique_ptr<Source> source_;
  std::string label_;
  Trace* out_;
  od::parser parser_;
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0, len_ = 0;
  int64_t base_ = 0;  // file offset of buf_[0]
  bool eof_ = false, bare_array_ = false;
  bool careful_ = false;  // read the next event with its extent checked first
  size_t events_ = 0;
  int64_t ts_ns_ = 0, dur_ns_ = 0;
  std::unordered_map<std::string_view, int64_t> named_lanes_;
  std::unordered_map<const char*, Category> categories_;  // by interned "cat" text
};

}  // namespace

Trace parse_trace_file(const std::string& path, const ParseOptions& options) {
  Trace t;
  // Room for every event up front (about 200 bytes of JSON each in Kineto's output): the vector
  // never reallocates, and untouched capacity costs address space, not memory.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
  {
    t.events.reserve(std::min<size_t>(size_t(st.st_size) / 100, size_t(1) << 31));
    t.kernels.reserve(std::min<size_t>(size_t(st.st_size) / 300, size_t(1) << 31));
  }
  Reader r(open_file(path), path, options, &t);
  r.run();
  return t;
}

Trace parse_trace_text(std::string_view json, const std::string& label, const ParseOptions& options) {
  Trace t;
  Reader r(std::make_unique<MemorySource>(json), label, options, &t);
  r.run();
  return t;
}

size_t walk_trace_file(const std::string& path, const ParseOptions& options, bool every_field) {
  Trace t;
  Reader r(open_file(path), path, options, &t);
  r.walk_only_ = true;
  r.walk_fields_ = every_field;
  return r.run();
}

}  // namespace pil::trace
