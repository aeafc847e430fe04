#pragma once
/// \file
/// An NVTX range as a scoped object: Nsight Systems (`nsys profile -t cuda,nvtx`) shows it by
/// name. Without a tool attached, or without the CUDA toolkit at build time, it costs nothing.
#if PIL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace pil::cuda {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) {
#if PIL_HAVE_NVTX
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
#if PIL_HAVE_NVTX
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace pil::cuda
