#pragma once
// A small GPU trace in Kineto's format, built in the test so every answer can be worked out by
// hand. Times below are microseconds from the trace's start (plus `offset_us`, to write it with
// absolute epoch times as old traces do).
//
// CPU thread (pid 100, tid 1):
//   ProfilerStep#2 [0,200] id 1
//     matmul_add [10,90] id 2
//       aten::matmul [20,60] id 3 > aten::mm [25,55] id 4 > cudaLaunchKernel [30,35] corr 7
//       aten::add [65,85] id 5 > cudaLaunchKernel [70,74] corr 8
//       cudaGraphLaunch [86,89] corr 9
//     cudaDeviceSynchronize [91,99] corr 10
// CPU thread (pid 100, tid 2): cudaLaunchKernel [5,10] corr 12, cudaMemcpyAsync [45,48] corr 11,
//                              cudaLaunchKernel [100,110] corr 13
// GPU 0 stream 7: gemm [40,140] corr 7 (grid 64x1x1, block 128x1x1, 90 regs, 4096 B smem),
//                 add_kernel [150,160] corr 8, graph_k1 [165,170] corr 9, graph_k2 [170,172] corr 9,
//                 and matmul_add mirrored as a gpu_user_annotation [40,160]
// GPU 0 stream 8: Memcpy HtoD [50,60] corr 11
// GPU 0 stream 9: kernel_a [20,30] corr 12, kernel_b [120,125] corr 13
// Flows (ac2g) from each launch to its work; one unpaired flow start (id 99).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace pil::test {

inline std::string synthetic_gpu_trace(int64_t offset_us = 0, bool reversed = false,
                                       bool with_base_time = true) {
  auto t = [&](double us) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld.%03d", static_cast<long long>(offset_us + int64_t(us)),
                  int((us - double(int64_t(us))) * 1000 + 0.5));
    return std::string(buf);
  };
  auto x = [&](const char* cat, const char* name, int pid, int tid, double ts, double end,
               const std::string& args) {
    return std::string("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
           "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
           ", \"ts\": " + t(ts) + ", \"dur\": " + std::to_string(end - ts) + ", \"args\": {" + args +
           "}}";
  };
  auto op = [&](const char* name, double ts, double end, int id, int tid = 1,
                const char* cat = "cpu_op") {
    return x(cat, name, 100, tid, ts, end, "\"External id\": " + std::to_string(id));
  };
  auto rt = [&](const char* name, int tid, double ts, double end, int corr, int ext) {
    return x("cuda_runtime", name, 100, tid, ts, end,
             "\"External id\": " + std::to_string(ext) + ", \"correlation\": " + std::to_string(corr));
  };
  auto k = [&](const char* name, int stream, double ts, double end, int corr, int ext,
               const char* cat = "kernel", const std::string& more = "") {
    return x(cat, name, 0, stream, ts, end,
             "\"device\": 0, \"stream\": " + std::to_string(stream) + ", \"correlation\": " +
                 std::to_string(corr) + ", \"External id\": " + std::to_string(ext) + more);
  };
  auto flow = [&](const char* ph, int id, int pid, int tid, double ts) {
    return std::string("{\"ph\": \"") + ph + "\", \"id\": " + std::to_string(id) +
           ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
           ", \"ts\": " + t(ts) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}";
  };
  std::vector<std::string> ev = {
      op("ProfilerStep#2", 0, 200, 1, 1, "user_annotation"),
      op("matmul_add", 10, 90, 2, 1, "user_annotation"),
      op("aten::matmul", 20, 60, 3),
      op("aten::mm", 25, 55, 4),
      rt("cudaLaunchKernel", 1, 30, 35, 7, 4),
      op("aten::add", 65, 85, 5),
      rt("cudaLaunchKernel", 1, 70, 74, 8, 5),
      rt("cudaGraphLaunch", 1, 86, 89, 9, 2),
      rt("cudaDeviceSynchronize", 1, 91, 99, 10, 0),
      rt("cudaLaunchKernel", 2, 5, 10, 12, 0),
      rt("cudaMemcpyAsync", 2, 45, 48, 11, 0),
      rt("cudaLaunchKernel", 2, 100, 110, 13, 0),
      k("gemm", 7, 40, 140, 7, 4, "kernel",
        ", \"grid\": [64, 1, 1], \"block\": [128, 1, 1], \"registers per thread\": 90, "
        "\"shared memory\": 4096, \"blocks per SM\": 0.48, \"est. achieved occupancy %\": 12"),
      k("add_kernel", 7, 150, 160, 8, 5),
      k("graph_k1", 7, 165, 170, 9, 2),
      k("graph_k2", 7, 170, 172, 9, 2),
      k("matmul_add", 7, 40, 160, 0, 2, "gpu_user_annotation"),
      k("Memcpy HtoD (Pageable -> Device)", 8, 50, 60, 11, 0, "gpu_memcpy"),
      k("kernel_a", 9, 20, 30, 12, 0),
      k("kernel_b", 9, 120, 125, 13, 0),
      flow("s", 7, 100, 1, 30),
      flow("f", 7, 0, 7, 40),
      flow("s", 99, 100, 1, 70),
      "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 100, \"tid\": 1, \"args\": {\"name\": "
      "\"thread 1 (main)\"}}",
  };
  if (reversed) std::reverse(ev.begin(), ev.end());
  std::string out = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": "
                    "\"Test GPU\"}],\n";
  if (with_base_time) out += "  \"baseTimeNanoseconds\": 1700000000000000000,\n";
  out += "  \"traceEvents\": [\n";
  for (size_t i = 0; i < ev.size(); ++i) out += "  " + ev[i] + (i + 1 < ev.size() ? ",\n" : "\n");
  out += "  ],\n  \"traceName\": \"synthetic\"\n}\n";
  return out;
}

}  // namespace pil::test
