#include "harness/backend_choice.h"

namespace pil::dist {

const char* to_string(Backend b) { return b == Backend::Nccl ? "nccl" : "gloo"; }

std::string backend_usage_error(BackendChoice backend, DeviceChoice device) {
  if (backend == BackendChoice::Gloo && device == DeviceChoice::Cuda)
    return "--backend gloo runs on the CPU here; allowed: --device cpu, or --backend nccl on GPUs";
  if (backend == BackendChoice::Nccl && device == DeviceChoice::Cpu)
    return "--backend nccl runs on GPUs; allowed: --device cuda (or auto), or --backend gloo on the CPU";
  return {};
}

BackendDecision choose_backend(BackendChoice backend, DeviceChoice device, int usable_gpus, int local_ranks,
                               bool build_has_nccl) {
  using Verdict = BackendDecision::Verdict;
  if (std::string why = backend_usage_error(backend, device); !why.empty())
    return {Verdict::Usage, Backend::Gloo, device, why};
  const bool enough_gpus = usable_gpus >= local_ranks && usable_gpus > 0;
  const std::string gpus_text = std::to_string(local_ranks) + " ranks on this machine, " +
                                std::to_string(usable_gpus) + " GPU(s) usable";
  const bool want_nccl = backend == BackendChoice::Nccl ||
                         (backend == BackendChoice::Auto && device == DeviceChoice::Cuda);
  if (want_nccl) {
    if (!build_has_nccl)
      return {Verdict::Skip, Backend::Nccl, DeviceChoice::Cuda,
              "NCCL is not in this build (a LibTorch with CUDA and nccl.h are needed); --backend gloo "
              "runs on the CPU"};
    if (!enough_gpus)
      return {Verdict::Skip, Backend::Nccl, DeviceChoice::Cuda,
              "NCCL needs one CUDA GPU per rank: " + gpus_text};
    return {Verdict::Run, Backend::Nccl, DeviceChoice::Cuda, {}};
  }
  if (backend == BackendChoice::Auto && device == DeviceChoice::Auto && build_has_nccl && enough_gpus)
    return {Verdict::Run, Backend::Nccl, DeviceChoice::Cuda, {}};
  return {Verdict::Run, Backend::Gloo, DeviceChoice::Cpu, {}};
}

}  // namespace pil::dist
