#pragma once
/// \file
/// A whole profile in the trace kit's model: events, kernel launch shapes, flow arrows, and the
/// names they point to. Made by the parser (from a file) or by the LibTorch adapter (in process).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "trace/event.h"

namespace pil::trace {

/// Interned strings: each distinct name is stored once, and the views it hands out stay valid
/// for the pool's lifetime (a 1 GB trace repeats a few thousand names millions of times).
class NamePool {
 public:
  NamePool() = default;
  NamePool(const NamePool&) = delete;
  NamePool& operator=(const NamePool&) = delete;
  std::string_view intern(std::string_view s);
  size_t size() const { return views_.size(); }
  /// The names in the order they were first interned.
  const std::vector<std::string_view>& in_order() const { return order_; }
  /// The slot of the small cache in front of the hash set that `s` goes to (also used by the
  /// parallel reader's per-chunk names).
  static size_t recent_slot(std::string_view s);

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0, block_size_ = 0;
  std::unordered_set<std::string_view> views_;
  std::vector<std::string_view> order_;
  /// The same few names come back millions of times: a small direct-mapped cache in front of
  /// the hash set (a hit costs one memcmp, not a hash of the whole name).
  std::string_view recent_[1024];
};

/// How a kernel was launched (Kineto's kernel args; on ROCm, its launch call's).
struct KernelInfo {
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers = 0;       ///< per thread
  int64_t shared_memory = 0;   ///< bytes per block
  /// Kineto's "est. achieved occupancy %" (resident warps over the SM's maximum, estimated from
  /// the launch's registers, shared memory and block size); -1 when the trace has none.
  double est_occupancy_pct = -1;
  double blocks_per_sm = -1;   ///< Kineto's "blocks per SM": grid size over the SM count
};

/// One allocation (bytes > 0) or free (bytes < 0) of a `[memory]` event.
struct MemoryInfo {
  int64_t bytes = 0;
  /// Bytes the allocator had handed out after this event, when the trace says (Kineto's files
  /// do: "Total Allocated"); -1 when not (LibTorch's in-process events carry the change only).
  int64_t total_allocated = -1;
  bool cuda = false;       ///< a GPU allocation (Kineto's "Device Type" 1, or 6: HIP), else host memory
  int32_t device = -1;     ///< device index; -1 for host memory
  /// The device's kind as c10::DeviceType numbers it (Kineto's "Device Type"): 0 the host, 1 CUDA,
  /// 6 HIP, 12 XPU, 13 MPS...; `cuda` where 1 or 6. Not the host: a device's memory, GPU or not.
  int8_t device_type = 0;
};

/// The name torch gives a c10::DeviceType in a device string: "cpu", "cuda" (HIP's too: a ROCm
/// build names its GPU so), "xpu", "mps", "hpu", "mtia"...; "device type N" for a number it does
/// not have.
std::string device_type_name(int type);

/// Flow arrows ("ph": "s" at a launch, "f" at its GPU work): counted, not kept. The reports join
/// launches to GPU work through correlation ids, which every flow arrow mirrors; a trace whose
/// arrows do not pair up is still read.
struct FlowCounts {
  int64_t starts = 0, finishes = 0;
};

/// Arguments of an unexpected type that the reader skipped (read as absent) instead of refusing
/// the event: one odd field must not cost a user the whole trace. Counted per argument name.
struct SkippedFields {
  /// The arguments counted, in the order of `count`.
  static constexpr const char* kNames[] = {"External id", "correlation", "device", "stream",
                                           "registers per thread", "shared memory"};
  static constexpr size_t kKinds = sizeof(kNames) / sizeof(kNames[0]);
  int64_t events = 0;             ///< events with at least one skipped argument
  int64_t count[kKinds] = {};     ///< skipped arguments, by name
  bool any() const { return events > 0; }
  void add(const SkippedFields& o) {
    events += o.events;
    for (size_t k = 0; k < kKinds; ++k) count[k] += o.count[k];
  }
};

/// Where one element of the event array sits in the file, for `pil-trace slice` (which copies
/// the events it keeps byte for byte): kept only with ParseOptions::keep_sources.
struct ElementSource {
  uint64_t offset = 0;             ///< byte offset of its '{' (of the unpacked text for .json.gz)
  int64_t ts_ns = 0;               ///< its ts, 0 when it has none
  uint32_t event = kNoKernelInfo;  ///< its index in Trace::events; none for flows, metadata...
  char ph = 0;                     ///< its phase's first letter ('X', 's', 'f', 'M', 'i', ...)
};

/// One argument of an operator call as torch.profiler records it with record_shapes: one entry
/// of the operator's "Input Dims" with the matching entries of its "Input type" and, read with
/// ParseOptions::read_concrete, its "Concrete Inputs".
struct InputArg {
  /// As torch writes it: "float", "double", "c10::Half", "c10::BFloat16", "long int", "bool",
  /// "Scalar", "ScalarList", "TensorList", "" (None, or an argument it does not describe).
  std::string_view type;
  std::vector<int64_t> dims;               ///< a tensor's sizes; [] for a 0-d tensor, a scalar, None
  std::vector<std::vector<int64_t>> list;  ///< a TensorList's tensors' sizes (is_list)
  bool is_list = false;                    ///< written as a list of shapes ([[8, 16], [8, 16]])
  /// Its value as "Concrete Inputs" writes it: "[2, 1025]" (a ScalarList: a factory's sizes),
  /// "4" (a Scalar), "False", "cpu"; "" for a tensor, None, or where not read.
  std::string_view concrete;
};

/// An operator call's recorded inputs: its "Input Dims" and "Input type" together (and its
/// "Concrete Inputs", read with ParseOptions::read_concrete). A trace keeps each distinct
/// combination once (Trace::op_inputs); its calls point at it. Calls that differ only in their
/// concrete values (aten::ones of other sizes) have entries of their own, with the same
/// dims_text: the tables that group by input shapes group by that text, as Python does.
struct OpInputs {
  std::string_view dims_text;  ///< "Input Dims" as Python prints it: "[[16, 16], [16], []]"
  std::vector<InputArg> args;  ///< in argument order
  bool has_concrete = false;   ///< its "Concrete Inputs" were read (InputArg::concrete)
};

/// One GPU as the trace's `deviceProperties` describes it (Kineto writes the same fields on
/// ROCm: numSms is then the compute units, computeMajor/Minor the gfx version, 9.0 for gfx90a).
/// A field the trace does not give stays 0 (-1 for the compute capability).
struct DeviceInfo {
  int64_t id = -1;                ///< "id": the device index
  std::string name;               ///< "name": "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"
  int64_t total_global_mem = 0;   ///< "totalGlobalMem", bytes
  int32_t num_sms = 0;            ///< "numSms"
  int32_t compute_major = -1;     ///< "computeMajor"
  int32_t compute_minor = -1;     ///< "computeMinor"
  int32_t warp_size = 0;          ///< "warpSize": 32 on NVIDIA GPUs, 64 on AMD's Instinct
  /// computeMajor * 10 + computeMinor (80 for an A100); 0 where the trace does not give it.
  int32_t compute_capability() const {
    return compute_major >= 0 && compute_minor >= 0 && compute_major < 100 && compute_minor < 10
               ? int32_t(compute_major * 10 + compute_minor)
               : 0;
  }
};

struct Trace {
  std::vector<Event> events;
  /// Every element of the event array in file order (flow arrows and metadata included), with
  /// ParseOptions::keep_sources; empty otherwise.
  std::vector<ElementSource> sources;
  std::vector<KernelInfo> kernels;
  std::vector<MemoryInfo> memory;
  /// Bytes moved by GPU copies and sets (Kineto's "bytes" arg), where the trace gives them: a
  /// Memcpy or Memset event's `memory_info` indexes here (a memory event's, into `memory`).
  std::vector<int64_t> copy_bytes;
  /// Operators' input shapes as Python prints them ("[[64, 64], [64, 64]]"), interned; an
  /// event's `input_shapes` indexes here.
  std::vector<std::string_view> input_shapes;
  /// The operators' recorded inputs, each distinct ("Input Dims", "Input type", and with
  /// ParseOptions::read_concrete "Concrete Inputs") once, read only with
  /// ParseOptions::read_shapes: same index as `input_shapes` (whose text is dims_text; two
  /// entries may share a text, told apart by their concrete values).
  /// Empty without it, and in a trace made in process (the LibTorch adapter keeps the text).
  std::vector<OpInputs> op_inputs;
  FlowCounts flows;
  SkippedFields skipped;
  /// Elements of kinds the reports do not read, counted by kind to say so: "B/E" for begin and
  /// end events (Kineto writes complete events, "X"), and a category name for the events of a
  /// device pil-trace does not model (is_unmodelled_device_category), and the autograd
  /// profiler's "CUDA functions" of torch 1.7 and before (each operator's time on the GPU by CUDA
  /// events, not kernels on streams).
  std::map<std::string, int64_t> unread;
  static constexpr const char* kUnreadBeginEnd = "B/E";  ///< unread's key for begin and end events
  static constexpr const char* kUnreadLegacyCuda = "CUDA functions";  ///< and for those timings
  /// And for the async events ("ph": "b", "e", "n"): another tool's spans (a serving system's
  /// requests converted to the Chrome format), not a profiler's.
  static constexpr const char* kUnreadAsync = "b/e";
  /// And for CUPTI's range profiler's events (Kineto's "cuda_profiler_range"): a kernel's counter
  /// metrics each, over its own serialised run, not its time on a stream.
  static constexpr const char* kUnreadCuptiRange = "cuda_profiler_range";
  /// True for the keys above (the rest of unread is a device's events).
  static bool unread_kind_of_event(const std::string& kind) {
    return kind == kUnreadBeginEnd || kind == kUnreadLegacyCuda || kind == kUnreadAsync || kind == kUnreadCuptiRange;
  }
  /// An unread map's device kinds alone (is_unmodelled_device_category's: mtia_runtime 3,453...).
  static std::map<std::string, int64_t> unread_device_events(const std::map<std::string, int64_t>& unread) {
    std::map<std::string, int64_t> out;
    for (const auto& [kind, n] : unread)
      if (!unread_kind_of_event(kind)) out.emplace(kind, n);
    return out;
  }
  /// Slices read from the autograd profiler's own format (EventList's export: "CPU functions",
  /// no category), which holds a run's CPU side, and its GPU side only as each operator's GPU
  /// time where recorded with use_cuda=True ("CUDA functions", kUnreadLegacyCuda).
  int64_t autograd_profiler_slices = 0;
  std::vector<std::string> device_names;  ///< from deviceProperties, by device index
  /// deviceProperties in full, by device index (devices[i].name == device_names[i]); empty in a
  /// trace that names its devices only (the CUPTI tracer's).
  std::vector<DeviceInfo> devices;
  /// Lane names from the metadata events: (pid, tid) -> "thread 4676 (01_matmul_add)";
  /// (pid, -1) -> the process name.
  std::map<std::pair<int64_t, int64_t>, std::string> lane_names;
  /// baseTimeNanoseconds, when the trace gives one: event times are then relative to it.
  int64_t base_time_ns = 0;
  /// Slices of Python's own tracer (category "python_function": torch.profiler's with_stack in
  /// Python): it lengthens every call it traces on the host.
  int64_t python_functions = 0;
  /// Kineto's CUDA synchronization records (category "cuda_sync", with enable_cuda_sync_events:
  /// "Stream Wait Event", "Event Sync", "Stream Sync", "Context Sync" on the GPU's lanes), read
  /// as Category::Other and not used: `check` says the trace has them.
  int64_t cuda_sync_events = 0;
  /// The header's "with_flops": recorded with torch.profiler's with_flops=True, whose table
  /// counts the FLOPs of a few operators (python_flops.h).
  bool with_flops = false;
  /// One operator call's FLOPs as torch counted them in the process (KinetoEvent::flops(), the
  /// number Python's table adds up), by its index in `events`.
  struct CountedFlops {
    size_t event = 0;
    uint64_t flops = 0;
  };
  /// In a trace made in process with with_flops (the LibTorch adapter): the calls torch counted
  /// FLOPs of. A file holds none: its FLOPs follow from the calls' recorded inputs
  /// (python_flops.h), which a trace made in process does not keep (op_inputs).
  std::vector<CountedFlops> counted_flops;
  /// What the profiler logged while it recorded: Kineto writes the messages its logger collected
  /// into the trace's top level, a list per level ("ERROR", "WARNING", "INFO"), each message
  /// "LEVEL:date pid:tid file:line] text" (libkineto's Logger). The errors and warnings whole; of
  /// the INFO messages only the last "Record counts: ..." (the records Kineto left out, and
  /// whether its GPU side stopped early: profiler_log.h reads it). Empty messages are left out.
  /// Kineto wrote these lists until July 2026 (pytorch/kineto #1460; INFO until April, #1336).
  struct ProfilerLog {
    std::vector<std::string> errors, warnings;
    std::string record_counts;  ///< "" where the trace has none
  };
  ProfilerLog profiler_log;
  std::unique_ptr<NamePool> names = std::make_unique<NamePool>();

  std::string_view intern(std::string_view s) { return names->intern(s); }
  /// Where GPU `id`'s description is in device_names (and devices): at `id`; or, in a trace that
  /// describes one GPU only, that one whatever id its work carries (a process's GPUs are the ones
  /// it sees, and ROCm's traces number its one visible GPU otherwise: an MI300X's kernels on
  /// "device 9"); kNoDevice for none.
  static constexpr size_t kNoDevice = size_t(-1);
  size_t described(int64_t id) const {
    if (id >= 0 && size_t(id) < device_names.size()) return size_t(id);
    return id >= 0 && device_names.size() == 1 ? 0 : kNoDevice;
  }
  /// GPU `id`'s name, or "" where the trace does not describe it.
  std::string_view device_name(int64_t id) const {
    const size_t k = described(id);
    return k < device_names.size() ? std::string_view(device_names[k]) : std::string_view();
  }
  /// GPU `id`'s description in full, or nullptr.
  const DeviceInfo* device_info(int64_t id) const {
    const size_t k = described(id);
    return k < devices.size() ? &devices[k] : nullptr;
  }
  /// GPU `id`'s compute capability (DeviceInfo::compute_capability); 0 where unknown.
  int32_t compute_capability(int64_t id) const {
    const DeviceInfo* d = device_info(id);
    return d ? d->compute_capability() : 0;
  }
  const KernelInfo* kernel_info(const Event& e) const {
    return e.kernel_info < kernels.size() ? &kernels[e.kernel_info] : nullptr;
  }
  const MemoryInfo* memory_info(const Event& e) const {
    return e.category == Category::Memory && e.memory_info < memory.size() ? &memory[e.memory_info]
                                                                          : nullptr;
  }
  /// The bytes a GPU copy or set moved; -1 where the trace does not say.
  int64_t copy_bytes_of(const Event& e) const {
    return (e.category == Category::Memcpy || e.category == Category::Memset) &&
                   e.memory_info < copy_bytes.size()
               ? copy_bytes[e.memory_info]
               : -1;
  }
  /// An operator call's recorded inputs, or null (none recorded, or not read).
  const OpInputs* inputs_of(const Event& e) const {
    return e.input_shapes < op_inputs.size() ? &op_inputs[e.input_shapes] : nullptr;
  }
};

}  // namespace pil::trace
