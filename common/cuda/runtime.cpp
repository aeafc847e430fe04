#include "cuda/runtime.h"

#if PIL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace pil::cuda {

#if PIL_HAVE_CUDA

std::string unavailable_reason() {
  int count = 0;  // cudaGetDeviceCount leaves it untouched on some errors
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    return std::string(cudaGetErrorString(err)) + " (cudaGetDeviceCount: " +
           std::to_string(int(err)) + ")";
  if (count == 0) return "no CUDA device found";
  return {};
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) return prop.name;
  return "CUDA device " + std::to_string(device);
}

uint64_t free_memory(int device) {
  int previous = 0;
  size_t free_bytes = 0, total = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) return 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) free_bytes = 0;
  cudaSetDevice(previous);
  return free_bytes;
}

std::string runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "none";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

#else  // built without the CUDA toolkit

std::string unavailable_reason() { return "this build has no CUDA toolkit (PIL_WITH_CUDA off or none found)"; }
std::string device_name(int device) { return "CUDA device " + std::to_string(device); }
uint64_t free_memory(int) { return 0; }
std::string runtime_version() { return "none"; }

#endif

}  // namespace pil::cuda
