#pragma once
/// \file
/// Loading and storing the storage types the lessons' kernels take (fp32, bf16, fp16) as fp32:
/// kernels compute in fp32 and round once when they store.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace pil::cuda {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }

template <typename T> __device__ T from_float(float v);
template <> __device__ inline float from_float<float>(float v) { return v; }
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ inline __half from_float<__half>(float v) { return __float2half(v); }

}  // namespace pil::cuda
