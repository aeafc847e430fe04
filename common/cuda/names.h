#pragma once
/// \file
/// Names as CUPTI hands them over, turned into the names Kineto writes, so a trace from the
/// project's CUPTI tracer names calls and kernels exactly as LibTorch's profiler does and
/// pil-trace recognises them alike. Plain C++: built and tested without CUDA.
#include <string>
#include <string_view>

namespace pil::cuda {

/// A runtime or driver API name without CUPTI's version suffix, as Kineto names it:
/// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel", "cudaGraphLaunch_v10000" -> "cudaGraphLaunch",
/// "cudaLaunchKernel_ptsz_v7000" -> "cudaLaunchKernel_ptsz". A name without one is returned as is.
std::string_view api_name(std::string_view cupti_name);

/// A kernel name demangled as Kineto shows it ("_Z10add_kernelPfi" -> "add_kernel(float*, int)");
/// a name that is not a mangled C++ name (or fails to demangle) is returned as is.
std::string kernel_name(std::string_view cupti_name);

}  // namespace pil::cuda
