#pragma once
/// \file
/// What a name in a trace says, for the rules of `pil-trace advise`: which runtime calls launch
/// kernels or copy synchronously, which kernels are matrix products, elementwise passes or a
/// softmax, which operators are. Names as Kineto writes them, for CUDA and HIP alike; each test
/// is a heuristic on the name alone, and says so.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "trace/trace.h"

namespace pil::trace::advise_rules {

/// A question about a name, answered once per distinct name: a trace interns its names, so one
/// name's text is at one address, and a million kernels share a handful of names (their text is
/// long: classifying each one costs more than reading the trace).
template <typename T>
class PerName {
 public:
  template <typename Answer>
  T operator()(std::string_view name, Answer answer) {
    const auto [it, fresh] = memo_.try_emplace(name.data(), name.size(), T{});
    if (fresh) it->second.second = answer(name);
    else if (it->second.first != name.size()) return answer(name);  // not one interned name
    return it->second.second;
  }

 private:
  std::unordered_map<const char*, std::pair<size_t, T>> memo_;  // text -> (length, answer)
};

/// True when any name the trace holds passes `test`: a look at its few thousand distinct names
/// lets a rule skip a trace of millions of events that cannot have what it looks for.
template <typename Test>
bool any_name(const Trace& t, Test test) {
  for (std::string_view n : t.names->in_order())
    if (test(n)) return true;
  return false;
}

// --- runtime and driver calls ------------------------------------------------------------------

/// A call that launches a kernel or a graph of them: cudaLaunchKernel, cudaLaunchKernelExC,
/// cuLaunchKernel(Ex), cudaLaunchCooperativeKernel, hipLaunchKernel, hipExtModuleLaunchKernel,
/// hipModuleLaunchKernel, cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch (CUPTI's versioned
/// names, "cudaLaunchKernel_v7000", too). Not copies or sets (cudaMemcpyAsync, cudaMemsetAsync).
bool is_kernel_launch_call(std::string_view call);

/// A copy the host waits for until it is done: cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD,
/// cuMemcpyDtoH, hipMemcpy, hipMemcpyWithStream (PyTorch's copy on ROCm) ... every "Memcpy"
/// call without "Async" in its name.
bool is_sync_copy_call(std::string_view call);

/// A copy call of either kind (its GPU work says the direction).
bool is_copy_call(std::string_view call);

// --- GPU work ----------------------------------------------------------------------------------

/// A kernel's name without its return type, template arguments and parameters:
/// "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" ->
/// "at::native::vectorized_elementwise_kernel"; "(anonymous namespace)" kept as part of it.
/// What the kernel is, not what it is given.
std::string kernel_base_name(std::string_view kernel);

/// A kernel's name short enough for a sentence: the functor or implementation among its
/// template arguments where it has one ("AddFunctor", "threshold_kernel_impl"), else its base
/// name without "(anonymous namespace)::" ("softmax_warp_forward"), at most 60 characters.
std::string kernel_label(std::string_view kernel);

/// A copy from or to pageable host memory, as Kineto names it: "Memcpy HtoD (Pageable ->
/// Device)", "Memcpy DtoH (Device -> Pageable)".
bool is_pageable_copy(std::string_view copy);
/// A copy to the host ("Memcpy DtoH ...") or to the device ("Memcpy HtoD ...").
bool is_copy_to_host(std::string_view copy);
bool is_copy_to_device(std::string_view copy);

/// A matrix product kernel: a name with "gemm" or "gemv" in any case (cuBLAS's sgemm, hgemm,
/// xmma_gemm, CUTLASS's, convolutions run as implicit GEMMs), cuBLAS's nvjet_* (Hopper) or
/// rocBLAS/Tensile's Cijk_*.
bool is_gemm_kernel(std::string_view kernel);

/// A convolution kernel of cuDNN or MIOpen not named as a GEMM (volta_scudnn_*, winograd,
/// dgrad/wgrad engines, *conv*): a matrix product all the same, for the fusion rule's bounds.
bool is_convolution_kernel(std::string_view kernel);

/// PyTorch's elementwise kernels: at::native's vectorized_elementwise_kernel, elementwise_kernel
/// and unrolled_elementwise_kernel (one pass over memory per operator). Not reductions.
bool is_elementwise_kernel(std::string_view kernel);

/// A softmax's forward kernel (cunn_SoftMaxForward, softmax_warp_forward); not a log-softmax
/// (a loss's), not a backward.
bool is_softmax_kernel(std::string_view kernel);

/// An fp32 GEMM kernel that runs without tensor cores, by its name: "sgemm" (cuBLAS's
/// ampere_sgemm_*, CUTLASS's simt_sgemm), or an xmma kernel of FFMA ("..._ffma_...",
/// "xmma_gemm_f32f32_f32f32_f32": cuBLAS's fp32 kernels on Ampere and Hopper are often these,
/// so "xmma" alone does not mean tensor cores), with none of the names tensor-core kernels carry
/// (tf32, tensorop, s1688, s16816, hmma, wmma, h16816, i8816, bf16, f16) and not a convolution
/// (cuDNN's follow cudnn.allow_tf32, on by default). The name alone: a kernel named otherwise
/// is not counted, whatever it runs.
bool is_fp32_simt_gemm_kernel(std::string_view kernel);

// --- operators ---------------------------------------------------------------------------------

/// A matrix product operator: aten::mm, addmm, bmm, baddbmm, matmul, linear, einsum,
/// _addmm_activation; AOTInductor's aoti_torch_*_mm_out / addmm_out / bmm_out.
bool is_gemm_op(std::string_view op);

/// An elementwise operator (one pass over memory, fusable): aten::add, sub, mul, div, gelu,
/// relu, silu, sigmoid, tanh, exp, ... and their in-place forms.
bool is_elementwise_op(std::string_view op);

/// An operator that only makes a view (aten::t, transpose, view, reshape, permute, select...):
/// no pass over memory; the rules read through it.
bool is_view_op(std::string_view op);

/// aten::softmax, aten::_softmax, aten::_safe_softmax.
bool is_softmax_op(std::string_view op);

/// An operator that builds a constant tensor (aten::ones, full, zeros, arange) or a mask from
/// one (aten::triu, tril): rebuilt_constant's.
bool is_constant_factory(std::string_view op);

/// The operators whose recorded inputs advise reads (ParseOptions::shapes_for): the constant
/// factories (rebuilt_constant compares their inputs step by step) and softmax (the score
/// matrix's shape in naive_attention's evidence). The others' are left unread, as `summary`
/// leaves them: most of what reading every operator's inputs would cost.
bool needs_input_shapes(std::string_view op);

}  // namespace pil::trace::advise_rules
