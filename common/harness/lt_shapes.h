#pragma once
/// \file
/// The shapes pil::lt_matmul (harness/lt_matmul.h) can take, checked before a variant runs, so a
/// bad one is a usage error that names the flags. Plain C++: built and tested without CUDA.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pil {

/// A dimension as the user sets it: the flag(s) and the value ("--in-features", 33).
using LtDim = std::pair<std::string, int64_t>;

/// What lt_matmul can take, as a usage message for variant `who` (empty when it can): every
/// dimension in `dims` at least 2 (cuBLASLt's heuristic refuses single-row matrices, and
/// LibTorch avoids cuBLASLt there too), and with a 16-bit dtype every row length in `rows` a
/// multiple of 8 (rows of 16 bytes, as cuBLASLt wants them aligned).
inline std::string lt_shape_problem(const std::string& who, bool sixteen_bit,
                                    const std::vector<LtDim>& dims, const std::vector<LtDim>& rows) {
  auto them = [](const std::vector<LtDim>& ds) { return ds.size() > 1 ? "each of them" : "it"; };
  auto named = [](const std::vector<LtDim>& ds) {
    std::string s;
    for (const auto& [flag, value] : ds) s += (s.empty() ? "" : " ") + flag + " " + std::to_string(value);
    return s;
  };
  for (const auto& d : dims)
    if (d.second < 2)
      return named(dims) + ": for " + who + ", " + them(dims) +
             " must be at least 2 (cuBLASLt refuses single-row matrices); allowed: 2 or more";
  if (sixteen_bit)
    for (const auto& r : rows)
      if (r.second % 8 != 0)
        return named(rows) + ": for " + who + " with a 16-bit dtype, " + them(rows) +
               " must be a multiple of 8 (rows of 16 bytes); allowed: 8, 16, 24, ... or --dtype fp32";
  return {};
}

}  // namespace pil

namespace pil {

/// The largest power of two, up to 256, that divides `address`: the alignment cuBLASLt's
/// heuristic is told an operand has (its MIN_ALIGNMENT preferences; left at their 256-byte
/// default, an algorithm may be picked that reads a less-aligned pointer with wide loads).
inline uint32_t pointer_alignment(uintptr_t address) {
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

/// Everything cuBLASLt's heuristic sees of one lt_matmul call: the descriptors and the chosen
/// algorithm depend on these alone, so calls with equal keys reuse them (the heuristic and
/// descriptor creation cost microseconds per call, which at size 64 is most of a step). Plain
/// integers, so the key is tested without CUDA; the bias and C pointers themselves are not in
/// it (they are set on the cached descriptor per call), only their alignment.
struct LtPlanKey {
  int device = 0;
  int dtype = 0;      ///< cudaDataType_t of A, B, C and D
  int compute = 0;    ///< cublasComputeType_t (TF32 or not)
  int epilogue = 0;   ///< cublasLtEpilogue_t
  bool transpose_a = false, transpose_b = false, has_c = false, has_bias = false;
  uint64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0, m = 0, n = 0;
  uint32_t align_a = 0, align_b = 0, align_c = 0, align_d = 0, align_bias = 0;

  bool operator==(const LtPlanKey& o) const {
    return device == o.device && dtype == o.dtype && compute == o.compute && epilogue == o.epilogue &&
           transpose_a == o.transpose_a && transpose_b == o.transpose_b && has_c == o.has_c &&
           has_bias == o.has_bias && a_rows == o.a_rows && a_cols == o.a_cols && b_rows == o.b_rows &&
           b_cols == o.b_cols && m == o.m && n == o.n && align_a == o.align_a && align_b == o.align_b &&
           align_c == o.align_c && align_d == o.align_d && align_bias == o.align_bias;
  }
};

struct LtPlanKeyHash {
  size_t operator()(const LtPlanKey& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
    auto mix = [&h](uint64_t v) {
      for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
    };
    for (uint64_t v : {uint64_t(k.device), uint64_t(k.dtype), uint64_t(k.compute), uint64_t(k.epilogue),
                       uint64_t(k.transpose_a) | uint64_t(k.transpose_b) << 1 | uint64_t(k.has_c) << 2 |
                           uint64_t(k.has_bias) << 3,
                       k.a_rows, k.a_cols, k.b_rows, k.b_cols, k.m, k.n,
                       uint64_t(k.align_a) | uint64_t(k.align_b) << 16 | uint64_t(k.align_c) << 32 |
                           uint64_t(k.align_d) << 48,
                       uint64_t(k.align_bias)})
      mix(v);
    return size_t(h);
  }
};

}  // namespace pil
