#pragma once
/// \file
/// FLOPs and bytes moved by one operator call, from its recorded input shapes and types
/// (record_shapes: Kineto's "Input Dims" and "Input type", Trace::op_inputs).
///
/// FLOPs. A multiply-add is two FLOPs, as torch.utils.flop_counter.FlopCounterMode counts them;
/// for the matrix products and the attention operators the formulas are that counter's
/// (torch 2.11, torch/utils/flop_counter.py), and agree with it on the same shapes (checked side
/// by side with the cached torch: mm, addmm, bmm, baddbmm, the scaled-dot-product attention
/// operators forward and backward). Like it, they count addmm's and baddbmm's bias add not at
/// all; unlike it, a fused attention kernel's causal call (is_causal True in the recorded
/// "Concrete Inputs", which torch.profiler writes with record_shapes) counts only the score
/// entries the mask keeps (about half), which is the work such a kernel does; FlopCounterMode
/// counts the full matrix, as this does where the trace has no concrete inputs.
///   - mm [M,K]x[K,N], addmm(C, [M,K], [K,N]), _scaled_mm (FP8): 2MNK
///   - bmm [B,M,K]x[B,K,N], baddbmm(C, ...): 2BMNK
///   - matmul: as mm or bmm after broadcasting the batch dimensions; a vector side is a
///     matrix of one row or column (dot: 2K)
///   - linear(x [..., K], w [N, K], b): 2 * (x's elements / K) * N * K
///   - scaled-dot-product attention, q [..., L, E], k [..., S, E], v [..., S, Ev], the leading
///     dimensions B: 2BLSE + 2BLSEv forward; backward (grad_out, q, k, v, ...) 2BLS(3E + 2Ev):
///     the score matrix recomputed, then the four products of the gradients. FlopCounterMode
///     has no entry for the CPU's _scaled_dot_product_flash_attention_for_cpu(_backward): the
///     same formula is used for it.
///   - elementwise operators (add, sub, mul, div, neg, relu, gelu, silu, sigmoid, tanh, exp,
///     pow, sqrt, rsqrt, clamp, clamp_min, clamp_max, where, and their in-place forms): one FLOP
///     per output element, a transcendental function counted as one (these operators are
///     bound by memory far below any compute peak, so the convention moves no verdict);
///     copy_: none.
///   - native_layer_norm, native_batch_norm, cudnn_batch_norm: 5 FLOPs per element with a
///     weight, 4 without (fvcore's estimate, norm_flop_counter; a batch norm in eval mode does
///     fewer: training or not is not in the shapes); _fused_rms_norm: 4 per element with a
///     weight, 3 without (square, sum, scale, weight); _softmax and _log_softmax: 5 per element
///     (max, subtract, exp, sum, divide or log).
///
/// Bytes: the least traffic the call needs, each tensor input read once and each output
/// written once, at its type's size (an in-place operator writes its first input back; copy_
/// reads its source and writes its destination). Caches make a real kernel read an operand more
/// than once, so achieved bytes/s is a lower bound of the real traffic. Small auxiliary outputs
/// (a norm's mean and rstd, attention's logsumexp) are not counted, and an output whose type
/// the shapes do not give (_scaled_mm's out_dtype, softmax's half_to_float) is counted at its
/// input's.
///
/// Composite operators call other operators that do the work: matmul (mm or bmm), linear
/// (addmm or matmul), scaled_dot_product_attention and _scaled_dot_product_attention_math (a
/// fused kernel's operator, or bmm, softmax...), layer_norm, batch_norm,
/// _batch_norm_impl_index, softmax, log_softmax, rms_norm, relu (clamp_min). A composite's work
/// is counted in the operators it calls when any of them has a formula, and by its own formula
/// only when none has (roofline.h says which row is counted where).
#include <optional>
#include <string_view>

#include "trace/trace.h"

namespace pil::trace {

/// Bytes per element of a tensor type as torch writes it in "Input type" ("float" 4,
/// "c10::BFloat16" 2, "long int" 8, "bool" 1, "c10::Float8_e4m3fn" 1, ...); 0 for what is not a
/// tensor ("Scalar", "ScalarList", "TensorList", "") or a type it does not know.
int dtype_bytes(std::string_view type);

/// The floating-point family of a type, for choosing a peak: "fp64", "fp32", "bf16", "fp16",
/// "fp8", or "" (integer, bool, complex, unknown).
std::string_view float_family(std::string_view type);

/// The work of one operator call.
struct OpWork {
  double flops = 0;
  double bytes = 0;
  /// The type the call computes in (its output's): the peak that applies is this type's.
  std::string_view dtype;
  /// A matrix product or attention: runs on tensor (matrix) cores where the type has them.
  bool matrix = false;
};

/// How an operator's work is counted.
enum class FormulaKind {
  None,       ///< no formula
  Own,        ///< its own formula covers everything it does (and what it calls)
  Composite,  ///< counted in the operators it calls when one has a formula, else by its own
};
FormulaKind formula_kind(std::string_view op_name);

/// A matrix product or attention operator that is counted by its own formula (mm, addmm,
/// _scaled_mm, bmm, baddbmm, the fused scaled-dot-product attention operators forward and
/// backward): the operators whose rows a matrix product's roofline figures come from, whatever
/// composite (matmul, linear) called them.
bool is_matrix_formula(std::string_view op_name);

/// FLOPs and bytes of one call of `op_name` with inputs `in`; nothing when the operator has no
/// formula or its inputs are not what the formula takes (ranks, sizes that do not agree).
std::optional<OpWork> op_work(std::string_view op_name, const OpInputs& in);

}  // namespace pil::trace
