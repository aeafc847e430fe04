#include "trace/roofline_format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "trace/text_table.h"

namespace pil::trace {

std::string si(double value) {
  static const char* const kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  double v = std::fabs(value);
  size_t p = 0;
  char buf[48];
  for (;;) {
    std::snprintf(buf, sizeof buf, v < 10 && p ? "%.2f" : v < 100 && p ? "%.1f" : "%.0f", v);
    if (std::strtod(buf, nullptr) < 1000 || p == 6) break;
    v /= 1000;
    ++p;
  }
  // Whole numbers below 1000 as they are ("12", not "12.0"); three figures once prefixed.
  if (p == 0 && v != std::floor(v)) std::snprintf(buf, sizeof buf, "%.3g", v);
  return std::string(value < 0 ? "-" : "") + buf + kPrefix[p];
}

namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, share >= 0.1 ? "%.0f%%" : "%.1f%%", 100 * share);
  return buf;
}

std::string rate(double x) {  // GFLOP/s and GB/s: "2039", "989.5", "12.1", "0.043"
  char buf[48];
  std::snprintf(buf, sizeof buf, x >= 100 ? "%.0f" : x >= 1 ? "%.3g" : "%.2g", x);
  return buf;
}

std::string types(const RooflineRow& r) {
  std::string out;
  for (const auto& t : r.input_types) out += (out.empty() ? "" : ", ") + (t.empty() ? std::string("''") : t);
  return out;
}

std::string where(const RooflineRow& r) {
  if (r.counted != Counted::Yes) return "-";
  return r.on_gpu ? "GPU " + std::to_string(r.device) : "CPU";
}

/// "756 TFLOP/s", "2.00 TB/s": a figure with its prefix and unit.
std::string with_unit(double value, const char* unit) {
  const std::string s = si(value);
  const size_t prefix = s.find_first_not_of("-0123456789.");
  return s.substr(0, prefix) + " " + (prefix == std::string::npos ? "" : s.substr(prefix)) + unit;
}

std::string peak_cell(const RooflineRow& r) {
  if (r.share_of == Bound::Compute)
    return with_unit(r.peak.gflops * 1e9, "FLOP/s") + (r.peak.kind.empty() ? "" : " " + r.peak.kind);
  if (r.share_of == Bound::Memory) return with_unit(r.peak.gbps * 1e9, "B/s");
  return "-";
}

std::string cpu_line(const RooflineOptions& o) {
  if (o.cpu_peak_gflops <= 0 && o.cpu_peak_gbps <= 0)
    return "CPU: no peak given, no share: a trace carries none (--cpu-peak-gflops X, --cpu-peak-gbps Y; "
           "docs/pil-trace.md, Roofline, says how to measure them)";
  std::string line = "CPU: as given,";
  if (o.cpu_peak_gflops > 0) line += " " + rate(o.cpu_peak_gflops) + " GFLOP/s";
  if (o.cpu_peak_gbps > 0) line += std::string(o.cpu_peak_gflops > 0 ? "," : "") + " " + rate(o.cpu_peak_gbps) + " GB/s";
  return line;
}

}  // namespace

std::string format_roofline(const RooflineReport& report, const RooflineOptions& options, int row_limit) {
  TextTable table({"Calls", "On", "FLOPs", "Bytes", "FLOP/byte", "Time", "GFLOP/s", "GB/s", "Bound",
                   "% of peak", "Peak", "Name, Input Dims, Input type"});
  // Rows whose name, dims and types read alike differ in an input's value (SDPA's is_causal,
  // half the FLOPs): those rows show the values, as "Concrete Inputs" writes them.
  std::map<std::string, int> alike;
  for (const RooflineRow& r : report.rows) ++alike[r.name + " " + r.input_dims + " " + types(r)];
  int shown = 0;
  for (const RooflineRow& r : report.rows) {
    if (shown++ >= row_limit) break;
    const bool counted = r.counted == Counted::Yes;
    std::string name = r.name + " " + r.input_dims + " " + types(r);
    if (alike[name] > 1 && !r.concrete.empty()) {
      std::string values;
      for (const auto& v : r.concrete) values += (values.empty() ? "" : ", ") + (v.empty() ? std::string("''") : v);
      name += " [" + values + "]";
    }
    if (!counted) {
      std::string in;
      for (const auto& n : r.counted_in) in += (in.empty() ? "" : ", ") + n;
      name += " (counted in " + in + ")";
    }
    if (counted && !r.note.empty()) name += " (" + r.note + ")";
    table.add({grouped(r.calls), where(r), si(r.flops), si(r.bytes), rate(r.intensity()),
               counted ? format_duration(r.time_ns) : "-", counted ? rate(r.gflops()) : "-",
               counted ? rate(r.gbps()) : "-", counted && r.bound != Bound::Unknown ? to_string(r.bound) : "-",
               counted && r.share >= 0 ? percent(r.share) : "-", counted ? peak_cell(r) : "-", name});
  }
  std::string out = table.str();
  if (report.rows.size() > size_t(row_limit))
    out += "(" + std::to_string(report.rows.size() - size_t(row_limit)) + " more rows: --row-limit)\n";
  out += "FLOPs and Bytes per call, from the recorded shapes; Time and rates over all calls: their GPU work "
         "(On GPU) or their CPU time (On CPU)\n";
  for (const std::string& d : report.devices) out += "GPU: " + d + "\n";
  out += cpu_line(options) + "\n";
  if (report.calls_not_understood)
    out += std::to_string(report.calls_not_understood) +
           " call(s) of operators with a formula had inputs it does not take: left out\n";
  return out;
}

nlohmann::ordered_json roofline_json(const RooflineReport& report, const RooflineOptions& options) {
  using json = nlohmann::ordered_json;
  auto or_null = [](double x, bool known) { return known ? json(x) : json(nullptr); };
  json rows = json::array();
  for (const RooflineRow& r : report.rows) {
    const bool counted = r.counted == Counted::Yes;
    json row = {{"name", r.name},
                {"input_dims", r.input_dims},
                {"input_types", r.input_types},
                {"calls", r.calls},
                {"counted", to_string(r.counted)},
                {"counted_in", r.counted_in},
                {"flops_per_call", r.flops},
                {"bytes_per_call", r.bytes},
                {"flops", r.total_flops()},
                {"bytes", r.total_bytes()},
                {"intensity", r.intensity()},
                {"dtype", r.dtype},
                {"matrix", r.matrix}};
    if (counted) {
      row["device"] = r.on_gpu ? "cuda:" + std::to_string(r.device) : "cpu";
      row["time_ns"] = r.time_ns;
      row["gpu_work_items"] = r.gpu_work_items;
      row["link_copies"] = r.link_copies;
      row["achieved_gflops"] = r.gflops();
      row["achieved_gbps"] = r.gbps();
      row["peak"] = {{"gflops", or_null(r.peak.gflops, r.peak.gflops > 0)},
                     {"gbps", or_null(r.peak.gbps, r.peak.gbps > 0)},
                     {"kind", r.peak.kind},
                     {"source", r.peak.source},
                     {"ridge", or_null(r.peak.ridge(), r.peak.ridge() > 0)}};
      row["bound"] = r.bound == Bound::Unknown ? json(nullptr) : json(to_string(r.bound));
      row["share"] = or_null(r.share, r.share >= 0);
      row["share_of"] = r.share_of == Bound::Unknown ? json(nullptr) : json(to_string(r.share_of));
      row["note"] = r.note;
    }
    row["evidence"] = roofline_evidence(r);
    rows.push_back(row);
  }
  return {{"rows", rows},
          {"devices", report.devices},
          {"cpu_peak", {{"gflops", or_null(options.cpu_peak_gflops, options.cpu_peak_gflops > 0)},
                        {"gbps", or_null(options.cpu_peak_gbps, options.cpu_peak_gbps > 0)}}},
          {"calls_not_understood", report.calls_not_understood}};
}

std::string roofline_evidence(const RooflineRow& row) {
  std::string head = row.name + " " + row.tensors + " " + row.dtype + ": ";
  if (row.counted != Counted::Yes) {
    std::string in;
    for (const auto& n : row.counted_in) in += (in.empty() ? "" : ", ") + n;
    return head + "counted in " + (in.empty() ? std::string("its callees") : in);
  }
  const bool tera = row.on_gpu && row.peak.gflops >= 1000;
  const double scale = tera ? 1e-3 : 1;
  const char* unit = tera ? "TFLOP/s" : "GFLOP/s";
  const std::string where = row.on_gpu ? "the " + (row.peak.source.empty() ? std::string("GPU") : row.peak.source) + "'s"
                                       : std::string("the CPU's");
  if (row.share_of == Bound::Compute)
    return head + percent(row.share) + " of " + where + " " + (row.peak.kind.empty() ? "" : row.peak.kind + " ") +
           "peak (" + rate(row.gflops() * scale) + " of " + rate(row.peak.gflops * scale) + " " + unit + ")";
  if (row.share_of == Bound::Memory)
    return head + percent(row.share) + " of " + where + " memory bandwidth (" + rate(row.gbps()) + " of " +
           rate(row.peak.gbps) + " GB/s)";
  return head + rate(row.gflops() * scale) + " " + unit + ", " + rate(row.gbps()) + " GB/s on " +
         (row.on_gpu ? "GPU " + std::to_string(row.device) : std::string("the CPU")) + ", no peak to compare with";
}

}  // namespace pil::trace
