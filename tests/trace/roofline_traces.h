#pragma once
// A hand-made trace with recorded shapes, for the roofline's tests: GPU work of known length
// under operators of known shapes, on a device named as the test asks, and one operator that
// ran on the CPU. The figures the tests expect are worked out beside each event.
#include <string>

namespace pil::test {

/// `name`, `sms`, `memory` (bytes): the trace's deviceProperties for device 0 (compute 9.0).
inline std::string roofline_trace(const std::string& name = "NVIDIA H100 PCIe", int sms = 114,
                                  long long memory = 85029158912) {
  return R"json({"schemaVersion": 1, "deviceProperties": [
  {"id": 0, "name": ")json" + name + R"json(", "totalGlobalMem": )json" + std::to_string(memory) + R"json(,
   "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "warpSize": 32, "numSms": )json" +
         std::to_string(sms) + R"json(}],
 "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 200000,
   "args": {"External id": 1}},

  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10, "dur": 100,
   "args": {"External id": 2, "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"],
            "Input Dims": [[4096, 4096], [4096, 4096], [4096]]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 1, "tid": 1, "ts": 11, "dur": 2,
   "args": {"External id": 3, "Input type": ["c10::BFloat16"], "Input Dims": [[4096, 4096]]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 20, "dur": 80,
   "args": {"External id": 4, "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"],
            "Input Dims": [[4096], [4096, 4096], [4096, 4096], [], []]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1, "ts": 21, "dur": 4,
   "args": {"External id": 5, "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"],
            "Input Dims": [[4096, 4096], [4096, 4096], []]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 22, "dur": 2,
   "args": {"External id": 5, "correlation": 11}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 30, "dur": 5,
   "args": {"External id": 4, "correlation": 12}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7, "ts": 40, "dur": 1,
   "args": {"External id": 5, "correlation": 11, "device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN", "pid": 0, "tid": 7, "ts": 41, "dur": 500,
   "args": {"External id": 4, "correlation": 12, "device": 0, "stream": 7}},

  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 200, "dur": 20,
   "args": {"External id": 6, "Input type": ["float", "float", "Scalar"], "Input Dims": [[4096, 4096], [4096, 4096], []]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 205, "dur": 5,
   "args": {"External id": 6, "correlation": 13}},
  {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0, "tid": 7, "ts": 600, "dur": 200,
   "args": {"External id": 6, "correlation": 13, "device": 0, "stream": 7}},

  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 300, "dur": 20,
   "args": {"External id": 7, "Input type": ["float", "float"], "Input Dims": [[8192, 8192], [8192, 8192]]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 305, "dur": 5,
   "args": {"External id": 7, "correlation": 14}},
  {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n", "pid": 0, "tid": 7, "ts": 1000, "dur": 10000,
   "args": {"External id": 7, "correlation": 14, "device": 0, "stream": 7}},

  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1000, "dur": 100000,
   "args": {"External id": 8, "Input type": ["float", "float"], "Input Dims": [[1024, 1024], [1024, 1024]]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 101000, "dur": 10,
   "args": {"External id": 9, "Input type": ["float", "float"], "Input Dims": [[3, 4], [5, 6]]}}
 ]})json";
}

// What the tests expect, worked out by hand:
//  - aten::addmm, bf16, [4096] + [4096,4096] x [4096,4096]: 2 * 4096^3 = 137,438,953,472 FLOPs;
//    bytes (4096 + 3 * 4096^2) * 2 = 100,671,488; its GPU work: the kernel (500 us) and the
//    bias copy that its copy_ launched (1 us): 501 us, so 274,329 GFLOP/s. H100 PCIe: 756.5 TFLOP/s
//    bf16 dense, 2000 GB/s: ridge 378.25 FLOP/byte, intensity 1365: compute, 36.3%. H100 SXM:
//    989.5 TFLOP/s: 27.7%. aten::linear is counted in it, and so is the copy_.
//  - aten::add, float, [4096,4096] + [4096,4096]: 16,777,216 FLOPs, 3 * 4096^2 * 4 =
//    201,326,592 bytes in 200 us: 1006.6 GB/s, memory bound: 50.3% of 2000 GB/s (PCIe), 30.0% of
//    3350 GB/s (SXM).
//  - aten::mm, float, [8192,8192] x [8192,8192]: 2 * 8192^3 = 1,099,511,627,776 FLOPs in 10 ms:
//    109,951 GFLOP/s, above the FP32 peak (51 PCIe, 67 SXM): TF32, 29.1% of 378 (PCIe), 22.2% of
//    494.5 (SXM).
//  - aten::mm, float, [1024,1024]^2 on the CPU: 2 * 1024^3 = 2,147,483,648 FLOPs in 100 ms:
//    21.47 GFLOP/s; 12,582,912 bytes: 0.126 GB/s.
//  - aten::mm [3,4] x [5,6]: sizes that do not agree: one call not understood.

}  // namespace pil::test
