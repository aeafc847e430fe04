// fused_geglu: gelu(gate, tanh) * up in one pass over the intermediate, and its backward.
//
// Eager runs two kernels (gelu, then mul): gate is read, gelu(gate) written and read again, up
// read, the product written — five passes of batch·seq·hidden values. Fused: gate and up read,
// the product written — three. Arithmetic in fp32 whatever the storage type, rounded once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/element.cuh"
#include "kernels.h"

namespace lesson03 {
namespace {

using pil::cuda::from_float;
using pil::cuda::to_float;

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// gelu with the tanh approximation, and its derivative, as aten::gelu(approximate="tanh").
__device__ float gelu_tanh(float a) {
  const float t = tanhf(kSqrt2OverPi * (a + kCubic * a * a * a));
  return 0.5f * a * (1.0f + t);
}
__device__ float gelu_tanh_grad(float a) {
  const float t = tanhf(kSqrt2OverPi * (a + kCubic * a * a * a));
  const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kCubic * a * a);
  return 0.5f * (1.0f + t) + 0.5f * a * (1.0f - t * t) * dinner;
}

template <typename T>
__global__ void forward_kernel(T* __restrict__ h, const T* __restrict__ gate,
                               const T* __restrict__ up, int64_t count) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    h[i] = from_float<T>(gelu_tanh(to_float(gate[i])) * to_float(up[i]));
}

template <typename T>
__global__ void backward_kernel(T* __restrict__ dgate, T* __restrict__ dup,
                                const T* __restrict__ dh, const T* __restrict__ gate,
                                const T* __restrict__ up, int64_t count) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float a = to_float(gate[i]), u = to_float(up[i]), g = to_float(dh[i]);
    dgate[i] = from_float<T>(g * u * gelu_tanh_grad(a));
    dup[i] = from_float<T>(g * gelu_tanh(a));
  }
}

int grid_for(int64_t count, int threads) {
  const int64_t blocks = (count + threads - 1) / threads;
  return int(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

template <typename T>
void forward(void* h, const void* gate, const void* up, int64_t count, cudaStream_t s) {
  constexpr int kThreads = 256;
  forward_kernel<T><<<grid_for(count, kThreads), kThreads, 0, s>>>(
      static_cast<T*>(h), static_cast<const T*>(gate), static_cast<const T*>(up), count);
  PIL_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void backward(void* dgate, void* dup, const void* dh, const void* gate, const void* up,
              int64_t count, cudaStream_t s) {
  constexpr int kThreads = 256;
  backward_kernel<T><<<grid_for(count, kThreads), kThreads, 0, s>>>(
      static_cast<T*>(dgate), static_cast<T*>(dup), static_cast<const T*>(dh),
      static_cast<const T*>(gate), static_cast<const T*>(up), count);
  PIL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void geglu_forward(void* h, const void* gate, const void* up, int64_t count, Element type,
                   void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case Element::F32: return forward<float>(h, gate, up, count, s);
    case Element::BF16: return forward<__nv_bfloat16>(h, gate, up, count, s);
    case Element::F16: return forward<__half>(h, gate, up, count, s);
  }
}

void geglu_backward(void* dgate, void* dup, const void* dh, const void* gate, const void* up,
                    int64_t count, Element type, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case Element::F32: return backward<float>(dgate, dup, dh, gate, up, count, s);
    case Element::BF16: return backward<__nv_bfloat16>(dgate, dup, dh, gate, up, count, s);
    case Element::F16: return backward<__half>(dgate, dup, dh, gate, up, count, s);
  }
}

}  // namespace lesson03
