#include "trace/device_peaks.h"

#include <cctype>
#include <cstdio>
#include <set>

namespace pil::trace {

const char* to_string(PeakKind kind) {
  switch (kind) {
    case PeakKind::Fp64: return "fp64";
    case PeakKind::Fp64Tensor: return "fp64 tensor";
    case PeakKind::Fp32: return "fp32";
    case PeakKind::Fp32Tensor: return "fp32 matrix";
    case PeakKind::Tf32Tensor: return "tf32 tensor";
    case PeakKind::Bf16Tensor: return "bf16 tensor";
    case PeakKind::Fp16Tensor: return "fp16 tensor";
    case PeakKind::Fp8Tensor: return "fp8 tensor";
  }
  return "?";
}

double PeakFigures::tflops(PeakKind kind) const {
  switch (kind) {
    case PeakKind::Fp64: return fp64;
    case PeakKind::Fp64Tensor: return fp64_tensor;
    case PeakKind::Fp32: return fp32;
    case PeakKind::Fp32Tensor: return fp32_tensor;
    case PeakKind::Tf32Tensor: return tf32_tensor;
    case PeakKind::Bf16Tensor: return bf16_tensor;
    case PeakKind::Fp16Tensor: return fp16_tensor;
    case PeakKind::Fp8Tensor: return fp8_tensor;
  }
  return 0;
}

namespace {

// The datasheets' own words for where a figure is. NVIDIA prints tensor-core figures for 2:4
// structured sparsity with a '*' ("* With sparsity"); "halved" below means the dense figure is
// half of that printed one, which is how NVIDIA derives it.
constexpr const char* kA100 =
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf";
constexpr const char* kH100 = "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
constexpr const char* kH200 = "https://www.nvidia.com/en-us/data-center/h200/";

// Figures: fp64, fp64 tensor, fp32, fp32 matrix, tf32, bf16, fp16, fp8 (TFLOP/s), memory GB/s.
// Checked figure by figure against each vendor table named below (issue 28): every figure is the
// table's own, or half its starred sparse one; the SM/CU counts, memory ranges and compute
// capabilities against what drivers report for these parts. Where a figure is 0 the table gives
// none (the roofline then says the GPU has no figure of that kind rather than using one).
const std::vector<GpuSpec> kSpecs = {
    {"V100 SXM2", 7, 0, 80, 15, 36, "V100 SXM2", "",
     {7.8, 0, 15.7, 0, 0, 0, 125, 0, 900},
     "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf",
     "Specifications, column V100 SXM2 (16 and 32 GB): double and single precision, \"Tensor "
     "Performance\" (FP16 inputs), memory bandwidth"},
    {"A100 40GB (SXM4 or PCIe)", 8, 0, 108, 38, 45, "A100", "",
     {9.7, 19.5, 19.5, 0, 156, 312, 312, 0, 1555}, kA100,
     "NVIDIA A100 Tensor Core GPU Specifications (SXM4 and PCIe Form Factors), columns A100 40GB "
     "PCIe and A100 40GB SXM (the same figures): the dense figures, not the starred sparse ones"},
    {"A100 80GB SXM4", 8, 0, 108, 78, 90, "A100 SXM4", "",
     {9.7, 19.5, 19.5, 0, 156, 312, 312, 0, 2039}, kA100,
     "the same table, column A100 80GB SXM: the dense figures"},
    {"A100 80GB PCIe", 8, 0, 108, 78, 90, "A100 PCIe", "",
     {9.7, 19.5, 19.5, 0, 156, 312, 312, 0, 1935}, kA100,
     "the same table, column A100 80GB PCIe: the dense figures"},
    {"H100 SXM5 80GB", 9, 0, 132, 78, 90, "H100", "PCIe NVL",
     {34, 67, 67, 0, 494.5, 989.5, 989.5, 1979, 3350}, kH100,
     "Technical Specifications, column H100 SXM: tensor-core figures printed with sparsity, halved"},
    {"H100 PCIe 80GB", 9, 0, 114, 78, 90, "H100", "NVL",
     {26, 51, 51, 0, 378, 756.5, 756.5, 1513, 2000}, kH100,
     "the datasheet's 2022 edition, Technical Specifications, column H100 PCIe (26, 51, 51, "
     "756*, 1,513*, 1,513*, 3,026* TFLOPS, 2TB/s; the current edition has H100 SXM and NVL "
     "columns only): tensor-core figures printed with sparsity, halved"},
    {"H100 NVL 94GB", 9, 0, 132, 90, 110, "H100 NVL", "",
     {30, 60, 60, 0, 417.5, 835.5, 835.5, 1670.5, 3900}, kH100,
     "Technical Specifications, column H100 NVL (one GPU): tensor-core figures printed with "
     "sparsity, halved"},
    {"H200 SXM 141GB", 9, 0, 132, 135, 160, "H200", "NVL",
     {34, 67, 67, 0, 494.5, 989.5, 989.5, 1979, 4800}, kH200,
     "Technical Specifications, column H200 SXM: tensor-core figures printed with sparsity, halved"},
    {"H200 NVL 141GB", 9, 0, 132, 135, 160, "H200 NVL", "",
     {30, 60, 60, 0, 417.5, 835.5, 835.5, 1670.5, 4800}, kH200,
     "Technical Specifications, column H200 NVL: tensor-core figures printed with sparsity, halved"},
    {"L4", 8, 9, 58, 21, 25, "L4", "",
     {0, 0, 30.3, 0, 60, 121, 121, 242.5, 300}, "https://www.nvidia.com/en-us/data-center/l4/",
     "Specifications: tensor-core figures printed with sparsity, halved; no FP64 figure given"},
    {"L40S", 8, 9, 142, 44, 50, "L40S", "",
     {0, 0, 91.6, 0, 183, 362.05, 362.05, 733, 864}, "https://www.nvidia.com/en-us/data-center/l40s/",
     "Specifications: the dense figures (the sparse ones are starred); no FP64 figure given"},
    {"A10", 8, 6, 72, 21, 25, "A10", "",
     {0, 0, 31.2, 0, 62.5, 125, 125, 0, 600},
     "https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
     "Specifications: the dense figures (the sparse ones are starred); no FP64 figure given"},
    {"T4", 7, 5, 40, 14, 17, "T4", "",
     {0, 0, 8.1, 0, 0, 0, 65, 0, 300},
     "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf",
     "Specifications: single precision, mixed precision (FP16/FP32) for FP16 tensor cores, GPU "
     "memory bandwidth (300 GB/s; the product page says 320+ GB/s)"},
    {"MI250X (one GCD)", 9, 0, 110, 64, 70, "AMD", "",
     {23.95, 47.85, 23.95, 47.85, 0, 191.5, 191.5, 0, 1600},
     "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html",
     "Specifications: peak FP64/FP32 vector and matrix, FP16, bfloat16 and memory bandwidth of the "
     "package (47.9, 95.7, 47.9, 95.7, 383, 383 TFLOPS, 3.2 TB/s), halved: ROCm shows each of its "
     "two GCDs as a device (110 CUs, 64 GB; 1.6 TB/s per GCD in AMD's ROCm documentation)"},
    {"MI300X", 9, 4, 304, 190, 215, "AMD", "",
     {81.7, 163.4, 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 5300},
     "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
     "Specifications: the dense peaks (the page also gives structured-sparsity ones, not used), the "
     "same as AMD's ROCm documentation, MI300 series microarchitecture, table \"Peak-performance "
     "capabilities of the MI300X\" (5.3 TB/s); one device in SPX mode (304 CUs, 192 GB)"},
};

/// The name's words, upper-cased: cut at every character that is not a letter or a digit.
std::set<std::string> words_of(const std::string& text) {
  std::set<std::string> out;
  std::string w;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += char(std::toupper(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      out.insert(w);
      w.clear();
    }
  }
  return out;
}

bool holds(const std::set<std::string>& name, const char* words, bool all) {
  for (const std::string& w : words_of(words)) {
    if (all && !name.count(w)) return false;
    if (!all && name.count(w)) return true;
  }
  return all;
}

std::string described(const DeviceInfo& d) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "cc %d.%d, %d SMs, %.1f GB", d.compute_major, d.compute_minor,
                d.num_sms, double(d.total_global_mem) / 1e9);
  return buf;
}

}  // namespace

const std::vector<GpuSpec>& gpu_specs() { return kSpecs; }

GpuMatch match_gpu(const DeviceInfo& d) {
  GpuMatch m;
  const std::string who = "'" + d.name + "'";
  if (d.compute_major < 0 || d.num_sms <= 0 || d.total_global_mem <= 0) {
    m.line = who + ": no peak figures: its deviceProperties lack numSms, totalGlobalMem or the "
             "compute capability, which tell its variant (H100 SXM from PCIe)";
    return m;
  }
  const std::set<std::string> name = words_of(d.name);
  std::vector<const GpuSpec*> found;
  for (const GpuSpec& s : kSpecs) {
    const double gb = double(d.total_global_mem) / 1e9;
    if (s.compute_major == d.compute_major && s.compute_minor == d.compute_minor && s.sms == d.num_sms &&
        gb >= s.min_memory_gb && gb <= s.max_memory_gb && holds(name, s.words, true) &&
        !holds(name, s.not_words, false))
      found.push_back(&s);
  }
  if (found.size() == 1) {
    m.spec = found.front();
    m.line = who + " (" + described(d) + ") is the " + m.spec->name + ": " + m.spec->source + ", " +
             m.spec->table;
  } else if (found.empty()) {
    m.line = who + " (" + described(d) + "): not in the table of peak figures (device_peaks.cpp)";
  } else {
    m.line = who + " (" + described(d) + ") fits more than one entry of the table (" + found[0]->name +
             ", " + found[1]->name + "): no peak figures";
  }
  return m;
}

}  // namespace pil::trace
