#pragma once
/// \file
/// What a GPU can do at most, from its vendor's datasheet: dense peak FLOP/s per data type and
/// memory bandwidth for common data-centre GPUs, each figure with the page and table it was
/// read from, and which entry a trace's device is (matched on its `deviceProperties`).
///
/// Dense figures only: NVIDIA's datasheets print tensor-core figures "with sparsity" (2:4
/// structured sparsity, marked *) beside or instead of dense ones; where a datasheet gives only
/// the sparse figure, the table holds half of it, which is NVIDIA's dense figure. Vendor peaks
/// are theoretical, at boost clock: a real GEMM reaches some 60-90% of them, and a GPU held at a
/// lower clock (power, temperature) less. None of these figures has been measured by this
/// project: no GPU run has landed yet. A measured ceiling goes in through RooflineOptions
/// (`pil-trace ops --roofline --gpu-peak-tflops X --gpu-peak-gbps Y`) and replaces the table's.
#include <string>
#include <vector>

#include "trace/trace.h"

namespace pil::trace {

/// Which of a GPU's compute peaks an operation is held against.
enum class PeakKind {
  Fp64,        ///< FP64 on the vector units (CUDA cores; AMD's vector ALUs)
  Fp64Tensor,  ///< FP64 on tensor cores (NVIDIA) or matrix cores (AMD)
  Fp32,        ///< FP32 on the vector units
  Fp32Tensor,  ///< FP32 on matrix cores (AMD's "FP32 Matrix"; NVIDIA has none: TF32 instead)
  Tf32Tensor,  ///< TF32 tensor cores: FP32 GEMMs with allow_tf32 / set_float32_matmul_precision
  Bf16Tensor,
  Fp16Tensor,
  Fp8Tensor,
};
/// "fp32", "bf16 tensor", ...: how a peak is named in tables and evidence.
const char* to_string(PeakKind kind);

/// Peak figures, TFLOP/s dense and GB/s (10^9 bytes/s); 0 where the datasheet gives none.
struct PeakFigures {
  double fp64 = 0, fp64_tensor = 0, fp32 = 0, fp32_tensor = 0, tf32_tensor = 0, bf16_tensor = 0,
         fp16_tensor = 0, fp8_tensor = 0;
  double memory_gbps = 0;
  /// The figure of one kind, TFLOP/s (0: none).
  double tflops(PeakKind kind) const;
};

/// One GPU of the table: how to know it from `deviceProperties`, its peaks, where they are from.
struct GpuSpec {
  const char* name;  ///< "H100 SXM5 80GB"
  // Every condition must hold; a field the trace does not give matches nothing.
  int compute_major, compute_minor;  ///< computeMajor.computeMinor (ROCm: 9.0 gfx90a, 9.4 gfx942)
  int sms;                           ///< numSms (SMs; compute units on ROCm)
  double min_memory_gb, max_memory_gb;  ///< totalGlobalMem, 10^9 bytes (what the driver reports)
  /// Words the device's name must hold, space separated, any case ("H100"; "A100 SXM4"); the
  /// name is cut into words at every character that is not a letter or a digit.
  const char* words;
  const char* not_words;  ///< words it must not hold ("PCIe NVL")
  PeakFigures peak;
  const char* source;  ///< the vendor's page or datasheet
  const char* table;   ///< which table and column of it, and what was done to the figures
};

/// The table, in the order matching tries it.
const std::vector<GpuSpec>& gpu_specs();

/// Which entry a device is, and one line saying why (or why none).
struct GpuMatch {
  const GpuSpec* spec = nullptr;  ///< null: no entry, or more than one
  std::string line;  ///< "NVIDIA H100 PCIe: H100 PCIe 80GB (cc 9.0, 114 SMs, 85.0 GB)" / why not
};
GpuMatch match_gpu(const DeviceInfo& device);

}  // namespace pil::trace
