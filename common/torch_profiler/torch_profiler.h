#pragma once
/// \file
/// The adapter to LibTorch's (Kineto) profiler: the only code in the project that includes
/// `torch/csrc/...profiler` headers, so a LibTorch upgrade touches this file alone.
/// Its results leave as the trace kit's plain events and as a Chrome trace file.
/// The public face is profiler/profiler.h (`pil::profiler::profile`), which records through this.
///
/// Tested with LibTorch 2.11.0 (CPU and CUDA 13 builds). LibTorch's profiler API is internal
/// (`torch/csrc/autograd/profiler_kineto.h`) and changes between releases; what this file relies
/// on: prepareProfiler/enableProfiler/disableProfiler with a ProfilerConfig of state KINETO,
/// KinetoEvent's startNs/endNs/shapes/flops/correlationId/linkedCorrelationId/activityType,
/// addMetadataJson and ProfilerResult::save.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace pil {

struct ProfilerSettings {
  bool cpu = true;              ///< trace operators and ranges on the host
  bool cuda = false;            ///< also trace CUDA activity (kernels, copies, runtime calls)
  bool record_shapes = true;    ///< input shapes on each operator
  bool profile_memory = false;  ///< allocations and frees in the trace
  bool with_stack = false;      ///< source locations
  /// torch's FLOPs count per operator call (Python's with_flops: a few operators, from their
  /// inputs); the saved trace's header says "with_flops" as Python's does. Needs record_shapes
  /// (Python turns it on; so does libtorch_tracer).
  bool with_flops = false;
};

/// One profiling session: prepare (optional), start, stop; then read or save what it recorded.
class TorchProfiler {
 public:
  explicit TorchProfiler(ProfilerSettings settings);
  ~TorchProfiler();
  TorchProfiler(const TorchProfiler&) = delete;
  TorchProfiler& operator=(const TorchProfiler&) = delete;

  /// Sets the profiler up ahead of recording (Python's WARMUP action): its one-time start-up
  /// cost is paid here, outside the recorded steps.
  void prepare();
  /// Starts recording. Prepares first if prepare() was not called.
  void start();
  /// Stops recording and keeps the result.
  void stop();
  bool recording() const { return recording_; }
  /// Adds a top-level key to the saved trace, as torch.profiler does for `distributedInfo`
  /// (`value` is JSON text). Only while recording.
  void add_metadata_json(const std::string& key, const std::string& value);

  /// What was recorded, in the trace kit's model (valid after stop()).
  const trace::Trace& trace() const { return trace_; }
  /// Writes the Chrome trace (Perfetto and chrome://tracing open it) whole or not at all;
  /// gzip-compressed where `path` ends in ".gz", as torch.profiler's export_chrome_trace.
  /// LibTorch saves a result once: the first call writes its file in one pass (a plain name) and
  /// a later call copies that file, throwing std::runtime_error where it has changed or gone.
  void save_chrome_trace(const std::filesystem::path& path) const;

 private:
  struct Result;
  ProfilerSettings settings_;
  bool prepared_ = false, recording_ = false;
  std::unique_ptr<Result> result_;
  trace::Trace trace_;
};

}  // namespace pil
