#pragma once
/// \file
/// Correct before fast: a result is compared with a float64 reference under a tolerance stated
/// per dtype, and NaN, infinity and all-zero output are rejected outright.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace pil {

/// An element passes when |out - ref| <= rtol * |ref| + atol, with atol = atol_scale * max|ref|:
/// relative where the reference is large, absolute (scaled to the data) where it is near zero.
struct Tolerance {
  double rtol = 0.0;
  double atol_scale = 0.0;
};

/// The tolerance for results computed in `dtype` (fp32 1e-4; bf16 1.6e-2; fp16 2e-3). Each is a
/// few units of the dtype's rounding error, so an accumulation in the wrong precision fails.
Tolerance tolerance_for(c10::ScalarType dtype);

/// The tolerance for fp32 products computed with TF32 inputs (CUDA's tensor cores): 10
/// explicit mantissa bits, as fp16, rounding 2^-11 per input, accumulated in fp32.
Tolerance tolerance_for_tf32();

struct Verdict {
  bool passed = false;
  std::string reason;  ///< why it failed, in one line; empty when passed
  int64_t elements = 0;
  int64_t mismatches = 0;
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;  ///< over elements where |ref| > atol
  double atol = 0.0;
  Tolerance tolerance;
  std::vector<std::string> first_mismatches;  ///< "[i, j] got 1.5, want 1.25"
  /// What was compared, when not the whole result ("a seeded sample of 8 of 64 rows: 3, 9, ...;
  /// --verify full checks all"): said after the figures.
  std::string scope;

  /// The lines to print: errors, tolerance and, on failure, the first mismatches; each line
  /// starts with `label` ("verify: max abs err ...").
  std::string describe(const std::string& label = "verify") const;
};

/// Empty when `out` could be a result: not empty, no NaN or infinity, not all zeros; else why not.
std::string unusable(const at::Tensor& out);

/// Compares `out` (any dtype, any device) with `ref` (float64, same shape) under `tolerance`
/// (tolerance_for(dtype) for a dtype's own).
Verdict verify(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tolerance);

}  // namespace pil
