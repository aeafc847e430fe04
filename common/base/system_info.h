#pragma once
/// \file
/// Facts about the host that reports name: the CPU model and the memory that is free.
#include <cstdint>
#include <string>

namespace pil {

/// The CPU model as /proc/cpuinfo names it ("AMD EPYC 7B13"), or "unknown CPU".
std::string cpu_model_name();

/// Bytes of memory available to a new allocation (MemAvailable), or 0 when unknown.
uint64_t available_host_memory();

}  // namespace pil
