#pragma once
/// \file
/// Plain answers from the CUDA runtime for messages and reports. Built with or without the CUDA
/// toolkit; without it each answer says so.
#include <cstdint>
#include <string>

namespace pil::cuda {

/// Empty when a CUDA device is usable; otherwise why not, in words
/// ("CUDA driver version is insufficient for CUDA runtime version (cudaGetDeviceCount: 35)").
std::string unavailable_reason();

/// The device's name ("NVIDIA H200"), or "CUDA device <i>" when it cannot be asked.
std::string device_name(int device);

/// Free bytes on the device, or 0 when unknown.
uint64_t free_memory(int device);

/// The CUDA runtime version as "13.0", or "none".
std::string runtime_version();

}  // namespace pil::cuda
