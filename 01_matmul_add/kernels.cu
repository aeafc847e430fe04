// The hand-written half of the cublas_bias_kernel variant: y += b after cuBLAS wrote y = x·w.
// One thread per element in a grid-stride loop; the sum is taken in fp32 whatever the storage
// type, then rounded once, as aten::add does.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/element.cuh"
#include "kernels.h"

namespace lesson01 {
namespace {

using pil::cuda::from_float;
using pil::cuda::to_float;

template <typename T>
__global__ void bias_add_kernel(T* __restrict__ y, const T* __restrict__ b, int64_t count) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    y[i] = from_float<T>(to_float(y[i]) + to_float(b[i]));
}

template <typename T>
void launch(void* y, const void* b, int64_t count, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  const int grid = int(blocks < 65535 * 8 ? blocks : 65535 * 8);
  bias_add_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(b), count);
  PIL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void bias_add(void* y, const void* b, int64_t count, Element type, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case Element::F32: return launch<float>(y, b, count, s);
    case Element::BF16: return launch<__nv_bfloat16>(y, b, count, s);
    case Element::F16: return launch<__half>(y, b, count, s);
  }
}

}  // namespace lesson01
