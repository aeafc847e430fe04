#pragma once
/// \file
/// The FLOPs Python's profiler counts with `with_flops=True` (its table's "Total MFLOPs"
/// column), from a call's recorded inputs. torch computes them in the process (torch 2.11,
/// torch/csrc/profiler/util.cpp: saveExtraArgs and computeFlops) for seven operators, by their
/// exact names, and writes none into the trace: a trace recorded with_flops says so in its
/// header ("with_flops": 1) and carries the inputs (with_flops turns record_shapes on), from
/// which the same counts follow:
///   - aten::mm [M, K] x [K, N], aten::addmm (bias, [M, K], [K, N], ...): 2 * (mat1's elements
///     / K) * mat2's elements, in unsigned 64-bit arithmetic as torch does;
///   - aten::bmm [B, M, K] x [B, K, N], aten::baddbmm (bias, mat1, mat2, ...): 2 * (mat1's
///     elements / K / B) * mat2's elements;
///   - aten::mul, aten::add (not their in-place forms): the first input's elements;
///   - aten::conv2d (input [N, C, H, W], weight [O, C/g, kh, kw], bias, stride, padding,
///     dilation, groups): 2 * N * outH * outW * kh * kw * C * O / groups, stride, padding,
///     dilation and groups from the call's "Concrete Inputs".
/// Any other operator, or inputs that are not what torch checks for (a non-tensor where it
/// wants a tensor, too few arguments, a conv2d weight not 4-d): 0, as torch gives.
#include <cstdint>
#include <string_view>

#include "trace/trace.h"

namespace pil::trace {

/// True for the seven operators torch counts FLOPs of (their inputs are needed to count them).
bool counts_python_flops(std::string_view op);

/// The FLOPs torch's profiler gives one call of `op` with inputs `in` (0: none).
uint64_t python_flops(std::string_view op, const OpInputs& in);

}  // namespace pil::trace
