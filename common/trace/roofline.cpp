#include "trace/roofline.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "base/command_line.h"  // lowercase
#include "trace/device_peaks.h"
#include "trace/name_ids.h"
#include "trace/nesting.h"
#include "trace/roofline_formulas.h"

namespace pil::trace {

const char* to_string(Counted c) {
  switch (c) {
    case Counted::Yes: return "yes";
    case Counted::InCallees: return "in callees";
    case Counted::InCaller: return "in caller";
  }
  return "?";
}

const char* to_string(Bound b) {
  switch (b) {
    case Bound::Unknown: return "";
    case Bound::Compute: return "compute";
    case Bound::Memory: return "memory";
  }
  return "?";
}

bool has_recorded_inputs(const Trace& trace) { return !trace.op_inputs.empty(); }

namespace {

/// One CPU slice of a thread, in nesting order, and what the walk learns about it.
struct Slice {
  size_t event = 0;
  int32_t parent = -1;          // slot, or -1
  FormulaKind kind = FormulaKind::None;
  std::optional<OpWork> work;   // its formula's figures (kind != None)
  bool calls_counted = false;   // some operator it calls (at any depth) has a formula
  Counted counted = Counted::Yes;
  int32_t owner = -1;           // the counted operator its work belongs to (itself, or a caller)
  // Counted operators: the GPU work their range launched.
  int64_t gpu_ns = 0, gpu_items = 0, device = -1;
  bool tf32_kernel = false;
  int64_t link_copies = 0;  // of those items, copies between host and GPU or between GPUs
};

bool contains_tf32(std::string_view kernel) {
  const std::string lower = lowercase(kernel);
  return lower.find("tf32") != std::string::npos || lower.find("xf32") != std::string::npos;
}

/// The tensor inputs' sizes: "[512, 512]x[512, 512]" for a matrix product, "[16, 16], [16]" for
/// other work (an add's operands are not multiplied).
std::string tensor_sizes(const OpInputs& in, bool matrix) {
  std::string out;
  for (const InputArg& a : in.args) {
    if (a.is_list || dtype_bytes(a.type) == 0) continue;
    if (!out.empty()) out += matrix ? "x" : ", ";
    out += "[";
    for (size_t i = 0; i < a.dims.size(); ++i) out += (i ? ", " : "") + std::to_string(a.dims[i]);
    out += "]";
  }
  return out;
}

/// The compute peak of a type on a GPU: tensor (matrix) cores for products, vector units else.
PeakKind peak_kind(std::string_view family, bool matrix, bool tf32, const PeakFigures& p) {
  if (family == "fp64") return matrix && p.fp64_tensor > 0 ? PeakKind::Fp64Tensor : PeakKind::Fp64;
  if (!matrix) return PeakKind::Fp32;  // 16-bit elementwise work: no vector figure of its own
  if (family == "bf16") return PeakKind::Bf16Tensor;
  if (family == "fp16") return PeakKind::Fp16Tensor;
  if (family == "fp8") return PeakKind::Fp8Tensor;
  if (tf32) return PeakKind::Tf32Tensor;
  return p.fp32_tensor > 0 ? PeakKind::Fp32Tensor : PeakKind::Fp32;
}

/// The peak, bound and share of a counted row.
void hold_against_peak(RooflineRow& row, bool tf32_kernel, const Trace& t, const RooflineOptions& o,
                       std::map<int64_t, GpuMatch>& matches) {
  RooflinePeak& p = row.peak;
  if (row.on_gpu && row.link_copies == row.gpu_work_items) {  // its time is the link's
    row.note = "a copy between host and GPU (or between GPUs): bounded by the link (PCIe, NVLink), not "
               "held against the GPU's peaks";
    return;
  }
  if (!row.on_gpu) {
    p.gflops = o.cpu_peak_gflops;
    p.gbps = o.cpu_peak_gbps;
    p.source = o.cpu_peak_gflops > 0 || o.cpu_peak_gbps > 0 ? "--cpu-peak-gflops/--cpu-peak-gbps" : "";
  } else {
    auto found = matches.find(row.device);
    if (found == matches.end()) {
      GpuMatch m;
      if (const DeviceInfo* d = t.device_info(row.device)) {
        m = match_gpu(*d);
      } else {
        m.line = "GPU " + std::to_string(row.device) + ": not in the trace's deviceProperties: no peak figures";
      }
      found = matches.emplace(row.device, m).first;
    }
    const GpuSpec* spec = found->second.spec;
    const std::string_view family = float_family(row.dtype);
    if (spec) {
      PeakKind kind = peak_kind(family, row.matrix, tf32_kernel, spec->peak);
      // An FP32 product faster than the FP32 vector units can go ran on TF32 tensor cores.
      if (kind == PeakKind::Fp32 && row.matrix && spec->peak.tf32_tensor > 0 &&
          row.gflops() > spec->peak.fp32 * 1000) {
        kind = PeakKind::Tf32Tensor;
        row.note = "faster than the fp32 peak: TF32 tensor cores, allow_tf32";
      } else if (kind == PeakKind::Tf32Tensor) {
        row.note = "a tf32 kernel";
      }
      if (!family.empty()) {
        p.gflops = spec->peak.tflops(kind) * 1000;
        p.kind = to_string(kind);
        if (p.gflops == 0) row.note = std::string("the ") + spec->name + " has no " + p.kind + " figure";
      } else {
        row.note = "no compute peak for " + row.dtype;
      }
      p.gbps = spec->peak.memory_gbps;
      p.source = spec->name;
    }
    if (o.gpu_peak_tflops > 0) {
      p.gflops = o.gpu_peak_tflops * 1000;
      p.kind.clear();
      p.source = "--gpu-peak-tflops";
    }
    if (o.gpu_peak_gbps > 0) {
      p.gbps = o.gpu_peak_gbps;
      if (!spec && o.gpu_peak_tflops <= 0) p.source = "--gpu-peak-gbps";
    }
  }
  if (row.time_ns <= 0) return;
  if (p.gflops > 0 && p.gbps > 0) {
    row.bound = row.intensity() >= p.ridge() ? Bound::Compute : Bound::Memory;
    row.share_of = row.bound;
  } else if (p.gflops > 0) {
    row.share_of = Bound::Compute;
  } else if (p.gbps > 0) {
    row.share_of = Bound::Memory;
  }
  if (row.share_of == Bound::Compute) row.share = row.gflops() / p.gflops;
  if (row.share_of == Bound::Memory) row.share = row.gbps() / p.gbps;
  if (row.share > 1) {  // a peak cannot be beaten: the peak or the figures are wrong, and said so
    const bool given = !row.on_gpu || p.source.rfind("--", 0) == 0;
    row.note += std::string(row.note.empty() ? "" : "; ") +
                (given ? "above the peak given: measure it with the threads and load of the traced run"
                 : row.share_of == Bound::Memory
                     ? "above the datasheet's memory peak: its data may have come from the GPU's L2 "
                       "cache (an operand the kernel before wrote, small enough to stay there), or a "
                       "formula or a time is off"
                     : "above the datasheet's peak: a formula or a time is off");
  }
}

}  // namespace

RooflineReport roofline_report(const TraceIndex& index, const RooflineOptions& options) {
  const Trace& t = index.trace();
  RooflineReport report;
  if (!has_recorded_inputs(t)) return report;

  // The CPU slices of each thread (operators, ranges, runtime calls), to nest.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> threads;
  for (size_t i = 0; i < t.events.size(); ++i)
    if (is_cpu_slice(t.events[i].category)) threads[{t.events[i].pid, t.events[i].tid}].push_back(i);

  // Rows by (name, inputs, where, how counted, counted by): in order of first appearance.
  struct Acc {
    RooflineRow row;
    std::set<std::string> counted_in;
    bool tf32_kernel = false;
    size_t first_event = 0;
  };
  NameIds names;
  std::map<std::tuple<uint32_t, uint32_t, int64_t, int, uint32_t>, size_t> row_of;
  std::vector<Acc> accs;

  for (auto& [lane, idx] : threads) {
    order_for_nesting(t.events, idx);
    std::vector<Slice> s;
    s.reserve(idx.size());
    std::vector<int32_t> open;  // slots of the slices open at each depth
    nest(t.events, idx, [&](size_t i, long, int depth) {
      open.resize(size_t(depth));
      Slice slice;
      slice.event = i;
      slice.parent = depth > 0 ? open.back() : -1;
      s.push_back(slice);
      open.push_back(int32_t(s.size() - 1));
      const Event& e = t.events[i];
      if (e.category != Category::CpuOp) return true;
      const OpInputs* in = t.inputs_of(e);
      const FormulaKind kind = formula_kind(e.name);
      if (!in || kind == FormulaKind::None) return true;
      s.back().work = op_work(e.name, *in);
      if (s.back().work) s.back().kind = kind;
      else report.calls_not_understood += 1;
      return true;
    });
    // Whether each slice calls an operator with a formula (children come after parents).
    for (size_t k = s.size(); k-- > 0;)
      if ((s[k].kind != FormulaKind::None || s[k].calls_counted) && s[k].parent >= 0)
        s[size_t(s[k].parent)].calls_counted = true;
    // How each is counted (parents come before children).
    for (Slice& x : s) {
      const int32_t above = x.parent >= 0 ? s[size_t(x.parent)].owner : -1;
      const int32_t self = int32_t(&x - s.data());
      if (x.kind == FormulaKind::None) {
        x.owner = above;
      } else if (above >= 0) {
        x.counted = Counted::InCaller;
        x.owner = above;
      } else if (x.kind == FormulaKind::Composite && x.calls_counted) {
        x.counted = Counted::InCallees;
        x.owner = -1;
      } else {
        x.counted = Counted::Yes;
        x.owner = self;
      }
    }
    // The GPU work each counted operator launched, through its launch calls' correlation.
    for (const Slice& x : s) {
      if (x.owner < 0 || !is_launch_call(t.events[x.event].category)) continue;
      Slice& op = s[size_t(x.owner)];
      for (size_t w : index.work_of(x.event)) {
        const Event& g = t.events[w];
        op.gpu_ns += g.dur_ns;
        op.gpu_items += 1;
        if (op.device < 0) op.device = g.pid;
        if (g.category == Category::Kernel && contains_tf32(g.name)) op.tf32_kernel = true;
        if (is_link_copy(g)) op.link_copies += 1;
      }
    }
    // Into rows.
    for (size_t k = 0; k < s.size(); ++k) {
      const Slice& x = s[k];
      if (x.kind == FormulaKind::None) continue;
      const Event& e = t.events[x.event];
      const bool on_gpu = x.counted == Counted::Yes && x.gpu_items > 0;
      const uint32_t caller = x.counted == Counted::InCaller ? names(t.events[s[size_t(x.owner)].event].name) : 0;
      const auto key = std::make_tuple(names(e.name), e.input_shapes, on_gpu ? x.device : -1,
                                       int(x.counted), caller);
      auto [it, fresh] = row_of.emplace(key, accs.size());
      if (fresh) {
        Acc a;
        const OpInputs& in = *t.inputs_of(e);
        a.row.name = std::string(e.name);
        a.row.input_dims = std::string(in.dims_text);
        for (const InputArg& arg : in.args) a.row.input_types.emplace_back(arg.type);
        if (in.has_concrete)
          for (const InputArg& arg : in.args) a.row.concrete.emplace_back(arg.concrete);
        a.row.tensors = tensor_sizes(in, x.work->matrix);
        a.row.counted = x.counted;
        a.row.flops = x.work->flops;
        a.row.bytes = x.work->bytes;
        a.row.dtype = std::string(x.work->dtype);
        a.row.matrix = x.work->matrix;
        a.row.on_gpu = on_gpu;
        a.row.device = on_gpu ? x.device : -1;
        a.first_event = x.event;
        if (x.counted == Counted::InCaller) a.counted_in.insert(std::string(t.events[s[size_t(x.owner)].event].name));
        accs.push_back(std::move(a));
      }
      Acc& a = accs[it->second];
      a.row.calls += 1;
      a.first_event = std::min(a.first_event, x.event);
      if (x.counted == Counted::Yes) {
        a.row.time_ns += on_gpu ? x.gpu_ns : e.dur_ns;
        a.row.gpu_work_items += x.gpu_items;
        a.tf32_kernel = a.tf32_kernel || x.tf32_kernel;
        a.row.link_copies += x.link_copies;
        // The composites above it are counted here.
        for (int32_t up = x.parent; up >= 0; up = s[size_t(up)].parent)
          if (s[size_t(up)].counted == Counted::InCallees && s[size_t(up)].kind != FormulaKind::None) {
            const Event& c = t.events[s[size_t(up)].event];
            const auto ckey = std::make_tuple(names(c.name), c.input_shapes, int64_t(-1),
                                              int(Counted::InCallees), uint32_t(0));
            // The composite's row is made when the walk reaches it (after its callees' rows
            // for no slice: parents come first), so it exists.
            if (auto r = row_of.find(ckey); r != row_of.end()) accs[r->second].counted_in.insert(a.row.name);
          }
      }
    }
  }

  std::map<int64_t, GpuMatch> matches;
  for (Acc& a : accs) {
    a.row.counted_in.assign(a.counted_in.begin(), a.counted_in.end());
    if (a.row.counted == Counted::Yes) hold_against_peak(a.row, a.tf32_kernel, t, options, matches);
  }
  std::stable_sort(accs.begin(), accs.end(), [](const Acc& x, const Acc& y) {
    const bool cx = x.row.counted == Counted::Yes, cy = y.row.counted == Counted::Yes;
    if (cx != cy) return cx;
    if (cx && x.row.time_ns != y.row.time_ns) return x.row.time_ns > y.row.time_ns;
    if (!cx && x.row.calls != y.row.calls) return x.row.calls > y.row.calls;
    return x.first_event < y.first_event;
  });
  for (Acc& a : accs) report.rows.push_back(std::move(a.row));
  for (const auto& [device, m] : matches) report.devices.push_back(m.line);
  return report;
}

}  // namespace pil::trace
