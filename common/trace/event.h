#pragma once
/// \file
/// The trace kit's event model: one record per slice of a profile, whoever wrote it (LibTorch's
/// profiler in this process, or a Kineto/CUPTI trace file). Knows nothing of LibTorch or CUDA.
#include <cstdint>
#include <string>
#include <string_view>

namespace pil::trace {

/// What kind of slice an event is. The names follow Kineto's trace categories.
enum class Category {
  CpuOp,              ///< an ATen operator (`cpu_op`)
  UserAnnotation,     ///< a named range on the CPU (`user_annotation`), ProfilerStep#N included
  GpuUserAnnotation,  ///< the same range mirrored on a GPU stream; overlaps the kernels it spans
  Runtime,            ///< a CUDA runtime call (`cuda_runtime`): cudaLaunchKernel, cudaMemcpyAsync...
  Driver,             ///< a CUDA driver call (`cuda_driver`): cuLaunchKernel...
  Kernel,             ///< GPU kernel (`kernel`)
  Memcpy,             ///< GPU copy (`gpu_memcpy`)
  Memset,             ///< GPU memset (`gpu_memset`)
  Memory,             ///< an allocation or free (instant `[memory]` events, with profile_memory)
  Other,              ///< anything else (instant events, overhead, sync markers)
};

/// Each category with the name Kineto writes for it ("cat"); Other has none of its own.
struct CategoryName {
  Category category;
  const char* kineto;
};
inline constexpr CategoryName kCategoryNames[] = {
    {Category::CpuOp, "cpu_op"},           {Category::UserAnnotation, "user_annotation"},
    {Category::GpuUserAnnotation, "gpu_user_annotation"},
    {Category::Runtime, "cuda_runtime"},   {Category::Driver, "cuda_driver"},
    {Category::Kernel, "kernel"},          {Category::Memcpy, "gpu_memcpy"},
    {Category::Memset, "gpu_memset"},      {Category::Memory, "cpu_instant_event"},
};

/// True for work that runs on the device (kernels, copies, sets), not ranges mirrored there.
inline bool is_device_work(Category c) {
  return c == Category::Kernel || c == Category::Memcpy || c == Category::Memset;
}

/// True for slices recorded by LibTorch's own RecordFunction (operators and user ranges).
inline bool is_torch_scope(Category c) {
  return c == Category::CpuOp || c == Category::UserAnnotation;
}

/// Kineto's categories of the devices pil-trace does not model (libkineto's ActivityType
/// names): MTIA's runtime calls and device events, Intel XPU's and a PrivateUse1 backend's
/// runtime and driver calls, Gaudi's (HPU) operators. Their events are read as Category::Other;
/// the reports say the trace has them (Trace::unread) instead of calling it a CPU run.
inline bool is_unmodelled_device_category(std::string_view cat) {
  return cat == "mtia_runtime" || cat == "mtia_ccp_events" || cat == "mtia_insight" || cat == "xpu_runtime" ||
         cat == "xpu_driver" || cat == "privateuse1_runtime" || cat == "privateuse1_driver" || cat == "hpu_op";
}

/// True for a CUDA runtime or driver call: what launches GPU work (joined by correlation id).
inline bool is_launch_call(Category c) { return c == Category::Runtime || c == Category::Driver; }

/// True for a launch of a whole graph (one call, many kernels): CUDA's runtime and driver calls
/// and HIP's.
inline bool is_graph_launch(std::string_view call_name) {
  return call_name == "cudaGraphLaunch" || call_name == "cuGraphLaunch" ||
         call_name == "hipGraphLaunch";
}

/// True for a call that always starts GPU work and returns without waiting for it: a kernel or
/// graph launch, an asynchronous copy or set (CUDA's runtime and driver calls, HIP's). A plain
/// cudaMemcpy or hipMemcpyWithStream waits for its copy; so does an asynchronous copy from
/// pageable memory (its GPU work's name says "Pageable").
inline bool starts_gpu_work_async(std::string_view call_name) {
  for (std::string_view part : {"LaunchKernel", "LaunchCooperativeKernel", "GraphLaunch",
                                "MemcpyAsync", "MemsetAsync", "ModuleLaunchKernel"})
    if (call_name.find(part) != std::string_view::npos) return true;
  return false;
}

/// True for a runtime or driver call that starts GPU work, returning before it or not: the
/// asynchronous calls above, and the synchronous copies and sets (cudaMemcpy, cudaMemset).
inline bool starts_gpu_work(std::string_view call_name) {
  return starts_gpu_work_async(call_name) || call_name.find("Memcpy") != std::string_view::npos ||
         call_name.find("Memset") != std::string_view::npos;
}

/// Of two runtime calls with one correlation id, whether `call` takes it from `held`, the call
/// that had it first: the one that starts GPU work does (Kineto's ROCm traces write a
/// hipMemsetAsync's internal dispatch as a call of the same id and time, misnamed
/// "hipArray3DCreate", before the call itself: ROCm/aorta's MI350X trace).
inline bool takes_correlation(std::string_view held, std::string_view call) {
  return !starts_gpu_work(held) && starts_gpu_work(call);
}

/// True for the slices of a CPU thread that nest: operators, ranges, runtime and driver calls.
inline bool is_cpu_slice(Category c) { return is_torch_scope(c) || is_launch_call(c); }

/// The name torch.profiler gives a step's range: "ProfilerStep#" and the schedule's step number
/// (torch/profiler/profiler.py), in Python's traces and in the project's alike.
inline constexpr std::string_view kStepPrefix = "ProfilerStep#";
/// The step name the project's traces carried before they took torch.profiler's; still read.
inline constexpr std::string_view kOldStepPrefix = "ProfileStep#";
/// The one row the operator table groups all steps into, as Python's `_rewrite_name` does.
inline constexpr std::string_view kStepRowName = "ProfilerStep*";

/// The range name of step `n` ("ProfilerStep#3").
inline std::string step_name(int64_t n) { return std::string(kStepPrefix) + std::to_string(n); }

/// True for a profiler step's range name ("ProfilerStep#3"; an old trace's "ProfileStep#3").
inline bool is_step_name(std::string_view name) {
  return name.rfind(kStepPrefix, 0) == 0 || name.rfind(kOldStepPrefix, 0) == 0;
}

/// The number of a step's range ("ProfilerStep#12": 12; the digits after its '#'), or -1 where
/// there is none: no '#', no digits, anything else after them, or more digits than a step has.
inline int64_t step_number(std::string_view name) {
  const size_t hash = name.find('#');
  if (hash == std::string_view::npos || hash + 1 >= name.size()) return -1;
  int64_t n = 0;
  for (size_t i = hash + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > (int64_t(1) << 50)) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

/// True for a step's range name or the table's grouped step row ("ProfilerStep*").
inline bool is_step_row(std::string_view name) { return name == kStepRowName || is_step_name(name); }

/// The name an event is grouped under in the operator table: steps as one "ProfilerStep*" row.
inline std::string_view table_name(std::string_view name) {
  return is_step_name(name) ? kStepRowName : name;
}

/// Sentinel for Event::kernel_info when there is none.
inline constexpr uint32_t kNoKernelInfo = 0xffffffffu;

struct Event {
  /// Points into storage that outlives the event: a Trace's name pool.
  std::string_view name;
  Category category = Category::Other;
  /// Operators recorded with their shapes: index into Trace::input_shapes (and, read with
  /// ParseOptions::read_shapes, Trace::op_inputs); kNoKernelInfo if none.
  uint32_t input_shapes = 0xffffffffu;
  int64_t start_ns = 0;  ///< start, integer nanoseconds on the trace's clock
  int64_t dur_ns = 0;    ///< duration in nanoseconds (>= 0)
  int64_t pid = 0;       ///< process (CPU events) or device index (GPU events)
  int64_t tid = 0;       ///< thread (CPU events) or stream (GPU events)
  /// CPU operators and ranges: their own id. Runtime calls and GPU work: the id of the operator
  /// that was running when the work was launched (Kineto's "External id"); 0 when none.
  uint64_t external_id = 0;
  /// Runtime/driver calls and GPU work: the CUPTI correlation id joining a launch to its GPU
  /// work; 0 for CPU operators.
  uint64_t correlation = 0;
  /// Kernels (and HIP's launch calls, which carry the shape): index into Trace::kernels (grid,
  /// block, registers, shared memory).
  uint32_t kernel_info = kNoKernelInfo;
  /// Memory events: index into Trace::memory (bytes, device, total allocated); GPU copies and
  /// sets: into Trace::copy_bytes.
  uint32_t memory_info = kNoKernelInfo;

  int64_t end_ns() const { return start_ns + dur_ns; }
  bool on_device() const {
    return is_device_work(category) || category == Category::GpuUserAnnotation;
  }
};

/// True for a copy across a link, not within one GPU's memory: between host and GPU (Kineto's
/// "Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH ...", HIP's "CopyHostToDevice"...) or
/// between GPUs ("Memcpy PtoP", "CopyDeviceToDeviceP2P"...).
inline bool is_link_copy(const Event& e) {
  if (e.category != Category::Memcpy) return false;
  for (std::string_view k : {"HtoD", "DtoH", "HostToDevice", "DeviceToHost", "PtoP", "P2P", "Peer"})
    if (e.name.find(k) != std::string_view::npos) return true;
  return false;
}

/// True for a launch call or GPU work whose External id is its own correlation id, which links
/// it to no operator: torch 2.0-2.2's Kineto wrote every one so (kineto b96fe09 to #873), torch
/// 2.3-2.5's those launched outside any operator. Such work belongs to the operator around its
/// launch call.
inline bool links_to_itself(const Event& e) { return e.correlation != 0 && e.external_id == e.correlation; }

/// True for the span Kineto draws over the whole trace ("PyTorch Profiler (0)", cat "Trace"):
/// where it starts, the profiler started.
inline bool is_profiler_span(const Event& e) {
  return e.category == Category::Other && e.name.rfind("PyTorch Profiler (", 0) == 0;
}

/// True for a profiler step's range.
inline bool is_step(const Event& e) {
  return e.category == Category::UserAnnotation && is_step_name(e.name);
}

}  // namespace pil::trace
