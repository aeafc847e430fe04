// fused_geglu: gelu(gate, tanh) * up in one pass over the intermediate, and its backward.
//
// Eager runs two kernels (gelu, then mul): gate is read, gelu(gate) written and read again, up
// read, the product written — five passes of batch·seq·hidden values. Fused: gate and up read,
// the product written — three. Arithmetic in fp32 whatever the storage type, rounded once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

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

// Each thread moves 16 bytes per load (8 bf16/fp16 or 4 fp32 values), as a copy does at full
// bandwidth; one value per load would leave much of it unused. `packs` such groups are read
// whole where every pointer is 16-byte aligned; the values after them (and all values, when a
// pointer is not aligned) one at a time.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kValues = 16 / sizeof(T);
  T v[kValues];
};

template <typename T>
__device__ T forward_one(T gate, T up) {
  return from_float<T>(gelu_tanh(to_float(gate)) * to_float(up));
}

template <typename T>
__global__ void forward_kernel(T* __restrict__ h, const T* __restrict__ gate,
                               const T* __restrict__ up, int64_t count, int64_t packs) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t p = first; p < packs; p += stride) {
    const Pack<T> a = reinterpret_cast<const Pack<T>*>(gate)[p];
    const Pack<T> u = reinterpret_cast<const Pack<T>*>(up)[p];
    Pack<T> out;
#pragma unroll
    for (int k = 0; k < Pack<T>::kValues; ++k) out.v[k] = forward_one(a.v[k], u.v[k]);
    reinterpret_cast<Pack<T>*>(h)[p] = out;
  }
  for (int64_t i = packs * Pack<T>::kValues + first; i < count; i += stride)
    h[i] = forward_one(gate[i], up[i]);
}

template <typename T>
__device__ void backward_one(T& dgate, T& dup, T dh, T gate, T up) {
  const float a = to_float(gate), u = to_float(up), g = to_float(dh);
  dgate = from_float<T>(g * u * gelu_tanh_grad(a));
  dup = from_float<T>(g * gelu_tanh(a));
}

template <typename T>
__global__ void backward_kernel(T* __restrict__ dgate, T* __restrict__ dup,
                                const T* __restrict__ dh, const T* __restrict__ gate,
                                const T* __restrict__ up, int64_t count, int64_t packs) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t p = first; p < packs; p += stride) {
    const Pack<T> a = reinterpret_cast<const Pack<T>*>(gate)[p];
    const Pack<T> u = reinterpret_cast<const Pack<T>*>(up)[p];
    const Pack<T> g = reinterpret_cast<const Pack<T>*>(dh)[p];
    Pack<T> da, du;
#pragma unroll
    for (int k = 0; k < Pack<T>::kValues; ++k) backward_one(da.v[k], du.v[k], g.v[k], a.v[k], u.v[k]);
    reinterpret_cast<Pack<T>*>(dgate)[p] = da;
    reinterpret_cast<Pack<T>*>(dup)[p] = du;
  }
  for (int64_t i = packs * Pack<T>::kValues + first; i < count; i += stride)
    backward_one(dgate[i], dup[i], dh[i], gate[i], up[i]);
}

constexpr int kThreads = 256;

/// How a launch covers `count` values: whole 16-byte packs when every pointer is aligned, then
/// the values after them one at a time; one thread per pack or leftover value.
template <typename T>
struct Plan {
  int64_t packs = 0;
  int blocks = 1;
  Plan(int64_t count, std::initializer_list<const void*> pointers) {
    bool aligned = true;
    for (const void* p : pointers) aligned = aligned && reinterpret_cast<uintptr_t>(p) % 16 == 0;
    packs = aligned ? count / Pack<T>::kValues : 0;
    const int64_t work = packs > 0 ? packs + count % Pack<T>::kValues : count;
    const int64_t b = (work + kThreads - 1) / kThreads;
    blocks = int(b < 1 ? 1 : b < 65535 * 8 ? b : 65535 * 8);
  }
};

template <typename T>
void forward(void* h, const void* gate, const void* up, int64_t count, cudaStream_t s) {
  const Plan<T> plan(count, {h, gate, up});
  forward_kernel<T><<<plan.blocks, kThreads, 0, s>>>(
      static_cast<T*>(h), static_cast<const T*>(gate), static_cast<const T*>(up), count, plan.packs);
  PIL_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void backward(void* dgate, void* dup, const void* dh, const void* gate, const void* up,
              int64_t count, cudaStream_t s) {
  const Plan<T> plan(count, {dgate, dup, dh, gate, up});
  backward_kernel<T><<<plan.blocks, kThreads, 0, s>>>(
      static_cast<T*>(dgate), static_cast<T*>(dup), static_cast<const T*>(dh),
      static_cast<const T*>(gate), static_cast<const T*>(up), count, plan.packs);
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
