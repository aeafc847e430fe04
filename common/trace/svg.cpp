#include "trace/svg.h"

#include "trace/key_averages.h"
#include "trace/nesting.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <sstream>

namespace pil::trace {
namespace {

constexpr int kLabel = 190;   // label column, pixels
constexpr int kRow = 16;      // one nesting level or one stream
constexpr int kMaxDepth = 10; // deeper CPU slices are not drawn
constexpr int kAxis = 34;     // time axis band at the top
constexpr size_t kMaxArrows = 400;
constexpr int kMarkLine = 14; // one line of the marks' labels, above the time axis
constexpr const char* kMarkColor = "#d62728";

struct Style {
  Category category;
  const char* color;
  const char* label;
};
constexpr Style kStyles[] = {
    {Category::UserAnnotation, "#8e6bbf", "named range / step"},
    {Category::CpuOp, "#4e79a7", "operator"},
    {Category::Runtime, "#f28e2b", "CUDA runtime call"},
    {Category::Driver, "#e15759", "CUDA driver call"},
    {Category::Kernel, "#59a14f", "kernel"},
    {Category::Memcpy, "#edc948", "memcpy"},
    {Category::Memset, "#ff9da7", "memset"},
    {Category::GpuUserAnnotation, "#bab0ac", "range on GPU"},
};

constexpr const char* kMemoryColor = "#9c755f";

const char* color_of(Category c) {
  for (const auto& s : kStyles)
    if (s.category == c) return s.color;
  return "#999999";
}


/// A short time for the picture: three significant figures, no trailing zeros ("25 us",
/// "1.5 ms"); the unit moves up when rounding reaches 1000 ("999.7 us" reads "1 ms", never
/// "1e+03 us").
std::string time_label(double ns) {
  static const char* const kUnits[] = {"ns", "us", "ms", "s"};
  double v = std::fabs(ns);
  size_t unit = 0;
  char buf[32];
  for (;;) {
    std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f" : v >= 1000 ? "%.0f" : "%.3g", v);
    if (std::strtod(buf, nullptr) < 1000 || unit == 3) break;
    v /= 1000;
    ++unit;
  }
  return std::string(ns < 0 ? "-" : "") + buf + " " + kUnits[unit];
}

/// One row of rectangles, with slices narrower than a pixel merged into one.
class RowPainter {
 public:
  RowPainter(std::ostringstream& out, int y) : out_(out), y_(y) {}
  ~RowPainter() { flush(); }
  void slice(double x0, double x1, const Event& e, double dur_us) {
    if (x1 - x0 < 1.0) {
      if (pending_ && x0 <= px1_ + 1.0 && e.category == pending_cat_) {
        px1_ = std::max(px1_, x1);
        ++merged_;
        return;
      }
      flush();
      pending_ = true;
      px0_ = x0;
      px1_ = x1;
      pending_cat_ = e.category;
      merged_ = 1;
      return;
    }
    flush();
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">", x0, y_ + 1,
                  x1 - x0, kRow - 2, color_of(e.category));
    out_ << buf << "<title>" << escape(e.name) << " (" << dur_us << " us)</title></rect>\n";
    const double w = x1 - x0;
    if (w > 30) {
      const size_t fit = size_t(w / 6.2);
      std::string name(e.name.substr(0, fit));
      if (name.size() < e.name.size() && fit > 2) name = name.substr(0, fit - 1) + "…";
      std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%d\" class=\"s\">", x0 + 2, y_ + kRow - 4);
      out_ << buf << escape(name) << "</text>\n";
    }
  }

 private:
  void flush() {
    if (!pending_) return;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                  "opacity=\"0.75\"><title>%d slices narrower than a pixel</title></rect>\n",
                  px0_, y_ + 1, std::max(1.0, px1_ - px0_), kRow - 2, color_of(pending_cat_), merged_);
    out_ << buf;
    pending_ = false;
  }
  std::ostringstream& out_;
  int y_;
  bool pending_ = false;
  double px0_ = 0, px1_ = 0;
  Category pending_cat_ = Category::Other;
  int merged_ = 0;
};

/// The window a picture of `options` shows.
void window_of(const TraceIndex& index, const SvgOptions& options, int64_t& from, int64_t& to) {
  from = options.from_ns;
  to = options.to_ns;
  if (to <= from) {
    from = index.window_start;
    to = index.window_end;
  }
  if (to <= from) to = from + 1;
}

/// Slices a picture draws: every CPU and GPU slice but memory events and metadata.
bool drawn(const Event& e, int64_t from, int64_t to) {
  return e.category != Category::Other && e.category != Category::Memory && e.end_ns() >= from &&
         e.start_ns <= to;
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
  }
  return out;
}

std::optional<size_t> find_mark(const TraceIndex& index, const SvgOptions& options,
                                const std::string& name) {
  int64_t from = 0, to = 0;
  window_of(index, options, from, to);
  const Trace& t = index.trace();
  std::optional<size_t> best;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.name != name || !drawn(e, from, to)) continue;
    if (!best || e.start_ns < t.events[*best].start_ns) best = i;
  }
  return best;
}

bool step_window(const TraceIndex& index, size_t step, int64_t& from, int64_t& to) {
  if (step >= index.steps.size()) return false;
  const Event& e = index.trace().events[index.steps[step]];
  from = e.start_ns;
  to = e.end_ns();
  // Widened to the end of the GPU work the step launched: its GPU tail is in the picture.
  for (size_t i : index.device_work())
    if (index.step_of_work(i) == long(step)) to = std::max(to, index.trace().events[i].end_ns());
  return true;
}

std::vector<const Event*> slices_named(const Trace& trace, std::string_view name) {
  std::vector<const Event*> found;
  for (const auto& e : trace.events)
    if (!e.on_device() && e.name == name) found.push_back(&e);
  std::stable_sort(found.begin(), found.end(),
                   [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; });
  return found;
}

bool range_window(const TraceIndex& index, const std::string& name, size_t instance,
                  int64_t& from, int64_t& to) {
  const std::vector<const Event*> found = slices_named(index.trace(), name);
  if (instance >= found.size()) return false;
  from = found[instance]->start_ns;
  to = found[instance]->end_ns();
  // Widen to the GPU work launched from inside, so its kernels are in the picture too.
  for (size_t i = 0; i < index.trace().events.size(); ++i) {
    const Event& e = index.trace().events[i];
    if (e.on_device() || e.start_ns < from || e.end_ns() > found[instance]->end_ns() ||
        e.pid != found[instance]->pid || e.tid != found[instance]->tid)
      continue;
    for (size_t w : index.work_of(i)) to = std::max(to, index.trace().events[w].end_ns());
  }
  return true;
}

std::string render_svg(const TraceIndex& index, const SvgOptions& options) {
  const Trace& t = index.trace();
  int64_t from = 0, to = 0;
  window_of(index, options, from, to);
  // Marks: the slice each points at, and a line of its own for each label above the axis.
  std::vector<std::pair<size_t, std::string>> marks;
  for (const auto& name : options.marks)
    if (auto i = find_mark(index, options, name)) marks.emplace_back(*i, name);
  const int axis = kAxis + int(marks.size()) * kMarkLine;
  std::map<size_t, std::pair<double, int>> mark_at;  // marked event -> (x, top of its row)
  const int width = std::max(options.width, kLabel + 200);
  const double scale = double(width - kLabel - 10) / double(to - from);
  auto x_of = [&](int64_t ns) { return kLabel + double(ns - from) * scale; };

  // Lanes: CPU threads (nested rows), then GPU streams.
  struct Lane {
    std::string label;
    std::vector<size_t> events;
    int depth_rows = 1;
    int y = 0;
    bool gpu = false;
  };
  std::map<std::pair<int64_t, int64_t>, Lane> cpu, gpu;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!drawn(e, from, to)) continue;
    (e.on_device() ? gpu : cpu)[{e.pid, e.tid}].events.push_back(i);
  }
  std::vector<int> depth(t.events.size(), 0);
  int y = axis + 8;
  std::ostringstream body;
  std::map<size_t, std::pair<double, int>> anchor;  // event -> (x, y mid) for arrows
  auto lane_name = [&](int64_t pid, int64_t tid, bool is_gpu) {
    auto it = t.lane_names.find({pid, tid});
    if (it != t.lane_names.end() && !it->second.empty()) return it->second;
    return is_gpu ? "GPU " + std::to_string(pid) + " stream " + std::to_string(tid)
                  : "CPU thread " + std::to_string(tid);
  };
  for (int pass = 0; pass < 2; ++pass) {
    auto& lanes = pass == 0 ? cpu : gpu;
    for (auto& [key, lane] : lanes) {
      auto& ev = lane.events;
      order_for_nesting(t.events, ev);
      int max_depth = 0;
      if (pass == 0) {
        nest(t.events, ev, [&](size_t i, long, int d) {
          depth[i] = d;
          max_depth = std::max(max_depth, d);
          return true;
        });
      } else {
        for (size_t i : ev) depth[i] = t.events[i].category == Category::GpuUserAnnotation ? 1 : 0;
        for (size_t i : ev) max_depth = std::max(max_depth, depth[i]);
      }
      lane.depth_rows = std::min(max_depth, kMaxDepth - 1) + 1;
      lane.y = y;
      for (const auto& m : marks)
        if (std::find(ev.begin(), ev.end(), m.first) != ev.end())
          mark_at[m.first] = {x_of(std::max(t.events[m.first].start_ns, from)),
                              y + std::min(depth[m.first], lane.depth_rows - 1) * kRow};
      body << "<text x=\"4\" y=\"" << y + 12 << "\" class=\"l\">"
           << escape(lane_name(key.first, key.second, pass == 1)) << "</text>\n";
      body << "<line x1=\"0\" x2=\"" << width << "\" y1=\"" << y - 2 << "\" y2=\"" << y - 2
           << "\" class=\"g\"/>\n";
      for (int d = 0; d < lane.depth_rows; ++d) {
        RowPainter row(body, y + d * kRow);
        for (size_t i : ev) {
          if (depth[i] != d) continue;
          const Event& e = t.events[i];
          const double x0 = x_of(std::max(e.start_ns, from)), x1 = x_of(std::min(e.end_ns(), to));
          row.slice(x0, x1, e, double(e.dur_ns) / 1e3);
          anchor[i] = {pass == 0 ? x_of(e.end_ns()) : x_of(e.start_ns), y + d * kRow + kRow / 2};
        }
      }
      y += lane.depth_rows * kRow + 8;
    }
  }
  // Memory in use per device, as a step line over the window (from the [memory] events):
  // counted from the trace's first event, so the line shows what the window's work added.
  {
    constexpr int kMemoryRow = 44;
    for (const auto& [key, idx] : memory_events_by_device(t)) {
      int64_t in_use = 0, start_value = 0;
      std::vector<std::pair<int64_t, int64_t>> points;  // (time, bytes in use after it)
      for (size_t i : idx) {
        in_use += t.memory_info(t.events[i])->bytes;
        if (t.events[i].start_ns < from) start_value = in_use;
        else if (t.events[i].start_ns <= to) points.emplace_back(t.events[i].start_ns, in_use);
      }
      int64_t low = start_value, high = start_value;
      for (const auto& p : points) {
        low = std::min(low, p.second);
        high = std::max(high, p.second);
      }
      const double range = double(std::max<int64_t>(high - low, 1));
      auto y_of = [&](int64_t v) { return y + kMemoryRow - 4 - double(v - low) / range * (kMemoryRow - 8); };
      const std::string label = memory_name(key.first, key.second);
      body << "<text x=\"4\" y=\"" << y + 12 << "\" class=\"l\">" << escape(label) << "</text>\n"
           << "<text x=\"4\" y=\"" << y + 26 << "\" class=\"t\">" << escape(format_bytes(low)) << " to "
           << escape(format_bytes(high)) << "</text>\n"
           << "<line x1=\"0\" x2=\"" << width << "\" y1=\"" << y - 2 << "\" y2=\"" << y - 2
           << "\" class=\"g\"/>\n";
      std::ostringstream path;
      char buf[96];
      std::snprintf(buf, sizeof buf, "M%.1f,%.1f", x_of(from), y_of(start_value));
      path << buf;
      for (const auto& p : points) {
        std::snprintf(buf, sizeof buf, " H%.1f V%.1f", x_of(p.first), y_of(p.second));
        path << buf;
      }
      std::snprintf(buf, sizeof buf, " H%.1f", x_of(to));
      path << buf;
      body << "<path d=\"" << path.str() << "\" fill=\"none\" stroke=\"" << kMemoryColor
           << "\" stroke-width=\"1.5\"><title>" << escape(label) << ": in use, above what was held "
           << "when recording began</title></path>\n";
      y += kMemoryRow + 8;
    }
  }
  const int height = y + 40;

  // Arrows from each launch call's end to the start of the GPU work it launched.
  std::ostringstream arrows;
  size_t drawn = 0, skipped = 0;
  for (const auto& [i, a] : anchor) {
    if (t.events[i].on_device()) continue;
    for (size_t w : index.work_of(i)) {
      auto b = anchor.find(w);
      if (b == anchor.end()) continue;
      if (drawn >= kMaxArrows) {
        ++skipped;
        continue;
      }
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"a\" "
                    "marker-end=\"url(#head)\"/>\n",
                    a.first, a.second, b->second.first, b->second.second);
      arrows << buf;
      ++drawn;
    }
  }

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\">\n"
      << "<style>.s{font-size:10px;fill:#fff}.l{font-size:11px;fill:#222}.t{font-size:10px;"
         "fill:#444}.g{stroke:#ddd}.a{stroke:#333;stroke-width:0.8;opacity:0.6}"
         ".m{stroke:" << kMarkColor << ";stroke-width:1.5}.ml{font-size:11px;font-weight:bold;fill:"
      << kMarkColor << "}</style>\n"
      << "<defs><marker id=\"head\" markerWidth=\"6\" markerHeight=\"6\" refX=\"5\" refY=\"3\" "
         "orient=\"auto\"><path d=\"M0,0 L6,3 L0,6 z\" fill=\"#333\"/></marker>"
         "<marker id=\"markhead\" markerWidth=\"8\" markerHeight=\"8\" refX=\"7\" refY=\"4\" "
         "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\" fill=\"" << kMarkColor << "\"/></marker></defs>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"4\" y=\"13\" class=\"l\" font-weight=\"bold\">" << escape(options.title)
        << "</text>\n";
  // Time axis: ticks at 1, 2 or 5 times a power of ten, relative to the window's start.
  const double span = double(to - from);
  const double raw = span / 8.0;
  const double p10 = std::pow(10.0, std::floor(std::log10(raw)));
  const double tick = raw / p10 < 2 ? 2 * p10 : raw / p10 < 5 ? 5 * p10 : 10 * p10;
  for (double v = 0; v <= span + 1e-9; v += tick) {
    const double x = kLabel + v * scale;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"g\"/>"
                  "<text x=\"%.1f\" y=\"%d\" class=\"t\">",
                  x, x, axis - 6, height - 36, x + 2, axis - 8);
    svg << buf << escape(time_label(v)) << "</text>\n";
  }
  svg << body.str() << arrows.str();
  // Marks: a label on its own line above the axis, an arrow down to the slice's start.
  for (size_t k = 0; k < marks.size(); ++k) {
    const auto at = mark_at.find(marks[k].first);
    if (at == mark_at.end()) continue;
    const Event& e = t.events[marks[k].first];
    const double x = at->second.first;
    const int label_y = kAxis - 6 + int(k) * kMarkLine;
    const std::string label = marks[k].second + (e.start_ns >= from ? ", at +" + time_label(double(e.start_ns - from))
                                                                   : ", from before the window") +
                              " (" + time_label(double(e.dur_ns)) + ")";
    // The label's width, roughly (11 px bold sans-serif: about 7 px a character): it goes right of
    // the arrow where it fits, else left of it, else as far right as it can while staying whole.
    const double est = 7.0 * double(label.size());
    const bool fits_right = x + 4 + est <= width, fits_left = x - 4 - est >= 0;
    const bool end_anchor = !fits_right && fits_left;
    const double tx = fits_right || fits_left ? (end_anchor ? x - 4 : x + 4) : std::max(4.0, width - est - 4);
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"m\" "
                  "marker-end=\"url(#markhead)\"/>\n<text x=\"%.1f\" y=\"%d\" class=\"ml\"%s>",
                  x, label_y + 3, x, at->second.second, tx, label_y, end_anchor ? " text-anchor=\"end\"" : "");
    svg << "<g class=\"mark\">" << buf << escape(label) << "</text></g>\n";
  }
  // Legend.
  int lx = 4;
  for (const auto& s : kStyles) {
    svg << "<rect x=\"" << lx << "\" y=\"" << height - 26 << "\" width=\"10\" height=\"10\" fill=\""
        << s.color << "\"/><text x=\"" << lx + 14 << "\" y=\"" << height - 17 << "\" class=\"t\">"
        << s.label << "</text>\n";
    lx += 24 + int(std::string(s.label).size()) * 6;
  }
  if (!t.memory.empty())
    svg << "<rect x=\"" << lx << "\" y=\"" << height - 26 << "\" width=\"10\" height=\"10\" fill=\""
        << kMemoryColor << "\"/><text x=\"" << lx + 14 << "\" y=\"" << height - 17
        << "\" class=\"t\">memory in use</text>\n";
  svg << "<text x=\"4\" y=\"" << height - 4 << "\" class=\"t\">window " << escape(time_label(span))
      << "; arrows: launch call -> GPU work";
  if (skipped) svg << " (" << skipped << " more not drawn)";
  svg << "</text>\n</svg>\n";
  return svg.str();
}

}  // namespace pil::trace
