#pragma once
/// \file
/// Every threshold of `pil-trace advise`, stated once: a rule reports a symptom only past its
/// threshold, so that a trace in good health gets no advice. docs/pil-trace.md explains each.
/// Shares are of the advice's basis (the profiled steps' wall time) unless said otherwise.
#include <cstdint>

namespace pil::trace::advise_rules::threshold {

/// A symptom whose upper-bound saving is under this share of the basis is not worth a finding:
/// at most a 2% gain.
inline constexpr double kMinSavedShare = 0.02;

// --- GPU ---------------------------------------------------------------------------------------
/// Launch-bound: the GPU's idle time waiting on the host (the stream report's host wait, over
/// the union of the streams) is at least this share of the GPU window.
inline constexpr double kHostWaitShare = 0.20;
/// Launch-bound: at least this share of the kernels ran for less time than their launch call.
inline constexpr double kShortKernelShare = 0.30;
/// A synchronize inside a step matters when the CPU waited in it at least this long in all.
inline constexpr int64_t kSyncMinNs = 50'000;
/// A host-to-device or device-to-host copy from pageable memory: reported from this many bytes
/// copied in all (small copies are cheap either way).
inline constexpr int64_t kPageableMinBytes = 1 << 20;
/// fp32 GEMMs without tensor cores: their kernels' time is at least this share of GPU busy time.
inline constexpr double kFp32GemmShare = 0.10;
/// Fusion: a chain of at least this many elementwise kernels back to back between two GEMMs.
inline constexpr int kElementwiseChain = 3;
/// Exposed communication: at least this share of the communication time ran with no
/// computation beside it (HTA's per-rank overlap, inverted; on the CPU, Gloo's slices against
/// the operators of the other threads), and at least kMinSavedShare of the basis.
inline constexpr double kExposedCommShare = 0.30;

// --- every trace -------------------------------------------------------------------------------
/// A first step far slower than the rest: its wall time over the others' median.
inline constexpr double kFirstStepRatio = 2.0;
/// Operator overhead: operators whose self CPU time is mostly dispatch (a median call under
/// this many ns of self time): their calls under it take at least kOverheadShare of the basis.
/// On a GPU trace: the GPU's idle time while operators held the CPU longer than the GPU work
/// they launched, at most that excess, is at least kOverheadShare of the basis.
inline constexpr int64_t kSmallOpNs = 20'000;
inline constexpr double kOverheadShare = 0.20;
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
/// A constant tensor built every step: the same factory operator with the same shapes in at
/// least this many steps (and in every profiled step), reported from kMinSavedShare of the basis.
inline constexpr int kRebuiltMinSteps = 2;
/// Memory: a peak within this share of the device's memory (deviceProperties totalGlobalMem).
inline constexpr double kMemoryPeakShare = 0.90;

}  // namespace pil::trace::advise_rules::threshold
