#pragma once
// The lesson's CUDA kernels, callable from host code built without nvcc (no CUDA types here).
#include <cstdint>

#include "cuda/element.h"

namespace lesson03 {

using pil::cuda::Element;

/// h = gelu_tanh(gate) * up, elementwise over `count` values, in one pass.
void geglu_forward(void* h, const void* gate, const void* up, int64_t count, Element type,
                   void* stream);

/// From dh: dgate = dh * up * gelu_tanh'(gate) and dup = dh * gelu_tanh(gate), in one pass.
void geglu_backward(void* dgate, void* dup, const void* dh, const void* gate, const void* up,
                    int64_t count, Element type, void* stream);

}  // namespace lesson03
