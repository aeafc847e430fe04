#pragma once
/// \file
/// Every threshold of `pil-trace advise`, stated once: a rule reports a symptom only past its
/// threshold, so that a trace in good health gets no advice. docs/pil-trace.md explains each.
/// Shares are of the advice's basis (the profiled steps' wall time) unless said otherwise.
#include <cstdint>

#include "trace/reports.h"

namespace pil::trace::advise_rules::threshold {

/// A symptom whose upper-bound saving is under this share of the basis is not worth a finding:
/// at most a 2% gain. The default of AdviseOptions::min_saved_share, which the rules read
/// (`advise --min-share` moves it).
inline constexpr double kMinSavedShare = 0.02;

// --- GPU ---------------------------------------------------------------------------------------
/// Launch-bound: the GPU's idle time waiting on the host (the stream report's host wait, over
/// the union of the streams) is at least this share of the GPU window.
inline constexpr double kHostWaitShare = 0.20;
/// Launch-bound: at least this share of the kernel launches found the stream idle and ran
/// work shorter than the launch call.
inline constexpr double kShortKernelShare = 0.30;
/// An idle gap of the GPU (every stream idle) that waits on the host for longer than this is
/// not launch overhead (a launch takes microseconds, an operator's dispatch tens of them): the
/// host was busy with something else — loading data, a first call that loads a library or a
/// kernel, setup. Such gaps are a stall, not a launch-bound loop; so is a launch call this long.
inline constexpr int64_t kHostStallNs = pil::trace::kLongIdleNs;
/// Host stalls: the GPU idle in such gaps for at least this share of the basis; so too the
/// shorter gaps spent mostly inside the DataLoader's fetches (gpu_host_wait's data wait).
inline constexpr double kHostStallShare = 0.10;
/// A first call that is a one-time cost: an operator's or CUDA call's first on its thread, longer
/// than a stall (kHostStallNs), and at least this many times the median of its later calls there
/// (a warmed-up call). py4ai's cold ResNet inference on an RTX 3090: its first
/// aten::cudnn_convolution 102 ms, cuDNN setting itself up; the later ones well under 1 ms.
inline constexpr double kFirstCallRatio = 10;
/// A synchronize inside a step matters when the CPU waited in it at least this long in all.
inline constexpr int64_t kSyncMinNs = 50'000;
/// Synchronizes after a step's last launch are its end, however many, when back to back: under
/// kSyncMinNs apart, or with no operator between and under this long apart (a program's few
/// untraced lines: a compiled MoE script's second final synchronize came 94 us after its first).
/// Longer untraced time between them is the CPU's work, which the earlier one held back.
inline constexpr int64_t kFinalSyncUntracedNs = 200'000;
/// A host-to-device or device-to-host copy from pageable memory: reported from this many bytes
/// copied in all (small copies are cheap either way).
inline constexpr int64_t kPageableMinBytes = 1 << 20;
/// fp32 GEMMs without tensor cores: their kernels' time is at least this share of GPU busy time.
inline constexpr double kFp32GemmShare = 0.10;
/// Fusion: a chain of at least this many elementwise kernels back to back between two matrix
/// products (or elementwise operators, on a CPU trace). Two is the shortest chain a compiler
/// fuses (lesson 03's GeGLU: gelu, then mul); each kernel past the first is one more pass over
/// memory.
inline constexpr int kElementwiseChain = 2;
/// Naive attention: a softmax with a matrix product at most this many operators (or kernels)
/// before it (the scale and the mask: mul or div, masked_fill, an add of the mask, the mask's
/// own comparison) and at most kAttentionAfter after it (dropout, a dtype change).
inline constexpr int kAttentionBefore = 4;
inline constexpr int kAttentionAfter = 3;
/// Exposed communication: at least this share of the communication time ran with no
/// computation beside it (HTA's per-rank overlap, inverted; on the CPU, Gloo's slices against
/// the operators of the other threads), and at least kMinSavedShare of the basis.
inline constexpr double kExposedCommShare = 0.30;

// --- every trace -------------------------------------------------------------------------------
/// A first step far slower than the rest: its wall time over the others' median.
inline constexpr double kFirstStepRatio = 2.0;
/// Operator overhead: operators whose self CPU time is mostly dispatch (a median call under
/// this many ns of self time): their calls under it take at least kOverheadShare of the basis
/// (CPU-only traces; on a GPU trace the launch-bound rules judge the host's time).
/// The same length marks the short matrix products whose roofline figures a launch-bound loop
/// or the overhead cites (per call: its GPU work's time, or its CPU time).
inline constexpr int64_t kSmallOpNs = 20'000;
inline constexpr double kOverheadShare = 0.20;
/// A loop of small operators (op_loop): a run of the program's own calls, one after another
/// under one caller in a step, every one short (under kSmallOpNs, with what it calls; on a trace
/// with GPU work kLoopCallGpuNs, below), holding
/// at least this many calls of one operator: at some microseconds each, a millisecond or more
/// a step. Per-element loops run thousands (lesson 06's loss: one per token); an optimizer's
/// per-parameter loop calls one operator tens to a few hundred times (lesson 06's fast: 87
/// aten::mul_ in its optimizer's range). Reported from kMinSavedShare of the basis; the
/// op_overhead rule leaves these calls to it.
inline constexpr int64_t kLoopMinCalls = 256;
/// On a trace with GPU work, a loop's call is short under this length (with what it calls, less
/// its CUDA runtime and driver calls), not kSmallOpNs: an operator on a GPU tensor costs the host
/// more than on the CPU (the caching allocator, a stream and device guard, autograd's node) with
/// no arithmetic of its own. Lesson 06's per-token loss on the H200 machine (fix2 at 2 x 256,
/// 2026-12-04, docs/gpu-runs, three recorded steps): the forward's aten::log_softmax a median
/// 14.5 us less its launch, but the autograd engine's calls for its backward 22.4 us
/// (LogSoftmaxBackward0, 89% of the calls over 20 us) and 48.2 us (SelectBackward0, every call
/// over), so that op_loop found half the loop and left the other half to the launch-bound rule.
/// A GPU operator with arithmetic worth the name takes longer than this on the host only when it
/// waits; a matrix product's call can be as short, so that a loop's call there also launches
/// under kSmallOpNs of GPU work.
inline constexpr int64_t kLoopCallGpuNs = 100'000;
/// Copies (aten::copy_, contiguous, to, _to_copy, clone; the outermost of each nest, less the
/// runtime calls in them): at least this share of the basis.
inline constexpr double kCopyShare = 0.10;
/// The optimizer: at least this share of the step (Optimizer.step ranges or the optimizer's
/// own operators).
inline constexpr double kOptimizerShare = 0.25;
/// Time in a step that no operator, range or runtime call covers on any thread of the step's
/// process: at least this share, counting only stretches of at least kUntracedMinGapNs (the
/// shorter gaps between two operators are the profiler's and the dispatcher's own time). The
/// DataLoader's fetches on the training thread (its enumerate(DataLoader)# ranges): the same share.
inline constexpr double kUntracedShare = 0.15;
inline constexpr int64_t kUntracedMinGapNs = 10'000;
/// An fp32 GEMM kernel over this many times the median of its name and launch shape (three instances or more) is
/// counted at that in fp32_gemm's bound: what held it is no fp32 arithmetic.
inline constexpr double kGemmOutlierRatio = 10;
/// Half or more of the GPU work with no launch call: the rules that follow launches to their
/// work are not run (Rule::reads_launch_links).
inline bool most_work_unlinked(int64_t unlinked, int64_t work_items) {
  return work_items > 0 && 2 * unlinked >= work_items;
}
/// A first fetch from the DataLoader's worker processes over this many times the others' median
/// is their start-up (loader_startup), not their pace: the first batch waits for every worker to
/// start and import the program (seconds by spawn), the later ones for a ready batch.
inline constexpr double kLoaderStartupRatio = 10;
/// A constant tensor built every step: the same factory operator with the same shapes in at
/// least this many steps (and in every profiled step), reported from kMinSavedShare of the basis.
inline constexpr int kRebuiltMinSteps = 2;
/// Memory: a peak within this share of the device's memory (deviceProperties totalGlobalMem).
inline constexpr double kMemoryPeakShare = 0.90;

}  // namespace pil::trace::advise_rules::threshold
