#include "cuda/runtime.h"

#include <filesystem>
#include <system_error>

#if PIL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace pil::cuda {

std::string describe_device_count(int code, const std::string& text, int count, bool driver_loaded) {
  const std::string asked = "cudaGetDeviceCount: " + std::to_string(code);
  if (code == 0) return count > 0 ? "" : "no CUDA device found";
  if (code == 100) return "no CUDA device found (" + asked + ", " + text + ")";
  if (code == 35 && !driver_loaded) return "no NVIDIA driver on this machine (" + asked + ", " + text + ")";
  if (code == 35)
    return "the NVIDIA driver is older than this build's CUDA runtime needs (" + asked + ", " + text + ")";
  return text + " (" + asked + ")";
}

#if PIL_HAVE_CUDA

std::string unavailable_reason() {
  int count = 0;  // cudaGetDeviceCount leaves it untouched on some errors
  const cudaError_t err = cudaGetDeviceCount(&count);
  std::error_code ec;
  const bool driver_loaded = std::filesystem::exists("/proc/driver/nvidia/version", ec);
  return describe_device_count(int(err), err == cudaSuccess ? "" : cudaGetErrorString(err), count, driver_loaded);
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

#else  // built without the CUDA toolkit

std::string unavailable_reason() { return "this build has no CUDA toolkit (PIL_WITH_CUDA off or none found)"; }
std::string device_name(int device) { return "CUDA device " + std::to_string(device); }
uint64_t free_memory(int) { return 0; }
std::string runtime_version() { return "none"; }

#endif

}  // namespace pil::cuda
