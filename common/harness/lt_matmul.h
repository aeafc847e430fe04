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
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

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

/// What one lt_matmul call reuses from the last call with the same LtPlanKey: descriptors and
/// the heuristic's algorithm.
struct LtPlan {
  cuda::LtMatmulDesc desc;
  cuda::LtLayout a, b, d;
  cublasLtMatmulAlgo_t algo{};
};

/// D (m × n, column-major; `d`'s buffer) = op(A)·op(B) (+ C, where `c` is given: a tensor laid
/// out as D, added with beta = 1), then the epilogue (bias: its pointer, or null). fp32
/// accumulation, with TF32 inputs for fp32 when LibTorch's fp32 matmul precision is TF32; the
/// dtype is d's. Runs on the current stream with LibTorch's cuBLASLt handle and workspace.
///
/// Every operand must be contiguous (the layouts say ld = rows). The algorithm is the
/// heuristic's first choice for the operands' real alignments, asked once per LtPlanKey and
/// kept with its descriptors for the thread's life (per thread, as LibTorch's handles are), so
/// a small matmul pays no heuristic in its timed calls. Throws cuda::Unavailable when cuBLASLt
/// has no algorithm for it.
inline void lt_matmul(const LtOperand& a, const LtOperand& b, at::Tensor& d, uint64_t m, uint64_t n,
                      cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT,
                      const void* bias = nullptr, const at::Tensor* c = nullptr) {
  for (const auto& [what, t] : {std::pair<const char*, const at::Tensor*>{"A", &a.tensor}, {"B", &b.tensor},
                                {"C", c}, {"D", &d}})
    if (t && !t->is_contiguous())
      throw cuda::Error(std::string("lt_matmul: operand ") + what +
                        " is not contiguous (its layout is given as rows x cols with ld = rows): "
                        "pass .contiguous()");
  const cudaDataType_t t = cuda_data_type(d.scalar_type());
  const bool tf32 = d.scalar_type() == at::kFloat &&
                    at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL) ==
                        at::Float32Precision::TF32;
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  auto align = [](const void* p) { return pointer_alignment(reinterpret_cast<uintptr_t>(p)); };
  LtPlanKey key;
  key.device = d.get_device();
  key.dtype = int(t);
  key.compute = int(compute);
  key.epilogue = int(epilogue);
  key.transpose_a = a.transpose, key.transpose_b = b.transpose;
  key.has_c = c != nullptr, key.has_bias = bias != nullptr;
  key.a_rows = a.rows, key.a_cols = a.cols, key.b_rows = b.rows, key.b_cols = b.cols, key.m = m, key.n = n;
  key.align_a = align(a.tensor.data_ptr()), key.align_b = align(b.tensor.data_ptr());
  key.align_c = align(c ? c->data_ptr() : d.data_ptr()), key.align_d = align(d.data_ptr());
  key.align_bias = bias ? align(bias) : 0;

  thread_local std::unordered_map<LtPlanKey, std::unique_ptr<LtPlan>, LtPlanKeyHash> plans;
  const cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  void* const workspace = at::cuda::getCUDABlasLtWorkspace();  // LibTorch's own, for this handle
  const size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  std::unique_ptr<LtPlan>& plan = plans[key];
  if (!plan) {
    auto fresh = std::make_unique<LtPlan>();
    fresh->desc = cuda::make_matmul_desc(compute, CUDA_R_32F);
    cuda::set_attribute(fresh->desc, CUBLASLT_MATMUL_DESC_TRANSA, a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N);
    cuda::set_attribute(fresh->desc, CUBLASLT_MATMUL_DESC_TRANSB, b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N);
    cuda::set_attribute(fresh->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
    if (bias) cuda::set_attribute(fresh->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    fresh->a = cuda::make_layout(t, a.rows, a.cols, int64_t(a.rows));
    fresh->b = cuda::make_layout(t, b.rows, b.cols, int64_t(b.rows));
    fresh->d = cuda::make_layout(t, m, n, int64_t(m));
    try {
      fresh->algo = cuda::best_algo(handle, fresh->desc, fresh->a, fresh->b, fresh->d, fresh->d, workspace_bytes,
                                    {key.align_a, key.align_b, key.align_c, key.align_d});
    } catch (...) {
      plans.erase(key);
      throw;
    }
    plan = std::move(fresh);
  }
  if (bias) cuda::set_attribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  const float alpha = 1.0f, beta = c ? 1.0f : 0.0f;
  PIL_CUBLAS_CHECK(cublasLtMatmul(handle, plan->desc.get(), &alpha, a.tensor.data_ptr(), plan->a.get(),
                                  b.tensor.data_ptr(), plan->b.get(), &beta, c ? c->data_ptr() : d.data_ptr(),
                                  plan->d.get(), d.data_ptr(), plan->d.get(), &plan->algo, workspace,
                                  workspace_bytes, at::cuda::getCurrentCUDAStream().stream()));
}

}  // namespace pil
