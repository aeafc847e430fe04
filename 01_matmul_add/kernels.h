#pragma once
// The lesson's CUDA kernels, callable from host code built without nvcc (no CUDA types here).
#include <cstdint>

#include "cuda/element.h"

namespace lesson01 {

using pil::cuda::Element;

/// y[i] += b[i] for i < count, on `stream` (a cudaStream_t), in one elementwise kernel.
void bias_add(void* y, const void* b, int64_t count, Element type, void* stream);

}  // namespace lesson01
