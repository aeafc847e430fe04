// fp32 GEMMs without tensor cores on a GPU that has TF32. The heuristic, and its limits:
// - the kernel's name says what it runs: "sgemm" as a word of its own, or an xmma kernel of
//   FFMA ("_ffma", "gemm_f32f32_f32f32"), without any tensor-core or 16-bit marker (names.h,
//   is_fp32_simt_gemm_kernel). Public traces of PyTorch on Hopper show its fp32 GEMMs there
//   running these Ampere-era kernels (cutlass_80_simt_sgemm_*, sm80_xmma_gemm_f32f32_*_ffma_*);
//   cuBLAS's nvjet_* kernels are tensor-core kernels and name a TF32 one so (nvjet_sss_tf32_*).
//   A kernel named otherwise is not counted, whatever it runs (cuBLAS's small gemmk1 and gemmSN
//   kernels say nothing of their unit); a library could name a tensor-core kernel with these
//   and none of the markers (counted wrongly). The operator's input dtypes would confirm fp32
//   once the reader keeps them; they are not needed to find the kernels.
// - the device's compute capability (deviceProperties' computeMajor/computeMinor) says whether
//   TF32 exists: 8.0 and later (Ampere on). Before that (a V100 is 7.0) an fp32 GEMM has no
//   tensor-core path but fp16 under autocast, a change of precision: not reported.
// - NVIDIA only: an AMD GPU's compute capability is its gfx version (an MI250 writes 9.0) and
//   its fp32 GEMMs run on matrix cores anyway.
// - the gain is the kernels' whole time, an upper bound: TF32's dense peak is 8x fp32's on an
//   A100 and 7.4x on an H100 SXM, 1x on GeForce cards (RTX 3090, 4090, 5090: their datasheets'
//   dense TF32 tensor figure is their fp32 one), so a TF32 kernel still takes some of that time,
//   and less is saved where the GPU is not the bottleneck. On a GeForce card the symptom says
//   that TF32 gains nothing there and bf16 or fp16 under autocast does (twice fp32's dense peak,
//   at fp32 accumulate), and its fix (Symptom::fix) leads with autocast, not TF32: a public RTX
//   5070 Ti trace read "at most 8.27x faster" with TF32 first.
// - convolutions are not counted, fp32 or not: in every public trace of Ampere or later seen with
//   fp32 convolution kernels (implicit_convolve_sgemm, *scudnn*: RTX 5070 Ti, RTX 4090, RTX 500
//   Ada, A100), TF32 convolution kernels ran beside them (PyTorch allows TF32 for cuDNN by
//   default): cuDNN chose fp32 for the shapes it has no TF32 kernel for (a 3-channel stem, 1x1
//   stride-2 convolutions), which "enable TF32" would not change.
#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include "trace/advise/names.h"
#include "trace/advise/rules_gpu.h"

namespace pil::trace::advise_rules {
namespace {

/// TF32 tensor cores exist from compute capability 8.0 (Ampere) on: a fact, not a threshold.
constexpr int32_t kTf32Compute = 80;

bool is_amd(const std::string& device_name) {
  return device_name.find("AMD") != std::string::npos ||
         device_name.find("Radeon") != std::string::npos ||
         device_name.find("Instinct") != std::string::npos;
}

}  // namespace

void fp32_gemm(const RuleContext& c, RuleResult& out) {
  const Trace& t = c.trace;
  bool any_compute = false;
  for (const DeviceInfo& d : t.devices) any_compute = any_compute || d.compute_capability() > 0;
  if (!any_compute) {
    out.unable("no compute capability in the trace's deviceProperties (computeMajor, computeMinor)");
    return;
  }
  // The devices that ran kernels: all AMD, or none with a compute capability: not checked.
  bool nvidia = false, known = false;
  for (const TraceIndex::Stream& s : c.index.streams()) {
    const int64_t d = s.device;
    const bool amd = is_amd(std::string(t.device_name(d)));
    nvidia = nvidia || !amd;
    known = known || (!amd && t.compute_capability(d) > 0);
  }
  if (!nvidia) {
    out.unable("an AMD GPU: the heuristic knows NVIDIA's kernel names and compute capabilities");
    return;
  }
  if (!known) {
    out.unable("no compute capability for the GPUs that ran the kernels (deviceProperties)");
    return;
  }

  if (!any_name(t, is_fp32_simt_gemm_kernel)) return;
  int64_t total = 0, kernels = 0, outliers = 0;
  int32_t compute = 0;
  long device = -1;
  std::map<std::string_view, std::vector<size_t>> instances;  // by name
  PerName<bool> fp32_simt;
  for (size_t i : c.index.device_work()) {
    const Event& e = t.events[i];
    if (e.category != Category::Kernel || !c.in_basis_work(i)) continue;
    const int64_t d = e.pid;
    if (t.compute_capability(d) < kTf32Compute) continue;
    if (is_amd(std::string(t.device_name(d)))) continue;
    if (!fp32_simt(e.name, is_fp32_simt_gemm_kernel)) continue;
    instances[e.name].push_back(i);
    ++kernels;
    compute = t.compute_capability(d);
    device = long(d);
  }
  if (kernels == 0) return;
  // Each kernel's time, but an outlier's (over kGemmOutlierRatio times the median of its name and launch shape, three
  // instances or more) counted at that: what held it (another stream's kernels on its SMs, a
  // clock) is no fp32 arithmetic, and TF32 would not remove it (a compiled MoE trace on an A100:
  // one cutlass simt sgemm of 2.44 ms beside two of 9.7 us made the bound 2.51 ms, not 0.13).
  std::map<std::string_view, std::pair<int64_t, size_t>> by_name;  // time, longest instance
  for (const auto& [n, idx] : instances) {
    // Held against the instances of the same launch shape (grid and block): a GEMM's grid follows
    // its output, and a larger product is no outlier (a public A100 trace's LM head, 157 ms of
    // ampere_sgemm_128x64_tn beside the layers' 3 ms ones, had been counted at 10x their median).
    std::map<std::array<int32_t, 6>, std::vector<int64_t>> durs;
    auto shape = [&](size_t i) {
      const KernelInfo* k = t.kernel_info(t.events[i]);
      return k ? std::array<int32_t, 6>{k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2]}
               : std::array<int32_t, 6>{-1, -1, -1, -1, -1, -1};
    };
    for (size_t i : idx) durs[shape(i)].push_back(t.events[i].dur_ns);
    std::map<std::array<int32_t, 6>, int64_t> caps;
    for (const auto& [key, d] : durs)
      caps[key] = d.size() >= 3 ? int64_t(threshold::kGemmOutlierRatio * double(median_ns(d)))
                                : std::numeric_limits<int64_t>::max();
    // The example: the longest instance counted whole (an outlier's time is not the name's).
    auto& [time, longest] = by_name.emplace(n, std::pair<int64_t, size_t>{0, SIZE_MAX}).first->second;
    for (size_t i : idx) {
      const int64_t counted = std::min(t.events[i].dur_ns, caps[shape(i)]);
      outliers += counted < t.events[i].dur_ns;
      time += counted;
      total += counted;
      if (counted == t.events[i].dur_ns && (longest == SIZE_MAX || t.events[i].dur_ns > t.events[longest].dur_ns))
        longest = i;
    }
  }
  // Their share of the busy time of the same work, the basis's (the steps' work: a warm-up's
  // 5 ms kernel before the steps had made four sgemms of 36% of a step "under 10%").
  std::vector<Interval> work;
  for (size_t i : c.index.device_work())
    if (c.in_basis_work(i)) work.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  merge(work);
  const int64_t busy = length(work);
  const double share = busy > 0 ? double(total) / double(busy) : 0;
  if (share < threshold::kFp32GemmShare) return;
  if (double(total) < c.options.min_saved_share * double(c.basis_ns)) return;

  const std::string name(t.device_name(device));
  const std::string cc = std::to_string(compute / 10) + "." + std::to_string(compute % 10);
  const bool geforce = name.find("GeForce") != std::string::npos;
  Symptom s;
  s.text = counted(kernels, "fp32 GEMM kernel") +
           " without tensor cores (sgemm or FFMA by name) ran " + format_duration(total) + ", " +
           percent_text(share) + " of the GPU's busy time in " + c.basis_noun() + ", on " +
           (name.empty() ? "a GPU" : name) + " (compute capability " + cc + ", which has TF32)" +
           (geforce ? "; a GeForce card: TF32's dense peak is fp32's there, so the gain is bf16's or fp16's "
                      "under autocast (twice fp32's dense peak, at fp32 accumulate), not TF32's"
                    : "");
  if (outliers > 0)
    s.text += "; " + counted(outliers, "outlier") + " over " + fixed(threshold::kGemmOutlierRatio, 0) +
              "x the median of its name and launch shape counted at that";
  s.figures = {{"kernels", double(kernels)}, {"gemm_ns", double(total)}, {"busy_share", share},
               {"outliers", double(outliers)},
               {"compute_capability", double(compute) / 10.0}, {"geforce", geforce ? 1.0 : 0.0}};
  std::vector<std::pair<int64_t, size_t>> worst;
  for (const auto& [n, v] : by_name) worst.push_back(v);
  std::stable_sort(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t k = 0; k < worst.size() && k < c.options.examples; ++k)
    s.examples.push_back(c.example(worst[k].second, "the longest of its name; " +
                                                        format_duration(worst[k].first) +
                                                        " in all under this name"));
  // Their operators' roofline figures where recorded: held against the fp32 peak (vector units;
  // a product faster than that ran on TF32 tensor cores and is not one of these).
  cite_roofline(c, s, [](const RooflineRow& r) { return r.on_gpu && r.peak.kind == "fp32"; }, false);
  s.saved_ns = total;
  s.how = "the fp32 GEMM kernels' whole time (" + format_duration(total) + "), an upper bound: " +
          (geforce ? "a bf16 or fp16 kernel still takes some of it (their dense peak is twice fp32's on "
                     "a GeForce card)"
                   : "a TF32 kernel still takes some of it (TF32's dense peak is 8x fp32's on an A100)") +
          "; found by the kernels' names (sgemm or FFMA, no tensor-core marker) on a device of compute "
          "capability 8.0 or later";
  // On a GeForce card the fix is autocast's, not TF32's.
  if (geforce) {
    s.fix = "Run the products in bf16 or fp16 where the accuracy allows: under autocast (at::autocast in C++, "
            "torch.autocast in Python), or the model in bf16 (lesson 02's --dtype bf16). A GeForce card's dense "
            "TF32 peak is its fp32 one, so enabling TF32 gains nothing there; bf16's and fp16's is twice it, "
            "accumulating in fp32.";
    s.command = "./run-lesson 02_linear --device cuda --dtype bf16";
  }
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
