#pragma once
/// \file
/// The GPU rules of `pil-trace advise`, one file per job (rules_gpu_*.cpp); rules_gpu.cpp lists
/// them in gpu_rules(). Internal to advise/.
#include "trace/advise/rules.h"

namespace pil::trace::advise_rules {

// rules_gpu_launch.cpp: the GPU waiting on the host.
void gpu_host_wait(const RuleContext& c, RuleResult& out);
void host_stall(const RuleContext& c, RuleResult& out);
void short_kernels(const RuleContext& c, RuleResult& out);
/// The GPU's idle time the host-wait rules leave out as stream captures': inside a capture of the
/// thread whose launch ended the wait (its launches run nothing then), in the basis.
int64_t captured_idle_ns(const RuleContext& c);
// rules_gpu_sync.cpp: the host waiting on the GPU.
void host_sync(const RuleContext& c, RuleResult& out);
// rules_gpu_copy.cpp: copies from pageable memory.
void pageable_copy(const RuleContext& c, RuleResult& out);
/// The part of copy call `call`'s time spent waiting for its stream's earlier work, before its
/// copy `copy` could run: host_sync's wait; the rest of the call is pageable_copy's hold. One
/// split, so that no time is counted by both.
int64_t wait_before_copy(const RuleContext& c, size_t call, size_t copy);
// rules_gpu_gemm.cpp: fp32 GEMMs without tensor cores.
void fp32_gemm(const RuleContext& c, RuleResult& out);
// rules_gpu_fusion.cpp: chains of elementwise kernels (or operators) between matrix products.
void fusion(const RuleContext& c, RuleResult& out);
// rules_gpu_attention.cpp: attention that materialises its score matrix.
void naive_attention(const RuleContext& c, RuleResult& out);

}  // namespace pil::trace::advise_rules
