// Name families for the rules of `pil-trace advise` (names.h): tests on the names Kineto writes.
#include "trace/advise/names.h"

#include <cctype>
#include <initializer_list>
#include <string>

#include "base/command_line.h"  // lowercase

namespace pil::trace::advise_rules {
namespace {

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

bool has_any(std::string_view s, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts)
    if (has(s, p)) return true;
  return false;
}


/// `part` where it starts a word: at the start or after a character that is not a letter
/// ("ampere_sgemm_128x64", "cutlass_80_simt_sgemm"; not the "sGemm" of "cublasGemmk1Params").
bool has_at_word_start(std::string_view s, std::string_view part) {
  for (size_t at = s.find(part); at != std::string_view::npos; at = s.find(part, at + 1))
    if (at == 0 || !std::isalpha(static_cast<unsigned char>(s[at - 1]))) return true;
  return false;
}

bool one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (s == n) return true;
  return false;
}

}  // namespace

std::string kernel_base_name(std::string_view kernel) {
  if (kernel.rfind("void ", 0) == 0) kernel.remove_prefix(5);
  constexpr std::string_view anonymous = "(anonymous namespace)";
  std::string out;
  for (size_t i = 0; i < kernel.size(); ++i) {
    if (kernel.compare(i, anonymous.size(), anonymous) == 0) {
      out += anonymous;
      i += anonymous.size() - 1;
      continue;
    }
    if (kernel[i] == '<' || kernel[i] == '(') break;
    out += kernel[i];
  }
  return out;
}

std::string kernel_label(std::string_view kernel) {
  // The functor or implementation among the template arguments, where there is one.
  const size_t lt = kernel.find('<');
  auto is_id = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  if (lt != std::string_view::npos)
    for (std::string_view mark : {"Functor", "_kernel", "_impl"})
      if (const size_t at = kernel.find(mark, lt + 1); at != std::string_view::npos) {
        size_t b = at, e = at;
        while (b > 0 && is_id(kernel[b - 1])) --b;
        while (e < kernel.size() && is_id(kernel[e])) ++e;
        return std::string(kernel.substr(b, e - b));
      }
  std::string base = kernel_base_name(kernel);
  constexpr std::string_view anonymous = "(anonymous namespace)::";
  for (size_t at; (at = base.find(anonymous)) != std::string::npos;) base.erase(at, anonymous.size());
  return base.substr(0, 60);
}

bool is_kernel_launch_call(std::string_view call) {
  // cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch: one call, a graph of kernels.
  return has_any(call, {"LaunchKernel", "LaunchCooperativeKernel", "GraphLaunch"});
}

bool is_sync_copy_call(std::string_view call) { return has(call, "Memcpy") && !has(call, "Async"); }

bool is_copy_call(std::string_view call) { return has(call, "Memcpy"); }

bool is_pageable_copy(std::string_view copy) { return has(copy, "Pageable"); }
bool is_copy_to_host(std::string_view copy) { return has(copy, "DtoH"); }
bool is_copy_to_device(std::string_view copy) { return has(copy, "HtoD"); }

bool is_gemm_kernel(std::string_view kernel) {
  if (is_elementwise_kernel(kernel)) return false;
  const std::string n = lowercase(kernel);
  return has_any(n, {"gemm", "gemv", "splitkreduce", "cublaslt"}) || n.rfind("nvjet", 0) == 0 ||
         kernel.rfind("Cijk_", 0) == 0 || kernel_base_name(kernel).rfind("epilogue::", 0) == 0;
}

bool is_convolution_kernel(std::string_view kernel) {
  const std::string n = lowercase(kernel_base_name(kernel));
  return has_any(n, {"conv", "scudnn", "hcudnn", "winograd", "dgrad", "wgrad", "fprop"});
}

bool is_elementwise_kernel(std::string_view kernel) {
  return has(kernel_base_name(kernel), "elementwise_kernel");
}

bool is_softmax_kernel(std::string_view kernel) {
  const std::string b = lowercase(kernel_base_name(kernel)), n = lowercase(kernel);
  return has(b, "softmax") && !has(n, "logsoftmax") && !has(n, "log_softmax") &&
         !has(b, "backward");
}

bool is_fp32_simt_gemm_kernel(std::string_view kernel) {
  const std::string n = lowercase(kernel);
  // "sgemm" as a word of its own: cuBLAS's gemmk1 and gemmSN kernels take a cublasGemm...Params
  // argument, whatever their element type (__nv_bfloat16 included), and say nothing of FFMA.
  return is_gemm_kernel(kernel) && !is_convolution_kernel(kernel) &&
         (has_at_word_start(n, "sgemm") || has_any(n, {"_ffma", "gemm_f32f32_f32f32"})) &&
         !has_any(n, {"tf32", "tensorop", "s1688", "s16816", "hmma", "wmma", "h16816", "i8816",
                      "bf16", "f16", "bfloat16", "__half"});
}

bool is_gemm_op(std::string_view op) {
  if (one_of(op, {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
                  "aten::linear", "aten::einsum", "aten::_addmm_activation", "aten::addbmm"}))
    return true;
  return op.rfind("aoti_torch_", 0) == 0 && has_any(op, {"_mm_out", "_addmm_out", "_bmm_out"});
}

bool is_elementwise_op(std::string_view op) {
  if (op.rfind("aten::", 0) != 0) return false;
  std::string_view n = op.substr(6);
  if (!n.empty() && n.back() == '_') n.remove_suffix(1);  // in place: mul_, add_
  return one_of(n, {"add",     "sub",   "mul",   "div",      "neg",        "gelu",  "relu",
                    "silu",    "sigmoid", "tanh", "exp",     "log",        "sqrt",  "rsqrt",
                    "pow",     "abs",   "erf",   "clamp",    "clamp_min",  "where", "leaky_relu",
                    "hardswish", "mish", "softplus", "reciprocal", "square", "addcmul",
                    "addcdiv", "lerp"});
}

bool is_view_op(std::string_view op) {
  return one_of(op, {"aten::t", "aten::transpose", "aten::view", "aten::reshape", "aten::permute",
                     "aten::select", "aten::slice", "aten::expand", "aten::as_strided",
                     "aten::unsqueeze", "aten::squeeze", "aten::_unsafe_view",
                     "aten::_reshape_alias", "aten::detach", "aten::alias", "aten::resolve_conj",
                     "aten::resolve_neg", "aten::split", "aten::chunk", "aten::unbind",
                     "aten::narrow", "aten::flatten", "aten::unflatten", "aten::view_as",
                     "aten::expand_as", "aten::lift_fresh"});
}

bool is_softmax_op(std::string_view op) {
  return one_of(op, {"aten::softmax", "aten::_softmax", "aten::_safe_softmax", "aten::_masked_softmax"});
}

bool is_constant_factory(std::string_view op) {
  return one_of(op, {"aten::ones", "aten::full", "aten::zeros", "aten::arange", "aten::triu", "aten::tril"});
}

bool needs_input_shapes(std::string_view op) { return is_constant_factory(op) || is_softmax_op(op); }

}  // namespace pil::trace::advise_rules
