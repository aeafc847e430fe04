#include "trace/slice.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace/parse.h"
#include "trace/parse/sources.h"

namespace pil::trace {

namespace {

bool blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Where the JSON object starting at text[at] ('{') ends (one past its '}'), following strings
// and escapes; npos when it does not close.
size_t object_end(std::string_view text, size_t at) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// A flow arrow's end: its id (as written: a number or a string), category, name and phase.
struct FlowEnd {
  std::string id, cat, name;
  char ph = 0;
};

bool read_flow(std::string_view raw, FlowEnd& out) {
  const auto j = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  const auto id = j.find("id");
  if (id == j.end()) return false;
  out.id = id->is_string() ? id->get<std::string>() : id->dump();
  const auto cat = j.find("cat");
  out.cat = cat != j.end() && cat->is_string() ? cat->get<std::string>() : std::string();
  const auto name = j.find("name");
  out.name = name != j.end() && name->is_string() ? name->get<std::string>() : std::string();
  const auto ph = j.find("ph");
  out.ph = ph != j.end() && ph->is_string() && !ph->get<std::string>().empty()
               ? ph->get<std::string>().front()
               : 0;
  return true;
}

// A launch → GPU work arrow, whose id is the correlation: "ac2g", or torch 1.8-1.9's
// "cat": "async", "name": "launch".
bool is_launch_flow(const FlowEnd& f) { return f.cat == "ac2g" || (f.cat == "async" && f.name == "launch"); }

}  // namespace

std::string slice_text(const TraceIndex& index, std::string_view text, int64_t from, int64_t to,
                       SliceCounts* counts) {
  const Trace& t = index.trace();
  const auto& sources = t.sources;
  if (sources.empty()) throw ParseError("slice: the trace has no events to keep");
  auto in_span = [&](int64_t ts) { return ts >= from && ts < to; };

  // Events: CPU ones that start in the span; GPU work launched by a kept call (its tail), or
  // running in the span (with its launch call and that call's other work).
  std::vector<char> keep(t.events.size(), 0);
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!e.on_device() && in_span(e.start_ns)) keep[i] = 1;
  }
  auto keep_call = [&](size_t call) {
    keep[call] = 1;
    for (size_t w : index.work_of(call)) keep[w] = 1;
  };
  for (size_t c : index.launch_calls())
    if (keep[c]) keep_call(c);
  for (size_t w : index.device_work()) {
    const Event& e = t.events[w];
    if (e.start_ns < to && (e.end_ns() > from || e.start_ns >= from)) {
      keep[w] = 1;
      const long call = index.launch_of(w);
      if (call >= 0) keep_call(size_t(call));
    }
  }
  // The correlations whose launch and GPU work are both kept: their ac2g arrows stay.
  std::unordered_set<uint64_t> kept_correlations;
  int64_t gpu_end = to;
  for (size_t w : index.device_work())
    if (keep[w]) {
      gpu_end = std::max(gpu_end, t.events[w].end_ns());
      const long call = index.launch_of(w);
      if (call >= 0 && keep[size_t(call)]) kept_correlations.insert(t.events[w].correlation);
    }
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.category == Category::GpuUserAnnotation && e.start_ns < gpu_end && e.end_ns() > from)
      keep[i] = 1;
  }

  // Each element's text, checked against the sources.
  auto raw_of = [&](const ElementSource& s) {
    if (s.offset >= text.size() || text[s.offset] != '{')
      throw ParseError("slice: the trace changed while it was read (no event at byte " +
                       std::to_string(s.offset) + ")");
    const size_t end = object_end(text, size_t(s.offset));
    if (end == std::string_view::npos)
      throw ParseError("slice: the event at byte " + std::to_string(s.offset) + " does not close");
    return text.substr(size_t(s.offset), end - size_t(s.offset));
  };

  // Flow arrows: a launch arrow (id = correlation) when its launch and GPU work are kept; any
  // other when both its ends lie in the span. Only the arrows near the span are read again.
  std::vector<char> keep_element(sources.size(), 0);
  std::unordered_map<std::string, std::vector<size_t>> other_flows;  // id + cat -> elements
  std::unordered_map<std::string, int> other_ends;                   // id + cat -> 1 s, 2 f
  for (size_t k = 0; k < sources.size(); ++k) {
    const ElementSource& s = sources[k];
    if (s.event != kNoKernelInfo) {
      keep_element[k] = keep[s.event];
    } else if (s.ph == 'M') {
      keep_element[k] = 1;
    } else if (s.ph == 's' || s.ph == 'f' || s.ph == 't') {
      if (s.ts_ns < from || s.ts_ns > gpu_end) continue;
      FlowEnd f;
      if (!read_flow(raw_of(s), f)) continue;
      if (is_launch_flow(f)) {
        uint64_t id = 0;
        const bool number = !f.id.empty() && std::all_of(f.id.begin(), f.id.end(), ::isdigit);
        if (number) id = std::strtoull(f.id.c_str(), nullptr, 10);
        keep_element[k] = number && kept_correlations.count(id);
      } else if (in_span(s.ts_ns)) {
        const std::string key = f.id + '\n' + f.cat;
        other_flows[key].push_back(k);
        other_ends[key] |= f.ph == 's' ? 1 : f.ph == 'f' ? 2 : 0;
      }
    } else {
      keep_element[k] = in_span(s.ts_ns);  // other instants, counters
    }
  }
  for (const auto& [key, elements] : other_flows)
    if (other_ends[key] == 3)
      for (size_t k : elements) keep_element[k] = 1;

  // The head up to the event array's '[', the kept elements, the tail after its ']'.
  size_t open = size_t(sources.front().offset);
  while (open > 0 && blank(text[open - 1])) --open;
  if (open == 0 || text[open - 1] != '[')
    throw ParseError("slice: no '[' before the first event at byte " +
                     std::to_string(sources.front().offset));
  const std::string_view last = raw_of(sources.back());
  size_t close = size_t(last.data() + last.size() - text.data());
  while (close < text.size() && blank(text[close])) ++close;
  if (close >= text.size() || text[close] != ']')
    throw ParseError("slice: no ']' after the last event at byte " +
                     std::to_string(sources.back().offset));

  SliceCounts n;
  n.gpu_end_ns = from;
  std::string out(text.substr(0, open));
  bool first = true;
  for (size_t k = 0; k < sources.size(); ++k) {
    if (!keep_element[k]) continue;
    const ElementSource& s = sources[k];
    out += first ? "\n  " : ",\n  ";
    first = false;
    out += raw_of(s);
    ++n.events;
    if (s.event != kNoKernelInfo) {
      const Event& e = t.events[s.event];
      if (is_device_work(e.category)) {
        ++n.gpu_work;
        n.gpu_end_ns = std::max(n.gpu_end_ns, e.end_ns());
      } else if (!e.on_device()) {
        ++n.cpu;
      }
    } else if (s.ph == 'M') {
      ++n.metadata;
    } else if (s.ph == 's' || s.ph == 'f' || s.ph == 't') {
      ++n.flows;
    }
  }
  out += "\n  ";
  out += text.substr(close);
  if (counts) *counts = n;
  return out;
}

TraceBytes::TraceBytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw ParseError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  unsigned char magic[2] = {0, 0};
  const bool plain = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                     !(::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b);
  if (plain && st.st_size > 0) {
    map_size_ = size_t(st.st_size);
    map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) map_ = nullptr;
  }
  ::close(fd);
  if (map_) {
    view_ = std::string_view(static_cast<const char*>(map_), map_size_);
    return;
  }
  auto source = detail::open_file(path);
  std::vector<char> buf(size_t(1) << 20);
  for (size_t n; (n = source->read(buf.data(), buf.size())) > 0;) unpacked_.append(buf.data(), n);
  view_ = unpacked_;
}

TraceBytes::~TraceBytes() {
  if (map_) ::munmap(map_, map_size_);
}

}  // namespace pil::trace
