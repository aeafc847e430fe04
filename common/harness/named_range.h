#pragma once
/// \file
/// A named range that both profilers see: a LibTorch record-function user scope (a
/// `user_annotation` slice in the Kineto trace, a row in the table) and an NVTX range of the
/// same name (for Nsight Systems). Python's `with torch.profiler.record_function(name):`.
#include <memory>
#include <string>

#include "cuda/nvtx.h"

namespace at {
struct RecordFunction;
}

namespace pil {

class NamedRange {
 public:
  explicit NamedRange(std::string name);
  ~NamedRange();
  NamedRange(const NamedRange&) = delete;
  NamedRange& operator=(const NamedRange&) = delete;

 private:
  std::string name_;
  cuda::NvtxRange nvtx_;
  std::unique_ptr<at::RecordFunction> scope_;
};

}  // namespace pil
