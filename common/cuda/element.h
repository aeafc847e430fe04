#pragma once
/// \file
/// The storage types the lessons' kernels take, named without CUDA or LibTorch types, so host
/// code built without nvcc can call them.
namespace pil::cuda {

enum class Element { F32, BF16, F16 };

}  // namespace pil::cuda
