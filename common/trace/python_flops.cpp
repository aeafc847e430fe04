// FLOPs as torch's profiler counts them with with_flops=True (python_flops.h), from the recorded
// inputs: the same checks and the same unsigned arithmetic as torch/csrc/profiler/util.cpp.
#include "trace/python_flops.h"

#include <charconv>
#include <optional>
#include <vector>

#include "trace/roofline_formulas.h"  // dtype_bytes

namespace pil::trace {
namespace {

/// What torch's isTensor() says of a recorded argument: a tensor's "Input type" is its dtype.
bool is_tensor(const InputArg& a) {
  return !a.is_list && (dtype_bytes(a.type) > 0 || a.type.rfind("c10::", 0) == 0);
}

/// "[1, 1]" or "1" (a "Concrete Inputs" value) as integers; nothing when it is not that.
std::optional<std::vector<int64_t>> integers(std::string_view s) {
  std::vector<int64_t> out;
  size_t i = 0;
  const bool list = !s.empty() && s.front() == '[';
  if (list) {
    if (s.back() != ']') return std::nullopt;
    s = s.substr(1, s.size() - 2);
  }
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    if (i == s.size()) break;
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
    if (ec != std::errc()) return std::nullopt;
    out.push_back(v);
    i = size_t(end - s.data());
  }
  if (!list && out.size() != 1) return std::nullopt;
  return out;
}

uint64_t elements(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) n *= uint64_t(d);
  return n;
}

uint64_t matrix_product(const std::vector<int64_t>& mat1, const std::vector<int64_t>& mat2, bool batched) {
  if (mat1.empty()) return 0;
  const int64_t batch = mat1.front(), overlap = mat1.back();
  if ((batched && batch == 0) || overlap == 0) return 0;
  uint64_t flops = elements(mat1);
  flops /= uint64_t(overlap);
  if (batched) flops /= uint64_t(batch);
  flops *= elements(mat2);
  return flops * 2;
}

uint64_t conv2d(const OpInputs& in) {
  if (in.args.size() < 7 || !is_tensor(in.args[0]) || !is_tensor(in.args[1])) return 0;
  const std::vector<int64_t>& input = in.args[0].dims;
  const std::vector<int64_t>& weight = in.args[1].dims;
  if (weight.size() != 4 || input.size() != 4) return 0;
  const auto stride = integers(in.args[3].concrete), padding = integers(in.args[4].concrete),
             dilation = integers(in.args[5].concrete), groups = integers(in.args[6].concrete);
  if (!stride || !padding || !dilation || !groups || groups->size() != 1) return 0;
  const uint64_t g = uint64_t((*groups)[0]);
  if (!g || padding->size() != 2 || dilation->size() != 2) return 0;
  if (stride->size() != 2 || (*stride)[0] * (*stride)[1] == 0) return 0;
  const uint64_t n = uint64_t(input[0]), c = uint64_t(input[1]), h = uint64_t(input[2]),
                 w = uint64_t(input[3]);
  const uint64_t o = uint64_t(weight[0]), kh = uint64_t(weight[2]), kw = uint64_t(weight[3]);
  const uint64_t out_h =
      (h + 2 * uint64_t((*padding)[0]) - uint64_t((*dilation)[0]) * (kh - 1) - 1) / uint64_t((*stride)[0]) + 1;
  const uint64_t out_w =
      (w + 2 * uint64_t((*padding)[1]) - uint64_t((*dilation)[1]) * (kw - 1) - 1) / uint64_t((*stride)[1]) + 1;
  return 2 * n * out_h * out_w * kh * kw * c * o / g;
}

}  // namespace

bool counts_python_flops(std::string_view op) {
  return op == "aten::mm" || op == "aten::addmm" || op == "aten::bmm" || op == "aten::baddbmm" ||
         op == "aten::mul" || op == "aten::add" || op == "aten::conv2d";
}

uint64_t python_flops(std::string_view op, const OpInputs& in) {
  const auto& a = in.args;
  auto tensors = [&](size_t n) {
    if (a.size() < n) return false;
    for (size_t i = 0; i < n; ++i)
      if (!is_tensor(a[i])) return false;
    return true;
  };
  if (op == "aten::mm") return tensors(2) ? matrix_product(a[0].dims, a[1].dims, false) : 0;
  if (op == "aten::addmm") return tensors(3) ? matrix_product(a[1].dims, a[2].dims, false) : 0;
  if (op == "aten::bmm") return tensors(2) ? matrix_product(a[0].dims, a[1].dims, true) : 0;
  if (op == "aten::baddbmm") return tensors(3) ? matrix_product(a[1].dims, a[2].dims, true) : 0;
  if (op == "aten::mul" || op == "aten::add") return tensors(1) ? elements(a[0].dims) : 0;
  if (op == "aten::conv2d") return conv2d(in);
  return 0;
}

}  // namespace pil::trace
