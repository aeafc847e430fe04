#pragma once
/// \file
/// One cublasLtMatmul on row-major LibTorch tensors, with an epilogue. For lesson code built with
/// CUDA (PIL_LESSON_CUDA) only.
///
/// cuBLASLt is column-major: a row-major [r, c] buffer is, to it, the column-major [c, r] matrix —
/// the transpose. So a layer's y = x·Wᵀ (+ b) is asked for as yᵀ = W·xᵀ (+ b per row of yᵀ), which
/// is the shape the BIAS epilogue adds, and the GELU epilogue applies elementwise either way.
#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>

#include <cstdint>

#include "cuda/cublaslt.h"
#include "harness/cuda_types.h"
#include "harness/lt_shapes.h"

namespace pil {

/// One operand as cuBLASLt sees it: the tensor's buffer read as a column-major rows × cols
/// matrix (ld = rows), transposed or not on the way in.
struct LtOperand {
  const at::Tensor& tensor;
  bool transpose;
  uint64_t rows, cols;
};

/// D (m × n, column-major; `d`'s buffer) = op(A)·op(B) (+ C, where `c` is given: a tensor laid
/// out as D, added with beta = 1), then the epilogue (bias: its pointer, or null). fp32
/// accumulation, with TF32 inputs for fp32 when LibTorch's fp32 matmul precision is TF32; the
/// dtype is d's. Runs on the current stream with LibTorch's cuBLASLt handle and workspace and
/// the heuristic's algorithm.
inline void lt_matmul(const LtOperand& a, const LtOperand& b, at::Tensor& d, uint64_t m, uint64_t n,
                      cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT,
                      const void* bias = nullptr, const at::Tensor* c = nullptr) {
  const cudaDataType_t t = cuda_data_type(d.scalar_type());
  const bool tf32 = d.scalar_type() == at::kFloat &&
                    at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL) ==
                        at::Float32Precision::TF32;
  const auto desc = cuda::make_matmul_desc(tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cuda::set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N);
  cuda::set_attribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N);
  cuda::set_attribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  if (bias) cuda::set_attribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  const auto la = cuda::make_layout(t, a.rows, a.cols, int64_t(a.rows));
  const auto lb = cuda::make_layout(t, b.rows, b.cols, int64_t(b.rows));
  const auto ld = cuda::make_layout(t, m, n, int64_t(m));
  const cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  void* const workspace = at::cuda::getCUDABlasLtWorkspace();  // LibTorch's own, for this handle
  const size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  const cublasLtMatmulAlgo_t algo = cuda::best_algo(handle, desc, la, lb, ld, ld, workspace_bytes);
  const float alpha = 1.0f, beta = c ? 1.0f : 0.0f;
  PIL_CUBLAS_CHECK(cublasLtMatmul(handle, desc.get(), &alpha, a.tensor.data_ptr(), la.get(),
                                  b.tensor.data_ptr(), lb.get(), &beta, c ? c->data_ptr() : d.data_ptr(),
                                  ld.get(), d.data_ptr(), ld.get(), &algo, workspace, workspace_bytes,
                                  at::cuda::getCurrentCUDAStream().stream()));
}

}  // namespace pil
