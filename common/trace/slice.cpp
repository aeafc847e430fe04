#include "trace/slice.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trace/check.h"
#include "trace/parse.h"
#include "trace/parse/json_text.h"
#include "trace/parse/sources.h"
#include "trace/text_table.h"  // trace_ts

namespace pil::trace {

namespace {

// A flow arrow's end: its id (as written: a number or a string), category, name and phase,
// whether it binds to the enclosing slice (bp "e"; a finish without it binds to the next slice),
// and its lane: pid and tid as written, and as numbers where both are whole numbers.
struct FlowEnd {
  std::string id, cat, name, lane;
  char ph = 0;
  bool enclosing = false;
  bool numbered = false;
  int64_t pid = 0, tid = 0;
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
  const auto bp = j.find("bp");
  out.enclosing = out.ph != 'f' || (bp != j.end() && bp->is_string() && *bp == "e");
  const auto pid = j.find("pid"), tid = j.find("tid");
  const nlohmann::json none;
  const nlohmann::json& p = pid != j.end() ? *pid : none;
  const nlohmann::json& q = tid != j.end() ? *tid : none;
  out.lane = p.dump() + '\n' + q.dump();
  out.numbered = p.is_number_integer() && q.is_number_integer();
  if (out.numbered) out.pid = p.get<int64_t>(), out.tid = q.get<int64_t>();
  return true;
}

// A launch → GPU work arrow, whose id is the correlation: "ac2g", or torch 1.8-1.9's
// "cat": "async", "name": "launch".
bool is_launch_flow(const FlowEnd& f) { return f.cat == "ac2g" || (f.cat == "async" && f.name == "launch"); }

// An event's lane as written (pid and tid), in FlowEnd::lane's form; empty when unreadable.
std::string lane_of(std::string_view raw) {
  const auto j = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {};
  const auto pid = j.find("pid"), tid = j.find("tid");
  const nlohmann::json none;
  return (pid != j.end() ? *pid : none).dump() + '\n' + (tid != j.end() ? *tid : none).dump();
}

}  // namespace

std::string slice_text(const TraceIndex& index, std::string_view text, int64_t from, int64_t to,
                       SliceCounts* counts) {
  const Trace& t = index.trace();
  const auto& sources = t.sources;
  if (sources.empty()) throw ParseError("slice: the trace has no events to keep");
  auto in_span = [&](int64_t ts) { return ts >= from && ts < to; };

  // Events: CPU ones that start in the span; GPU work launched by a kept call (its tail), or
  // running in the span; and the work launched before the span that ran before the tail's end
  // (what the tail queued behind). Work launched before the span is kept without its launch
  // call, as a recording begun at the span's start would hold it (launched before recording
  // began, no step's): kept with its call, work queued since an earlier step read in the slice
  // as GPU work waiting a whole step on an idle GPU (a clock offset), and as the step's own; left
  // out, the tail read as waiting on an idle GPU.
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
  int64_t tail_end = to;
  for (size_t w : index.device_work())
    if (keep[w]) tail_end = std::max(tail_end, t.events[w].end_ns());
  auto launched_before = [&](size_t w) {
    const long call = index.launch_of(w);
    return call >= 0 ? t.events[size_t(call)].start_ns < from : index.launched_before_recording(w);
  };
  // Work launched after the span is not kept though it runs in it (a GPU clock ahead of the
  // CPU's: the next step's first kernel, call-less in the slice, read as GPU work without a
  // launch); work without a launch call in the input is kept as it is.
  auto launched_after = [&](size_t w) {
    const long call = index.launch_of(w);
    return call >= 0 && t.events[size_t(call)].start_ns >= to;
  };
  for (size_t w : index.device_work()) {
    const Event& e = t.events[w];
    const bool runs_in_span = e.start_ns < to && (e.end_ns() > from || e.start_ns >= from);
    if ((runs_in_span && !launched_after(w)) || (e.start_ns < tail_end && e.end_ns() > from && launched_before(w)))
      keep[w] = 1;
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
    const size_t end = detail::value_end(text, size_t(s.offset));
    if (end == std::string_view::npos)
      throw ParseError("slice: the event at byte " + std::to_string(s.offset) + " does not close");
    return text.substr(size_t(s.offset), end - size_t(s.offset));
  };

  // Flow arrows: a launch arrow (ac2g, or torch 1.8-1.9's async "launch"; id = correlation)
  // when its launch and GPU work are kept; any
  // other when every end of it binds to a kept slice (as Perfetto binds them: the enclosing
  // slice on the end's thread, or for a finish without bp "e" the next slice to start there).
  // Only the arrows that may bind to a kept event (between the first kept start and the last
  // kept end) are read again.
  int64_t kept_lo = std::numeric_limits<int64_t>::max(), kept_hi = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < t.events.size(); ++i)
    if (keep[i]) {
      kept_lo = std::min(kept_lo, t.events[i].start_ns);
      kept_hi = std::max(kept_hi, t.events[i].end_ns());
    }
  std::vector<char> keep_element(sources.size(), 0);
  std::vector<std::pair<size_t, FlowEnd>> other_ends;  // element, end
  for (size_t k = 0; k < sources.size(); ++k) {
    const ElementSource& s = sources[k];
    if (s.event != kNoKernelInfo) {
      keep_element[k] = keep[s.event];
    } else if (s.ph == 'M') {
      keep_element[k] = 1;
    } else if (s.ph == 's' || s.ph == 'f' || s.ph == 't') {
      if (s.ts_ns < kept_lo || s.ts_ns > kept_hi) continue;
      FlowEnd f;
      if (!read_flow(raw_of(s), f)) continue;
      if (is_launch_flow(f)) {
        uint64_t id = 0;
        const bool number = !f.id.empty() && std::all_of(f.id.begin(), f.id.end(), ::isdigit);
        if (number) id = std::strtoull(f.id.c_str(), nullptr, 10);
        keep_element[k] = number && kept_correlations.count(id);
      } else {
        other_ends.push_back({k, std::move(f)});
      }
    } else {
      keep_element[k] = in_span(s.ts_ns);  // other instants, counters
    }
  }
  if (!other_ends.empty()) {
    // The slices of the ends' lanes (by number where the end's pid and tid are numbers, else
    // every slice on a named lane, told apart by its pid and tid as written), by start.
    std::vector<uint32_t> source_of(t.events.size(), kNoKernelInfo);
    for (size_t k = 0; k < sources.size(); ++k)
      if (sources[k].event != kNoKernelInfo) source_of[sources[k].event] = uint32_t(k);
    struct Lane {
      std::vector<size_t> events;    // by start, the longer first
      std::vector<int64_t> max_end;  // the latest end among events[0..k]
    };
    std::map<std::pair<int64_t, int64_t>, Lane> numbered;  // by pid and tid
    std::unordered_map<std::string, Lane> named;            // by pid and tid as written
    bool any_named = false;
    for (const auto& [k, f] : other_ends) {
      if (f.numbered) numbered[{f.pid, f.tid}];
      else any_named = true;
    }
    for (size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      if (e.category == Category::Memory || source_of[i] == kNoKernelInfo) continue;
      const auto it = numbered.find({e.pid, e.tid});
      if (it != numbered.end()) it->second.events.push_back(i);
      if (any_named && (e.pid < 0 || e.tid < 0)) {
        const std::string lane = lane_of(raw_of(sources[source_of[i]]));
        if (!lane.empty()) named[lane].events.push_back(i);
      }
    }
    auto order = [&](Lane& lane) {
      std::sort(lane.events.begin(), lane.events.end(), [&](size_t a, size_t b) {
        const Event &x = t.events[a], &y = t.events[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.dur_ns > y.dur_ns;
      });
      int64_t latest = std::numeric_limits<int64_t>::min();
      for (size_t i : lane.events) lane.max_end.push_back(latest = std::max(latest, t.events[i].end_ns()));
    };
    for (auto& [key, lane] : numbered) order(lane);
    for (auto& [key, lane] : named) order(lane);
    // Whether the slice an end binds to is kept: the innermost enclosing slice (the latest to
    // start), or the first to start at or after a finish's ts without bp "e".
    auto bound_kept = [&](const FlowEnd& f, int64_t ts) {
      const Lane* lane = nullptr;
      if (f.numbered) {
        const auto it = numbered.find({f.pid, f.tid});
        if (it != numbered.end()) lane = &it->second;
      } else {
        const auto it = named.find(f.lane);
        if (it != named.end()) lane = &it->second;
      }
      if (!lane) return false;
      const std::vector<size_t>& ev = lane->events;
      if (!f.enclosing) {
        const auto next = std::lower_bound(ev.begin(), ev.end(), ts, [&](size_t i, int64_t v) {
          return t.events[i].start_ns < v;
        });
        return next != ev.end() && keep[*next];
      }
      size_t j = size_t(std::upper_bound(ev.begin(), ev.end(), ts, [&](int64_t v, size_t i) {
                          return v < t.events[i].start_ns;
                        }) - ev.begin());
      for (; j > 0 && lane->max_end[j - 1] >= ts; --j)  // none before j - 1 reaches ts: stop
        if (t.events[ev[j - 1]].end_ns() >= ts) return bool(keep[ev[j - 1]]);
      return false;
    };
    std::unordered_map<std::string, int> ends;  // id + cat -> 1 s, 2 f, 4 an end not kept
    for (const auto& [k, f] : other_ends) {
      int& bits = ends[f.id + '\n' + f.cat];
      bits |= f.ph == 's' ? 1 : f.ph == 'f' ? 2 : 0;
      if (!bound_kept(f, sources[k].ts_ns)) bits |= 4;
    }
    for (const auto& [k, f] : other_ends)
      if (ends[f.id + '\n' + f.cat] == 3) keep_element[k] = 1;
  }

  bool anything = false;  // an element that is not a name (metadata)
  for (size_t k = 0; k < sources.size() && !anything; ++k) anything = keep_element[k] && sources[k].ph != 'M';
  if (!anything)
    throw EmptySlice("slice: nothing in the span from ts " + trace_ts(from) + " to " + trace_ts(to) +
                     " us: no event starts there and no GPU work runs there");

  // The head up to the event array's '[', the kept elements, the tail after its ']'.
  size_t open = size_t(sources.front().offset);
  while (open > 0 && detail::is_space(text[open - 1])) --open;
  if (open == 0 || text[open - 1] != '[')
    throw ParseError("slice: no '[' before the first event at byte " +
                     std::to_string(sources.front().offset));
  const std::string_view last = raw_of(sources.back());
  size_t close = size_t(last.data() + last.size() - text.data());
  while (close < text.size() && detail::is_space(text[close])) ++close;
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
