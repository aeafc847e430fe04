#pragma once
/// \file
/// Move-only owners of cuBLASLt descriptors, so a matmul needs no cleanup ladder.
#include <cublasLt.h>

#include <cstdint>
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

/// How aligned the operands' pointers are, in bytes (powers of two up to 256), as cuBLASLt's
/// heuristic must be told: it assumes 256 unless told less, and may then pick an algorithm
/// whose wide loads a less-aligned pointer (a view at an offset) cannot take.
struct LtAlignment {
  uint32_t a = 256, b = 256, c = 256, d = 256;
};

/// The heuristic's first choice of algorithm for this matmul, allowed up to `workspace_bytes`
/// of workspace (with no algorithm given, cublasLtMatmul would assume none). Throws Unavailable
/// when cuBLASLt has no algorithm for these shapes, types, alignments and epilogue (an
/// epilogue such as BGRADB is not offered for every dtype on every GPU).
inline cublasLtMatmulAlgo_t best_algo(cublasLtHandle_t handle, const LtMatmulDesc& desc, const LtLayout& a,
                                      const LtLayout& b, const LtLayout& c, const LtLayout& d,
                                      size_t workspace_bytes, const LtAlignment& align = {}) {
  cublasLtMatmulPreference_t p = nullptr;
  PIL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
  const LtPreference preference(p);
  const uint64_t bytes = workspace_bytes;
  PIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &bytes, sizeof bytes));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align.a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align.b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align.c},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align.d}};
  for (const auto& [attribute, value] : alignments)
    PIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attribute, &value, sizeof value));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc.get(), a.get(), b.get(), c.get(),
                                                               d.get(), p, 1, &result, &found);
  // NOT_SUPPORTED is cuBLASLt's answer "no algorithm for this", as is found == 0.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0))
    throw Unavailable("cuBLASLt has no algorithm for this matmul here (its shapes, types, alignments or "
                      "epilogue): cublasLtMatmulAlgoGetHeuristic found none");
  PIL_CUBLAS_CHECK(status);
  return result.algo;
}

}  // namespace pil::cuda
