#pragma once
/// \file
/// Plain answers from the CUDA runtime for messages and reports. Built with or without the CUDA
/// toolkit; without it each answer says so.
#include <cstdint>
#include <string>

namespace pil::cuda {

/// Empty when a CUDA device is usable; otherwise why not, in words ("no NVIDIA driver on this
/// machine (cudaGetDeviceCount: 35, CUDA driver version is insufficient for CUDA runtime
/// version)"): describe_device_count of what the runtime answered.
std::string unavailable_reason();

/// Why no CUDA device is usable, from cudaGetDeviceCount's answer, or "" when one is: `code` its
/// error (0: success; 35 cudaErrorInsufficientDriver, 100 cudaErrorNoDevice), `text` CUDA's words
/// for it, `count` the devices found, `driver_loaded` whether an NVIDIA kernel driver is loaded
/// (/proc/driver/nvidia/version). CUDA says "driver version is insufficient" (35) where there is
/// no driver at all, which reads as "update your driver" on a machine that has no GPU.
std::string describe_device_count(int code, const std::string& text, int count, bool driver_loaded);

/// The device's name ("NVIDIA H200"), or "CUDA device <i>" when it cannot be asked.
std::string device_name(int device);

/// Free bytes on the device, or 0 when unknown.
uint64_t free_memory(int device);

}  // namespace pil::cuda
