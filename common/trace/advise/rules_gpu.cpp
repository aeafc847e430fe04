// The rules of `pil-trace advise` about feeding a GPU and running at its speed, in the order they
// run; each is in the rules_gpu_*.cpp of its job (rules_gpu.h). Thresholds in thresholds.h;
// causes in causes.cpp. Two of them also read a CPU-only trace (needs_gpu false): fusion and
// naive attention are seen in the operators as well as in the kernels.
#include "trace/advise/rules_gpu.h"

namespace pil::trace::advise_rules {

std::vector<Rule> gpu_rules() {
  return {
      {"gpu_host_wait", "launch_bound", "GPU idle waiting on the host between launches", true,
       gpu_host_wait, /*compares_clocks=*/true},
      {"short_kernels", "launch_bound", "kernels shorter than their launch", true, short_kernels,
       /*compares_clocks=*/true},
      {"host_stall", "host_stall", "GPU idle for long stretches while the host does other work",
       true, host_stall},
      {"host_sync", "host_sync", "host synchronizes inside a step", true, host_sync,
       /*compares_clocks=*/true},
      {"pageable_copy", "pageable_copy", "copies between host and GPU from pageable memory", true,
       pageable_copy},
      {"fp32_gemm", "fp32_gemm", "fp32 GEMMs without tensor cores on a GPU with TF32", true,
       fp32_gemm, /*compares_clocks=*/false, /*host_time_is_cost=*/false, /*needs_cpu_side=*/false,
       /*reads_launch_links=*/false},
      // These two read a stream's kernels in order where the launch links are missing (the
      // operators only name them, say which belong to a product, or, for attention, find the
      // pattern costed by the work it launched): run whatever the links.
      {"fusion", "fusion", "chains of elementwise kernels between matrix products", false, fusion,
       /*compares_clocks=*/false, /*host_time_is_cost=*/true, /*needs_cpu_side=*/false,
       /*reads_launch_links=*/false},
      {"naive_attention", "naive_attention", "attention that materialises its score matrix", false,
       naive_attention, /*compares_clocks=*/false, /*host_time_is_cost=*/true, /*needs_cpu_side=*/false,
       /*reads_launch_links=*/false},
  };
}

}  // namespace pil::trace::advise_rules
