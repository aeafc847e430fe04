#pragma once
/// \file
/// A named range that both profilers see: a LibTorch record-function user scope (a
/// `user_annotation` slice in the Kineto trace, a row in the table) and an NVTX range of the
/// same name (for Nsight Systems). Python's `with torch.profiler.record_function(name):` — the
/// lessons' name for pil::profiler::record_function.
#include "profiler/profiler.h"

namespace pil {

using NamedRange = profiler::record_function;

}  // namespace pil
