#pragma once
/// \file
/// A LibTorch dtype as the CUDA libraries and the lessons' kernels name it. For lesson code
/// built with CUDA (PIL_LESSON_CUDA) only.
#include <c10/core/ScalarType.h>
#include <library_types.h>

#include "cuda/element.h"

namespace pil {

/// fp32, bf16 or fp16 as cuBLAS/cuBLASLt's cudaDataType_t.
inline cudaDataType_t cuda_data_type(c10::ScalarType t) {
  return t == c10::kBFloat16 ? CUDA_R_16BF : t == c10::kHalf ? CUDA_R_16F : CUDA_R_32F;
}

/// fp32, bf16 or fp16 as the kernels' element type.
inline cuda::Element kernel_element(c10::ScalarType t) {
  return t == c10::kBFloat16 ? cuda::Element::BF16
         : t == c10::kHalf   ? cuda::Element::F16
                             : cuda::Element::F32;
}

}  // namespace pil
