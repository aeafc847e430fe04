#pragma once
/// \file
/// A CUPTI activity tracer for code that bypasses LibTorch (raw cuBLAS, cuBLASLt, hand-written
/// kernels): it records CUDA runtime and driver calls, kernels with their launch shapes, copies,
/// sets and NVTX ranges, joined by correlation ids, and writes them in the trace format Kineto
/// writes (pil-trace, Perfetto and chrome://tracing read it alike).
///
/// CUPTI takes one subscriber per process: never use it while LibTorch's profiler traces CUDA.
/// Built only with the CUDA toolkit's CUPTI; needs a GPU to record anything.
#include <filesystem>
#include <memory>

#include "trace/trace.h"

namespace pil::cuda {

class CuptiTracer {
 public:
  CuptiTracer();
  ~CuptiTracer();
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  /// NVTX ranges reach CUPTI only when NVTX loads CUPTI as its tool: call this before the first
  /// NVTX range of the process (it sets NVTX_INJECTION64_PATH unless the user set it).
  static void route_nvtx_to_cupti();

  void start();
  /// Stops recording and collects every buffered record (waits for the GPU's work first).
  void stop();
  const trace::Trace& trace() const;
  void save(const std::filesystem::path& path) const;

  /// Takes one CUPTI activity record (a CUpti_Activity*); called from CUPTI's buffer callback.
  void collect(const void* record);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pil::cuda
