#pragma once
/// \file
/// Move-only owners of cuBLASLt descriptors, so a matmul needs no cleanup ladder.
#include <cublasLt.h>

#include <utility>

#include "cuda/check.h"

namespace pil::cuda {

/// A cuBLASLt descriptor and its destroy function, owned.
template <typename T, cublasStatus_t (*Destroy)(T)>
class LtHandle {
 public:
  LtHandle() = default;
  explicit LtHandle(T h) : h_(h) {}
  ~LtHandle() {
    if (h_) Destroy(h_);
  }
  LtHandle(LtHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  LtHandle& operator=(LtHandle&& o) noexcept {
    if (this != &o) {
      if (h_) Destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  T get() const { return h_; }

 private:
  T h_ = nullptr;
};

using LtMatmulDesc = LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using LtLayout = LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using LtPreference = LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

inline LtMatmulDesc make_matmul_desc(cublasComputeType_t compute, cudaDataType_t scale) {
  cublasLtMatmulDesc_t d = nullptr;
  PIL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, compute, scale));
  return LtMatmulDesc(d);
}

/// Sets one attribute of a matmul descriptor.
template <typename T>
void set_attribute(const LtMatmulDesc& desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  PIL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.get(), attribute, &value, sizeof value));
}

/// A column-major rows × cols matrix of `type` with leading dimension ld.
inline LtLayout make_layout(cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  PIL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  return LtLayout(l);
}

/// The heuristic's first choice of algorithm for this matmul, allowed up to `workspace_bytes`
/// of workspace (with no algorithm given, cublasLtMatmul would assume none). Throws Error when
/// cuBLASLt has no algorithm for these shapes, types and epilogue.
inline cublasLtMatmulAlgo_t best_algo(cublasLtHandle_t handle, const LtMatmulDesc& desc, const LtLayout& a,
                                      const LtLayout& b, const LtLayout& c, const LtLayout& d,
                                      size_t workspace_bytes) {
  cublasLtMatmulPreference_t p = nullptr;
  PIL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
  const LtPreference preference(p);
  const uint64_t bytes = workspace_bytes;
  PIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &bytes, sizeof bytes));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  PIL_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, desc.get(), a.get(), b.get(), c.get(), d.get(), p,
                                                  1, &result, &found));
  if (found == 0)
    throw Error("cuBLASLt has no algorithm for this matmul (its shapes, types or epilogue)");
  return result.algo;
}

}  // namespace pil::cuda
