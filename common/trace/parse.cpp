#include "trace/parse.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
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

/// Follows JSON strings byte by byte, from a place outside any string: outside(c) is true for a
/// byte outside every string (a string's quotes count as inside).
struct StringTracker {
  bool in_string = false, escaped = false;
  bool outside(char c) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      return false;
    }
    if (c == '"') in_string = true;
    return !in_string;
  }
};

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

/// Thrown inside the event loop for an event that is complete but wrong; becomes a ParseError
/// naming the event.
struct BadEvent {
  std::string what;
};

// --- What one stretch of a parallel read adds ---------------------------------------------------

/// Names seen in one stretch, in the order first seen, each with a small id stored just before
/// its text (the merge finds an event's name by it in constant time).
class LocalNames {
 public:
  std::string_view intern(std::string_view s) {
    if (s.empty()) return {};
    std::string_view& slot = recent_[NamePool::recent_slot(s)];
    if (slot.size() == s.size() && std::memcmp(slot.data(), s.data(), s.size()) == 0) return slot;
    if (auto it = ids_.find(s); it != ids_.end()) return slot = order_[it->second];
    const size_t need = s.size() + sizeof(uint32_t);
    if (block_ == blocks_.size() || used_ + need > blocks_[block_].size) {
      if (block_ < blocks_.size()) ++block_;
      used_ = 0;
      if (block_ == blocks_.size() || blocks_[block_].size < need) {
        const size_t size = std::max<size_t>(size_t(64) << 10, need);
        blocks_.insert(blocks_.begin() + ptrdiff_t(block_), Block{std::unique_ptr<char[]>(new char[size]), size});
      }
    }
    char* dst = blocks_[block_].data.get() + used_;
    const uint32_t id = uint32_t(order_.size());
    std::memcpy(dst, &id, sizeof id);
    std::memcpy(dst + sizeof id, s.data(), s.size());
    used_ += need;
    const std::string_view kept(dst + sizeof id, s.size());
    order_.push_back(kept);
    ids_.emplace(kept, id);
    return slot = kept;
  }
  /// The id of a name this pool handed out (not the empty name).
  static uint32_t id_of(std::string_view kept) {
    uint32_t id = 0;
    std::memcpy(&id, kept.data() - sizeof id, sizeof id);
    return id;
  }
  const std::vector<std::string_view>& in_order() const { return order_; }
  void clear() {
    ids_.clear();
    order_.clear();
    for (auto& r : recent_) r = {};
    block_ = 0;
    used_ = 0;
  }

 private:
  struct Block {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  std::vector<Block> blocks_;  // kept for the next stretch
  size_t block_ = 0, used_ = 0;
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::vector<std::string_view> order_;
  std::string_view recent_[1024];
};

/// A thread or process name from a metadata event, applied at the merge (in file order).
struct LaneMeta {
  int64_t pid = 0, tid = 0;
  uint8_t named = 0;  // bit 0: pid is a named lane of the stretch, bit 1: tid
  std::string_view name;
};

/// What one stretch of the event array adds to the trace: its events, with names and named
/// lanes numbered on its own, and how it ended.
struct Part {
  Trace t;  // events, kernels, memory, flows (names are in `names`)
  LocalNames names;
  std::vector<std::string_view> lanes;  // named lanes, in order first seen: ids -1, -2, ...
  std::vector<std::pair<uint32_t, uint8_t>> lane_fixes;  // event, which of pid/tid is named
  std::vector<LaneMeta> metas;
  size_t elements = 0;  // array elements taken (events of every phase)
  // How a chunk read in place ended:
  bool whole = false;    // read up to its stand-in ']': the next chunk starts where it was cut
  bool closed = false;   // met the array's own ']'; what follows starts at closed_at
  uint64_t closed_at = 0;
  uint64_t resume = 0;   // else: where the sequential read takes over (after the last event)
  bool resume_first = false;  // ... at the array's '[' itself

  void clear() {
    t.events.clear();
    t.kernels.clear();
    t.memory.clear();
    t.flows = {};
    names.clear();
    lanes.clear();
    lane_fixes.clear();
    metas.clear();
    elements = 0;
    whole = closed = resume_first = false;
    closed_at = resume = 0;
  }
};

// --- The chunked reader ----------------------------------------------------------------------

class Reader {
 public:
  Reader(std::unique_ptr<Source> source, std::string label, const ParseOptions& options,
         Trace* out)
      : source_(std::move(source)), label_(std::move(label)), out_(out) {
    cap_ = std::max<size_t>(options.chunk_bytes, 4096);
    buf_ = std::make_unique<char[]>(cap_ + simdjson::SIMDJSON_PADDING);
    data_ = buf_.get();
  }

  size_t run() {
    fill(0);
    size_t i = 0;
    if (len_ >= 3 && std::memcmp(data_, "\xEF\xBB\xBF", 3) == 0) i = 3;  // UTF-8 BOM
    while (i < len_ && is_space(data_[i])) ++i;
    if (i == len_) throw ParseError(label_ + ": empty file, expected a Chrome trace (JSON)");
    size_t events_at = 0;
    if (data_[i] == '[') {
      events_at = i;
      bare_array_ = true;
    } else if (data_[i] == '{') {
      events_at = read_head(i);
    } else {
      throw ParseError(label_ + ": not JSON: expected '{' or '[' at byte " +
                       std::to_string(offset(i)));
    }
    read_events(events_at);
    return events_;
  }

 private:
  // The buffer holds file bytes [base_, base_ + len_); data_[0] is free for a '[' when a chunk
  // starts in the middle of the event array.

  size_t offset(size_t i) const { return size_t(base_) + i; }

  /// Keeps the bytes from `keep`, moves them to index 1, reads more.
  void fill(size_t keep) {
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
  void grow() {
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
    const void* nl = memrchr(data_ + from, '\n', len_ - from);
    return nl ? size_t(static_cast<const char*>(nl) - data_) + 1 : from;
  }

  std::string where(size_t i) const { return " at byte " + std::to_string(offset(i)); }

  /// The object's fields before "traceEvents"; returns the index of the array's '['.
  size_t read_head(size_t start) {
    bool short_head = false;
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
        if (eof_) {
          if (err)
            throw ParseError(label_ + ": not a valid trace: " + simdjson::error_message(err));
          throw ParseError(label_ + ": no \"traceEvents\" array in the top-level object");
        }
      } else if (eof_) {
        throw ParseError(label_ + ": truncated before \"traceEvents\"");
      }
      short_head = false;
      read_more(start);  // the head did not fit in the buffer
    }
  }

  /// Just past the '[' of the first `"traceEvents": [` in data_[start, end), or `end`.
  size_t head_end_guess(size_t start, size_t end) const {
    static constexpr std::string_view key = "\"traceEvents\"";
    const std::string_view w(data_ + start, end - start);
    const size_t k = w.find(key);
    if (k == std::string_view::npos) return end;
    size_t i = k + key.size();
    while (i < w.size() && (is_space(w[i]) || w[i] == ':')) ++i;
    return i < w.size() && w[i] == '[' ? start + i + 1 : end;
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
    ev_at_ = at;
    ev_first_ = true;  // data_[at] is the array's own '['
    continue_events();
  }

  /// The event loop, from (ev_at_, ev_first_). Returns at the array's end (after reading the
  /// tail, or, for a stretch of a parallel read, noting where the array closed), or at the first
  /// event that starts at or past limit_ (its file offset in stopped_at_).
  void continue_events() {
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
        if (eof_) throw ParseError(label_ + ": truncated: the file ends inside the event array");
        fill(at);
        at = 1;
        continue;
      }
      if (!first && data_[i] == ']') return close_array(i + 1);
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
  void close_array(size_t after) {
    if (stretch_) {
      closed_at_ = uint64_t(offset(after));
      return;
    }
    read_tail(after);
  }

  [[noreturn]] void throw_bad_structure(size_t i) {
    simdjson::dom::parser dom;
    // Blame the first event that does not parse on its own (its extent found by counting
    // brackets outside strings), so the answer does not depend on where a window began.
    for (size_t at = i, index = events_; at < len_;) {
      const size_t end = extent_end(at);
      const std::string one(data_ + at, end - at);
      const auto r = dom.parse(simdjson::padded_string(one));
      if (r.error())
        throw ParseError(label_ + ": event " + std::to_string(index) + where(at) + ": " +
                         simdjson::error_message(r.error()));
      at = end;
      while (at < len_ && is_space(data_[at])) ++at;
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
    throw ParseError(label_ + ": event " + std::to_string(events_) + where(i) + ": " + why);
  }

  /// Puts `c` at data_[i] until the guard goes, then restores the byte that was there.
  struct Stopper {
    char* at;
    char saved;
    Stopper(char* p, char c) : at(p), saved(*p) { *p = c; }
    ~Stopper() { *at = saved; }
  };

  /// Parses the events in data_[begin, end) (data_[begin] == '['). Returns how many it took;
  /// `next` is where the first event it did not take begins (or what follows the array).
  ///
  /// On Demand wants a root array to end with ']', so one is put just past the parsable part.
  /// An event that runs into that stand-in bracket is left for the next chunk, which holds more.
  /// Events are read in one pass; an event that fails is read again "carefully" at the start of
  /// the next chunk (its extent checked first), so a real error is told from a chunk's cut.
  size_t parse_chunk(size_t begin, size_t end, size_t& next, bool& array_closed) {
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
          throw ParseError(label_ + ": event " + std::to_string(events_) + where(at) +
                           ": not an object");
        break;
      }
      size_t after = 0;
      if (careful_ || (walk_only_ && !walk_fields_)) {
        // Check the event's extent before reading it: an unbalanced one needs more data.
        std::string_view raw;
        if (obj.raw_json().get(raw)) break;
        after = size_t(raw.data() + raw.size() - data_);  // the next ',' or ']'
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
        const size_t n_fixes = part_ ? part_->lane_fixes.size() : 0,
                     n_metas = part_ ? part_->metas.size() : 0;
        auto undo = [&] {  // everything read_event may have added
          out_->events.resize(n_events);
          out_->kernels.resize(n_kernels);
          out_->memory.resize(n_memory);
          out_->flows = n_flows;
          if (part_) {
            part_->lane_fixes.resize(n_fixes);
            part_->metas.resize(n_metas);
          }
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

  /// Where the value starting at data_[at] ends, by its brackets counted outside strings (a
  /// scalar runs to the next ',' or ']'); len_ when it does not end in the buffer.
  size_t extent_end(size_t at) const {
    const size_t close = close_of(at, len_);
    if (close < len_) return close + 1;
    if (data_[at] == '{' || data_[at] == '[') return len_;
    size_t i = at;
    while (i < len_ && data_[i] != ',' && data_[i] != ']') ++i;
    return i;
  }

  /// True when the object starting at data_[at] ('{') closes before data_[end], with only
  /// blanks between: its own brackets, counted outside strings, say it is whole.
  bool closes_before(size_t at, size_t end) const {
    size_t i = close_of(at, end);
    if (i >= end) return false;
    for (++i; i < end; ++i)
      if (!is_space(data_[i])) return false;
    return true;
  }

  /// The index of the bracket that closes the one at data_[at], counting brackets outside
  /// strings; `end` when it is not before `end`.
  size_t close_of(size_t at, size_t end) const {
    int depth = 0;
    StringTracker strings;
    for (size_t i = at; i < end; ++i) {
      const char c = data_[i];
      if (!strings.outside(c)) continue;
      if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth <= 0) {
        return depth == 0 ? i : end;
      }
    }
    return end;
  }

  std::string_view intern(std::string_view s) {
    return part_ ? part_->names.intern(s) : out_->intern(s);
  }

  /// A pid or tid; `named` is set for a named lane (a string), whose id a stretch of a parallel
  /// read numbers on its own until the merge.
  int64_t lane_id(od::value& v, bool& named) {
    switch (v.type().value_unsafe()) {
      case od::json_type::number: {
        int64_t id = 0;
        if (!v.get_int64().get(id)) return id;
        if (microseconds_text_to_ns(v.raw_json_token(), id)) return id / 1000;
        throw BadEvent{"pid/tid is not a whole number"};
      }
      case od::json_type::string: {
        std::string_view s;
        if (v.get_string().get(s)) throw BadEvent{"bad pid/tid string"};
        // Named lanes ("Spans", "PyTorch Profiler") get negative ids of their own.
        const std::string_view name = intern(s);
        auto [it, fresh] = named_lanes_.emplace(name, -int64_t(named_lanes_.size()) - 1);
        if (fresh && part_) part_->lanes.push_back(name);
        named = true;
        return it->second;
      }
      default:
        return 0;
    }
  }

  /// A flow arrow's phase: start, finish, or step.
  static bool is_flow_phase(std::string_view ph) { return ph == "s" || ph == "f" || ph == "t"; }

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

  /// A launch shape ("grid": [x, y, z]): its numbers are kept, anything else in it is passed
  /// over, but an array that is not valid JSON refuses the event (reading on past it would
  /// read the events after it from the wrong place).
  static void triple(od::value& v, int32_t out[3], const char* what) {
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

  /// A stretch of a parallel read notes which events name their lanes, for the merge.
  void note_lanes(uint8_t lanes_named) {
    if (part_ && lanes_named) part_->lane_fixes.push_back({uint32_t(out_->events.size()), lanes_named});
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
    uint8_t lanes_named = 0;  // bit 0: pid is a named lane, bit 1: tid
    Category category = Category::Other;
    for (auto field : obj) {
      od::raw_json_string key;
      od::value v;
      if (field.key().get(key) || field.value().get(v)) throw BadEvent{"malformed field"};
      const char* kr = key.raw();
      if (is_key(kr, "ph")) {
        if (!string_of(v, ph)) throw BadEvent{"'ph' is not a string"};
      } else if (is_key(kr, "name")) {
        // Kept (interned) only by the events that are stored, below: a flow arrow is only counted.
        if (!string_of(v, name)) throw BadEvent{"'name' is not a string"};
      } else if (is_key(kr, "cat")) {
        if (!string_of(v, cat)) throw BadEvent{"'cat' is not a string"};
        category = categories_(cat);
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
        bool named = false;
        pid = lane_id(v, named);
        lanes_named = (lanes_named & ~1u) | (named ? 1u : 0u);
      } else if (is_key(kr, "tid")) {
        bool named = false;
        tid = lane_id(v, named);
        lanes_named = (lanes_named & ~2u) | (named ? 2u : 0u);
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
            triple(av, kinfo.grid, "grid");
            has_kinfo = true;
          } else if (is_key(ak, "block")) {
            triple(av, kinfo.block, "block");
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
            if (!av.get_string().get(s)) meta_name = intern(s);
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
      e.name = intern(name);
      e.category = category;
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
      if (has_kinfo && e.category == Category::Kernel) {
        e.kernel_info = uint32_t(out_->kernels.size());
        out_->kernels.push_back(kinfo);
      }
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
    // Other phases (other instant events, counters "C", ...) carry nothing the reports use.
  }

 public:
  /// The head only: returns the file offset of the event array's '['.
  uint64_t read_head_only() {
    fill(0);
    size_t i = 0;
    if (len_ >= 3 && std::memcmp(data_, "\xEF\xBB\xBF", 3) == 0) i = 3;  // UTF-8 BOM
    while (i < len_ && is_space(data_[i])) ++i;
    if (i == len_) throw ParseError(label_ + ": empty file, expected a Chrome trace (JSON)");
    if (data_[i] == '[') {
      bare_array_ = true;
      return uint64_t(offset(i));
    }
    if (data_[i] != '{')
      throw ParseError(label_ + ": not JSON: expected '{' or '[' at byte " +
                       std::to_string(offset(i)));
    return uint64_t(offset(read_head(i)));
  }
  bool bare_array() const { return bare_array_; }

  /// Reads into `part` from now on (its names and lanes numbered on their own).
  void use_part(Part* part) {
    part_ = part;
    out_ = &part->t;
    named_lanes_.clear();
    categories_.clear();
  }

  /// Reads chunk [open, close] of `data` in place (data[open] == '[', data[close] == ']', both
  /// written beforehand; `capacity` bytes readable from data). Never throws for bad input: an
  /// event it cannot read ends the chunk, and the sequential read takes over there.
  void read_chunk_in_place(char* data, size_t capacity, size_t open, size_t close,
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

  /// Starts the sequential read of a stretch at file offset `from` of the source (which begins
  /// there): at the array's '[' (first), or just after an event. Events are numbered from
  /// `element`.
  void start_stretch(uint64_t from, bool first, size_t element) {
    stretch_ = true;
    base_ = int64_t(from) - 1;
    len_ = 1;
    data_[0] = ' ';
    fill(0);
    ev_at_ = 1;
    ev_first_ = first;
    events_ = element;
  }
  /// Reads on until an event starts at or past `limit` (returns its offset) or the array ends
  /// (returns 0; closed_at() says where the tail starts).
  uint64_t run_stretch(uint64_t limit) {
    limit_ = limit;
    stopped_at_ = 0;
    closed_at_ = 0;
    continue_events();
    return closed_at_ ? 0 : stopped_at_;
  }
  uint64_t closed_at() const { return closed_at_; }
  size_t elements() const { return events_; }

  /// What follows the event array, from the source's first byte.
  void run_tail(bool bare_array) {
    bare_array_ = bare_array;
    base_ = 0;
    len_ = 0;
    fill(0);
    read_tail(0);
  }

  bool walk_only_ = false;
  bool walk_fields_ = false;  // with walk_only_: visit every field too

 private:
  std::unique_ptr<Source> source_;
  std::string label_;
  Trace* out_;
  od::parser parser_;
  // A stretch of a parallel read: a chunk read in place, or the sequential read between chunks.
  Part* part_ = nullptr;   // names and lanes go here, numbered on their own
  bool in_place_ = false;  // data_ is the whole trace, its stand-ins already written
  bool stretch_ = false;   // stop at the array's end (closed_at_), not reading the tail
  uint64_t limit_ = std::numeric_limits<uint64_t>::max();  // stop at an event starting here+
  uint64_t stopped_at_ = 0, closed_at_ = 0;
  size_t ev_at_ = 0;
  bool ev_first_ = true;
  std::unique_ptr<char[]> buf_;
  char* data_ = nullptr;  // buf_, or the bytes of a whole trace parsed in place (one chunk)
  size_t cap_ = 0, len_ = 0;
  int64_t base_ = 0;  // file offset of data_[0]
  bool eof_ = false, bare_array_ = false;
  bool careful_ = false;  // read the next event with its extent checked first
  size_t events_ = 0;
  int64_t ts_ns_ = 0, dur_ns_ = 0;
  std::unordered_map<std::string_view, int64_t> named_lanes_;
  Categories categories_;
};

// --- The parallel read ---------------------------------------------------------------------

/// The bytes of a trace in memory, read from `from` on, with the bytes the chunks' stand-ins
/// replaced put back (sorted by offset).
class PatchedSource : public Source {
 public:
  PatchedSource(const char* data, size_t size, size_t from,
                const std::vector<std::pair<size_t, char>>* patches)
      : data_(data), size_(size), pos_(from), patches_(patches) {}
  size_t read(char* dst, size_t n) override {
    n = std::min(n, size_ - pos_);
    std::memcpy(dst, data_ + pos_, n);
    if (patches_) {
      auto it = std::lower_bound(patches_->begin(), patches_->end(), std::make_pair(pos_, '\0'));
      for (; it != patches_->end() && it->first < pos_ + n; ++it) dst[it->first - pos_] = it->second;
    }
    pos_ += n;
    return n;
  }

 private:
  const char* data_;
  size_t size_, pos_;
  const std::vector<std::pair<size_t, char>>* patches_;
};

/// Where a trace may be cut between two events: the ',' after one, and the '{' of the next with
/// at least one blank before it (the blank takes the next chunk's '[', the ',' the ']').
struct Cut {
  size_t sep, start;
};

/// Cuts about `chunk` bytes apart. Each is looked for after a line break, which JSON never puts
/// in a string, so strings and their escapes are followed exactly from there; a ',' between
/// objects may still be inside an event's nested args: the merge checks every cut against where
/// the events before it really end.
std::vector<Cut> find_cuts(const char* data, size_t from, size_t size, size_t chunk) {
  constexpr size_t kScan = size_t(1) << 20;  // give up on a cut this far past a line break
  std::vector<Cut> cuts;
  size_t nominal = from + chunk;
  while (nominal < size) {
    const void* nl = std::memchr(data + nominal, '\n', size - nominal);
    if (!nl) break;
    size_t i = size_t(static_cast<const char*>(nl) - data) + 1;
    const size_t stop = std::min(size, i + kScan);
    StringTracker strings;
    bool found = false;
    for (; i < stop && !found; ++i) {
      const char c = data[i];
      if (strings.outside(c) && c == ',') {
        size_t k = i + 1;
        while (k < size && is_space(data[k])) ++k;
        if (k > i + 1 && k < size && data[k] == '{') {
          cuts.push_back({i, k});
          found = true;
        }
      }
    }
    nominal = (found ? cuts.back().start : i) + chunk;
  }
  return cuts;
}

/// Reads the event array of a trace held whole in writable memory on several threads: the
/// array is cut into chunks at likely event boundaries, each chunk is read in place as an array
/// of its own (its '[' and ']' written over the blank and the ',' of its cuts), and the chunks'
/// parts are merged in file order as they come, so the names, named lanes and events come out
/// exactly as one sequential read makes them. Where a chunk cannot be taken whole (a cut inside
/// an event's args, an event larger than a chunk, a bad event), the sequential reader reads on
/// from the last event taken up to the next chunk that starts where it stops; bad input is
/// reported by it, so messages are the sequential read's.
class ParallelRead {
 public:
  ParallelRead(char* data, size_t size, size_t capacity, std::string label,
               const ParseOptions& options, bool mapped)
      : data_(data), size_(size), capacity_(capacity), label_(std::move(label)),
        options_(options), mapped_(mapped) {}

  /// False, with nothing read, when the trace has no place to cut (read it sequentially).
  bool run(Trace& out, unsigned threads) {
    out_ = &out;
    {
      Reader head(std::make_unique<PatchedSource>(data_, size_, 0, nullptr), label_, options_, out_);
      array_open_ = head.read_head_only();
      bare_array_ = head.bare_array();
    }
    const size_t chunk = std::max<size_t>(options_.chunk_bytes, 16);
    cuts_ = find_cuts(data_, array_open_ + 1, size_, chunk);
    if (cuts_.empty()) return false;
    for (const Cut& c : cuts_) {
      patches_.push_back({c.sep, data_[c.sep]});
      patches_.push_back({c.start - 1, data_[c.start - 1]});
      data_[c.sep] = ']';
      data_[c.start - 1] = '[';
    }
    data_[size_] = ']';  // the last chunk's, in the padding
    chunks_ = cuts_.size() + 1;
    ready_.assign(chunks_, nullptr);
    max_parts_ = 2 * size_t(threads) + 2;
    std::vector<std::thread> pool;
    try {
      for (unsigned k = 1; k < threads; ++k) pool.emplace_back([this] { work(); });
    } catch (const std::system_error&) {  // fewer threads than asked: the others do the work
    }
    work();
    for (auto& t : pool) t.join();
    if (error_) std::rethrow_exception(error_);
    if (!closed_) throw ParseError(label_ + ": truncated: the file ends inside the event array");
    Reader tail(std::make_unique<PatchedSource>(data_, size_, closed_at_, &patches_), label_,
                options_, out_);
    tail.run_tail(bare_array_);
    return true;
  }

 private:
  size_t open_of(size_t j) const { return j == 0 ? array_open_ : cuts_[j - 1].start - 1; }
  size_t close_of(size_t j) const { return j + 1 < chunks_ ? cuts_[j].sep : size_; }

  void work() {
    ParseOptions small = options_;
    small.chunk_bytes = 4096;  // the reader's own buffer is not used in place
    Trace unused;
    Reader reader(nullptr, label_, small, &unused);
    const size_t max_in_place = 16 * std::max<size_t>(options_.chunk_bytes, 4096);
    for (;;) {
      // A part first, then a chunk: the first chunk not yet merged always has a part, so the
      // merge never waits on a thread that waits for a part.
      Part* part = acquire();
      if (!part) return;
      const size_t j = next_.fetch_add(1);
      if (j >= chunks_ || failed_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        free_.push_back(part);
        cv_.notify_all();
        return;
      }
      const size_t open = open_of(j), close = close_of(j);
      const size_t resume_if_none = j == 0 ? open : cuts_[j - 1].sep;
      if (close - open > max_in_place) {  // no cut for long: read it sequentially, in bounded memory
        part->clear();
        part->resume = resume_if_none;
        part->resume_first = j == 0;
      } else {
        reader.read_chunk_in_place(data_, capacity_, open, close, resume_if_none, j == 0, part);
        if (mapped_) release_pages(open, close);
      }
      deposit(j, part);
    }
  }

  /// The file's pages of a chunk read in place go back to the page cache: memory stays near
  /// the chunks in flight, not the file. Pages holding stand-ins are kept.
  void release_pages(size_t open, size_t close) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t from = (open / page + 1) * page, to = (close / page) * page;
    if (to > from) madvise(data_ + from, to - from, MADV_DONTNEED);
  }

  Part* acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || parts_.size() < max_parts_ || failed_.load(); });
    if (failed_.load()) return nullptr;
    if (!free_.empty()) {
      Part* p = free_.back();
      free_.pop_back();
      return p;
    }
    parts_.push_back(std::make_unique<Part>());
    return parts_.back().get();
  }

  /// Hands chunk j's part in; whoever finds the next chunk in file order ready merges it (one
  /// thread at a time), and every one after it that is ready too.
  void deposit(size_t j, Part* part) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_[j] = part;
      if (committing_) return;
      committing_ = true;
    }
    for (;;) {
      Part* p = nullptr;
      size_t k = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        k = next_commit_;
        if (k >= chunks_ || !ready_[k]) {
          committing_ = false;
          return;
        }
        p = ready_[k];
        ready_[k] = nullptr;
      }
      if (!failed_.load()) {
        try {
          commit(k, *p);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu_);
          error_ = std::current_exception();
          failed_.store(true);
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++next_commit_;
        free_.push_back(p);
      }
      cv_.notify_all();
    }
  }

  void commit(size_t j, Part& p) {
    if (closed_) return;  // past the event array
    if (!cursor_) {       // chunk j starts where the events before it end
      merge(p);
      if (p.closed) {
        closed_ = true;
        closed_at_ = p.closed_at;
        return;
      }
      if (p.whole) return;
      cursor_ = std::make_unique<Reader>(
          std::make_unique<PatchedSource>(data_, size_, p.resume, &patches_), label_, options_,
          &cursor_part_.t);
      cursor_->use_part(&cursor_part_);
      cursor_->start_stretch(p.resume, p.resume_first, elements_);
    }
    // The sequential read goes on from where the chunks stopped being whole, up to the next
    // chunk's first event (a chunk it passes is left out: its cut was not between events).
    const uint64_t limit = j + 1 < chunks_ ? cuts_[j].start : std::numeric_limits<uint64_t>::max();
    if (cursor_at_ > limit) return;
    if (cursor_at_ < limit) {
      cursor_part_.clear();
      cursor_->use_part(&cursor_part_);
      cursor_at_ = cursor_->run_stretch(limit);
      cursor_part_.elements = cursor_->elements() - elements_;
      merge(cursor_part_);
      if (cursor_at_ == 0) {
        closed_ = true;
        closed_at_ = cursor_->closed_at();
        cursor_.reset();
        return;
      }
    }
    if (cursor_at_ == limit) {  // in step with the chunks again
      cursor_.reset();
      cursor_at_ = 0;
    }
  }

  /// The trace's own copy of a name a part interned (after its names were merged).
  std::string_view global_name(std::string_view local) const {
    return local.empty() ? std::string_view() : global_[LocalNames::id_of(local)];
  }

  /// Appends a part to the trace: names interned in the order the part first saw them (so in
  /// file order overall), named lanes numbered likewise, kernel and memory indices shifted.
  void merge(Part& p) {
    const auto& names = p.names.in_order();
    global_.resize(names.size());
    for (size_t k = 0; k < names.size(); ++k) global_[k] = out_->intern(names[k]);
    lane_ids_.resize(p.lanes.size());
    for (size_t k = 0; k < p.lanes.size(); ++k) {
      const std::string_view name = global_name(p.lanes[k]);
      lane_ids_[k] = named_lanes_.emplace(name, -int64_t(named_lanes_.size()) - 1).first->second;
    }
    const uint32_t kbase = uint32_t(out_->kernels.size()), mbase = uint32_t(out_->memory.size());
    const size_t ebase = out_->events.size();
    out_->events.insert(out_->events.end(), p.t.events.begin(), p.t.events.end());
    for (size_t k = ebase; k < out_->events.size(); ++k) {
      Event& e = out_->events[k];
      e.name = global_name(e.name);
      if (e.kernel_info != kNoKernelInfo) e.kernel_info += kbase;
      if (e.memory_info != kNoKernelInfo) e.memory_info += mbase;
    }
    auto lane = [&](int64_t local) { return lane_ids_[size_t(-local - 1)]; };
    for (const auto& [k, named] : p.lane_fixes) {
      Event& e = out_->events[ebase + k];
      if (named & 1u) e.pid = lane(e.pid);
      if (named & 2u) e.tid = lane(e.tid);
    }
    for (const LaneMeta& m : p.metas)
      out_->lane_names[{(m.named & 1u) ? lane(m.pid) : m.pid, (m.named & 2u) ? lane(m.tid) : m.tid}] =
          std::string(global_name(m.name));
    out_->kernels.insert(out_->kernels.end(), p.t.kernels.begin(), p.t.kernels.end());
    out_->memory.insert(out_->memory.end(), p.t.memory.begin(), p.t.memory.end());
    out_->flows.starts += p.t.flows.starts;
    out_->flows.finishes += p.t.flows.finishes;
    elements_ += p.elements;
  }

  char* data_;
  size_t size_, capacity_;
  std::string label_;
  ParseOptions options_;
  bool mapped_;
  Trace* out_ = nullptr;
  uint64_t array_open_ = 0;
  bool bare_array_ = false;
  std::vector<Cut> cuts_;
  std::vector<std::pair<size_t, char>> patches_;
  size_t chunks_ = 0;
  // Work handed out, parts in flight.
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::vector<Part*> free_;
  size_t max_parts_ = 0;
  std::vector<Part*> ready_;
  size_t next_commit_ = 0;
  bool committing_ = false;
  std::exception_ptr error_;
  // The merge (one thread at a time, in file order).
  size_t elements_ = 0;
  std::vector<std::string_view> global_;
  std::vector<int64_t> lane_ids_;
  std::unordered_map<std::string_view, int64_t> named_lanes_;
  std::unique_ptr<Reader> cursor_;
  Part cursor_part_;
  uint64_t cursor_at_ = 0;
  bool closed_ = false;
  uint64_t closed_at_ = 0;
};

/// A plain file mapped privately (stand-ins written there stay in this process), with zeroed
/// room after it for simdjson's padding.
class Mapping {
 public:
  Mapping(int fd, size_t size) : size_(size) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    length_ = (size + 1 + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
    void* base = mmap(nullptr, length_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return;
    if (mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
      munmap(base, length_);
      return;
    }
    base_ = static_cast<char*>(base);
  }
  ~Mapping() {
    if (base_) munmap(base_, length_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* data() const { return base_; }
  size_t capacity() const { return length_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0, length_ = 0;
};

Trace new_trace(size_t file_bytes) {
  Trace t;
  // Room for every event up front (about 200 bytes of JSON each in Kineto's output): the vector
  // never reallocates, and untouched capacity costs address space, not memory.
  t.events.reserve(std::min<size_t>(file_bytes / 100, size_t(1) << 31));
  t.kernels.reserve(std::min<size_t>(file_bytes / 300, size_t(1) << 31));
  return t;
}

}  // namespace

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return unsigned(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

Trace parse_trace_file(const std::string& path, const ParseOptions& options) {
  struct stat st {};
  const bool plain = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (plain && options.threads > 1 && st.st_size > 0) {
    // A plain file is read in place from a private mapping: no copy through a buffer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      unsigned char magic[2] = {0, 0};
      const bool gzip = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
      std::unique_ptr<Mapping> map;
      if (!gzip) map = std::make_unique<Mapping>(fd, size_t(st.st_size));
      ::close(fd);
      if (map && map->data()) {
        Trace t = new_trace(size_t(st.st_size));
        ParallelRead read(map->data(), size_t(st.st_size), map->capacity(), path, options, true);
        if (read.run(t, options.threads)) return t;
      }
    }
  }
  Trace t = new_trace(plain ? size_t(st.st_size) : 0);
  Reader r(open_file(path), path, options, &t);
  r.run();
  return t;
}

Trace parse_trace_text(std::string_view json, const std::string& label, const ParseOptions& options) {
  if (options.threads > 1 && !json.empty()) {
    const size_t capacity = json.size() + 1 + simdjson::SIMDJSON_PADDING;
    std::unique_ptr<char[]> copy(new char[capacity]);
    std::memcpy(copy.get(), json.data(), json.size());
    std::memset(copy.get() + json.size(), 0, capacity - json.size());
    Trace t;
    ParallelRead read(copy.get(), json.size(), capacity, label, options, false);
    if (read.run(t, options.threads)) return t;
  }
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
