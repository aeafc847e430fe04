#pragma once
/// \file
/// The shapes pil::lt_matmul (harness/lt_matmul.h) can take, checked before a variant runs, so a
/// bad one is a usage error that names the flags. Plain C++: built and tested without CUDA.
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
