#pragma once
/// \file
/// Which c10d backend a data-parallel run uses, and on which device: a function of plain inputs
/// (the flags, the GPUs usable, the ranks on this machine, what the build has), so the choice is
/// tested on a machine without a GPU and the GPU only confirms it.
#include <string>

#include "harness/options.h"

namespace pil::dist {

enum class Backend { Gloo, Nccl };
const char* to_string(Backend b);

/// --backend, as asked.
enum class BackendChoice { Auto, Gloo, Nccl };

/// What a run of `local_ranks` ranks on this machine does with these flags.
struct BackendDecision {
  enum class Verdict {
    Run,    ///< open the group with `backend` on `device`
    Usage,  ///< flags that contradict each other: exit 2 with `why` (every rank would say it)
    Skip,   ///< the machine or the build lacks what the choice needs: exit 77 with `why`
  };
  Verdict verdict = Verdict::Run;
  Backend backend = Backend::Gloo;
  DeviceChoice device = DeviceChoice::Cpu;  ///< Cpu for Gloo, Cuda for NCCL
  std::string why;
};

/// The flags alone: empty when --backend and --device can go together, else the usage error
/// (one line). The launcher asks it before it starts any rank.
std::string backend_usage_error(BackendChoice backend, DeviceChoice device);

/// The backend and device: --backend auto picks NCCL when the device is not the CPU, the build
/// has NCCL and there is a usable GPU for every rank on this machine (NCCL cannot put two ranks
/// on one GPU), else Gloo on the CPU; --device cuda with auto and too few GPUs is a skip, as is
/// --backend nccl without NCCL in the build or without a GPU per rank.
BackendDecision choose_backend(BackendChoice backend, DeviceChoice device, int usable_gpus, int local_ranks,
                               bool build_has_nccl);

}  // namespace pil::dist
