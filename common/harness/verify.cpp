#include "harness/verify.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <sstream>

namespace pil {

Tolerance tolerance_for(c10::ScalarType dtype) {
  switch (dtype) {
    case at::kBFloat16: return {1.6e-2, 1.6e-2};  // 8 significant bits: 2^-8 = 3.9e-3 per rounding
    case at::kHalf: return {2e-3, 2e-3};          // 11 bits: 2^-11 = 4.9e-4 per rounding
    case at::kDouble: return {1e-10, 1e-10};
    default: return {1e-4, 1e-4};                 // fp32: 24 bits, plus summation order
  }
}

Tolerance tolerance_for_tf32() { return {5e-3, 5e-3}; }

namespace {

std::string index_text(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

}  // namespace

std::string unusable(const at::Tensor& out) {
  if (out.numel() == 0) return "output is empty";
  const at::Tensor t = out.detach();
  const int64_t not_finite = (~at::isfinite(t)).sum().item<int64_t>();
  if (not_finite > 0) return "output has " + std::to_string(not_finite) + " NaN or infinite values";
  if (t.abs().max().item<double>() == 0.0) return "output is all zeros";
  return {};
}

Verdict verify(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tolerance) {
  Verdict v;
  v.tolerance = tolerance;
  if (out.sizes() != ref.sizes()) {
    std::ostringstream s;
    s << "output shape " << out.sizes() << " differs from the reference shape " << ref.sizes();
    v.reason = s.str();
    return v;
  }
  const at::Tensor got = out.detach().to(at::kCPU, at::kDouble).contiguous();
  const at::Tensor want = ref.detach().to(at::kCPU, at::kDouble).contiguous();
  v.elements = got.numel();
  if (std::string why = unusable(got); !why.empty()) {
    v.reason = why;
    return v;
  }
  const at::Tensor abs_ref = want.abs();
  const at::Tensor err = (got - want).abs();
  v.atol = v.tolerance.atol_scale * abs_ref.max().item<double>();
  v.max_abs_err = err.max().item<double>();
  const at::Tensor meaningful = abs_ref > v.atol;
  if (meaningful.any().item<bool>())
    v.max_rel_err = (err.masked_select(meaningful) / abs_ref.masked_select(meaningful))
                        .max()
                        .item<double>();
  const at::Tensor bad = err > (v.tolerance.rtol * abs_ref + v.atol);
  v.mismatches = bad.sum().item<int64_t>();
  if (v.mismatches > 0) {
    const at::Tensor where = bad.flatten().nonzero().flatten().slice(0, 0, 5);
    const double* g = got.data_ptr<double>();
    const double* w = want.data_ptr<double>();
    for (int64_t i = 0; i < where.numel(); ++i) {
      const int64_t flat = where[i].item<int64_t>();
      char buf[96];
      std::snprintf(buf, sizeof buf, " got %.6g, want %.6g", g[flat], w[flat]);
      v.first_mismatches.push_back(index_text(flat, got.sizes()) + buf);
    }
    v.reason = std::to_string(v.mismatches) + " of " + std::to_string(v.elements) +
               " elements outside the tolerance";
    return v;
  }
  v.passed = true;
  return v;
}

std::string Verdict::describe(const std::string& label) const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                ": max abs err %.3g, max rel err %.3g over %lld elements; tolerance "
                "|out - ref| <= %.3g*|ref| + %.3g (= %.3g x max|ref|): %lld mismatches\n",
                max_abs_err, max_rel_err, static_cast<long long>(elements), tolerance.rtol, atol,
                tolerance.atol_scale, static_cast<long long>(mismatches));
  std::string s = label + buf;
  if (!scope.empty()) s += label + ": " + scope + "\n";
  for (const auto& m : first_mismatches) s += "  mismatch " + m + "\n";
  if (!passed) s += label + ": FAILED: " + reason + "\n";
  return s;
}

}  // namespace pil
