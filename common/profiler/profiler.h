#pragma once
/// \file
/// torch.profiler for C++: profile your own LibTorch program as Python's `torch.profiler` does,
/// with its names — `profile`, `schedule`, `step()`, `on_trace_ready`,
/// `tensorboard_trace_handler`, `key_averages().table()`, `record_function`. LibTorch has no
/// public C++ profiler API; this is that API, over the project's one adapter to LibTorch's
/// internal one (torch_profiler/torch_profiler.h).
///
/// \code
///   namespace pp = pil::profiler;
///   pp::ProfileOptions o;
///   o.schedule = pp::schedule(/*wait=*/1, /*warmup=*/1, /*active=*/3);
///   o.on_trace_ready = pp::tensorboard_trace_handler("log");
///   pp::profile prof(std::move(o));
///   prof.start();
///   for (int i = 0; i < 5; ++i) { model->forward(x); prof.step(); }
///   prof.stop();
///   std::cout << prof.key_averages().table("cpu_time_total", 10);
/// \endcode
///
/// The steps are `ProfilerStep#N` ranges numbered by the schedule's step counter, as Python's;
/// the table groups them into one `ProfilerStep*` row, as Python's.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "cuda/nvtx.h"
#include "profiler/schedule.h"
#include "trace/key_averages.h"
#include "trace/trace.h"

namespace at {
struct RecordFunction;
}

namespace pil::profiler {

/// What is recorded: `torch.profiler.ProfilerActivity`.
enum class ProfilerActivity {
  CPU,   ///< operators and ranges on the host
  CUDA,  ///< kernels, copies and CUDA runtime calls (a GPU and a CUDA build of LibTorch)
};

class profile;
class record_function;

/// Called when a cycle's trace is ready (after its RECORD_AND_SAVE step, or at stop()).
using TraceHandler = std::function<void(profile&)>;

/// `torch.profiler.tensorboard_trace_handler(dir_name, worker_name, use_gzip)`: writes each
/// ready trace to `<dir_name>/<worker_name>.<time in ns>.pt.trace.json` (TensorBoard's and HTA's
/// layout), `.pt.trace.json.gz` gzip-compressed with `use_gzip`. `worker_name` defaults to
/// `<hostname>_<pid>`. The folder is made now: one that cannot be made or written throws
/// std::runtime_error here, before any step runs.
TraceHandler tensorboard_trace_handler(const std::filesystem::path& dir_name,
                                       std::string worker_name = "", bool use_gzip = false);

/// What records between the profiler's start and stop. The default is LibTorch's own profiler
/// (Kineto); the lessons' harness plugs in others (the project's CUPTI tracer, or none for an
/// outside profiler) and keeps the same schedule, steps and table.
class Tracer {
 public:
  virtual ~Tracer() = default;
  virtual void prepare() = 0;  ///< the WARMUP action: set up, pay the start-up cost
  virtual void start() = 0;    ///< begin recording
  virtual void stop() = 0;     ///< end recording; trace() holds what was recorded
  virtual const trace::Trace& trace() const = 0;
  /// Writes the Chrome trace file, whole or not at all; gzip-compressed where `path` ends in
  /// ".gz" (base/atomic_file.h's Gzip::ByName).
  virtual void save(const std::filesystem::path& path) const = 0;
  virtual std::string name() const = 0;  ///< for the log ("LibTorch profiler (Kineto)")
  /// A top-level key of the saved trace, its value JSON text, while recording; a recorder
  /// that writes no metadata ignores it.
  virtual void add_metadata_json(const std::string& /*key*/, const std::string& /*value*/) {}
  /// Whether it records allocations and frees when ProfileOptions::profile_memory asks (LibTorch's
  /// profiler does; the project's CUPTI tracer records none).
  virtual bool records_memory() const { return false; }
};

/// torch.profiler.profile's arguments.
struct ProfileOptions {
  std::set<ProfilerActivity> activities{ProfilerActivity::CPU};
  /// Unset: record from start() to stop(), with no step ranges (Python's default).
  std::optional<Schedule> schedule;
  TraceHandler on_trace_ready;  ///< unset: the trace waits for key_averages() and export
  bool record_shapes = false;   ///< input shapes per operator (key_averages(true) groups by them)
  bool profile_memory = false;  ///< allocations and frees (the table's memory columns)
  bool with_stack = false;      ///< source locations
  /// torch's FLOPs count for the calls of the operators it counts (aten::mm, addmm, bmm,
  /// baddbmm, conv2d, mul, add): the table's "Total FLOPs" column, in the unit Python picks
  /// (`Total MFLOPs`...). Turns record_shapes on, as Python's does; the saved trace says
  /// "with_flops", so `pil-trace ops` counts the same from the file.
  bool with_flops = false;
  /// Another recorder than LibTorch's (advanced; the lessons' harness uses it). Unset: LibTorch's.
  std::shared_ptr<Tracer> tracer;
};

/// `prof.key_averages()`: the operator table's rows, and `table()` to print them.
class EventList {
 public:
  explicit EventList(trace::KeyAverages averages) : averages_(std::move(averages)) {}
  /// The rows, as Python's `for e in prof.key_averages():` walks them:
  /// `for (const auto& row : prof.key_averages())` (the list lives through the loop).
  std::vector<trace::KeyAverage>::const_iterator begin() const { return averages_.rows.begin(); }
  std::vector<trace::KeyAverage>::const_iterator end() const { return averages_.rows.end(); }
  size_t size() const { return averages_.rows.size(); }
  const std::vector<trace::KeyAverage>& rows() const& { return averages_.rows; }
  /// Of a temporary (`prof.key_averages().rows()`): the rows themselves, not a reference into a
  /// list that is gone by the loop's first step.
  std::vector<trace::KeyAverage> rows() && { return std::move(averages_.rows); }
  const trace::KeyAverages& averages() const& { return averages_; }
  trace::KeyAverages averages() && { return std::move(averages_); }
  const trace::KeyAverage* find(std::string_view name) const { return averages_.find(name); }
  /// Python's `table(sort_by=, row_limit=)`: sort_by one of cpu_time_total,
  /// self_cpu_time_total, device_time_total, self_device_time_total (or the cuda_ spellings),
  /// count; "" keeps the rows in order of appearance. Another name throws std::invalid_argument.
  std::string table(const std::string& sort_by = "", int row_limit = 100) const;

 private:
  trace::KeyAverages averages_;
};

/// Why a metadata key and value (JSON text) cannot go into a trace, or "" when they can. Kineto's
/// writer turns every backslash of a metadata value into '/' (for Windows paths), so no JSON
/// escape survives: a quote, backslash or control character inside a string of the value, or
/// anywhere in the key, would leave a file that no longer reads as JSON (as Python's
/// `add_metadata("note", 'say "hi"')` does). The value must also be JSON.
std::string metadata_problem(const std::string& key, const std::string& value_json);

/// What a profile records of the activities asked for, where CUDA is or is not available:
/// Python's rule (torch/autograd/profiler.py). CUDA without a GPU (or in a CPU build of LibTorch)
/// is dropped with Python's warning, "CUDA is not available, disabling CUDA profiling"; nothing
/// left to record throws std::invalid_argument naming what to do.
struct ActivityChoice {
  std::set<ProfilerActivity> activities;
  std::string warning;  ///< "" when every activity asked for is recorded
};
ActivityChoice choose_activities(const std::set<ProfilerActivity>& asked, bool cuda_available);

/// The warning `profile` prints where a setting asked for cannot be honoured by the recorder
/// (`options.tracer`, LibTorch's when unset), or "": profile_memory with a tracer that records no
/// allocations would leave the trace without memory events and the table's memory columns empty,
/// with nothing saying why.
std::string unrecorded_settings(const ProfileOptions& options);

/// `torch.profiler.profile`. start(), step() at the end of each step, stop(); or let the
/// destructor stop it (the trace is then discarded, no handler runs). LibTorch's profiler records
/// the whole process, so one profile holds it at a time, from its warm-up to its recording's
/// end: start(), step() or stop() that would set up or start recording while another profile
/// holds it throws std::logic_error and changes nothing (Python lets the second one start, and
/// fails at the first one's end: "Can't disable Kineto profiler when it's not running").
class profile {
 public:
  explicit profile(ProfileOptions options = {});
  ~profile();
  profile(const profile&) = delete;
  profile& operator=(const profile&) = delete;

  /// Enters step 0 (Python's `__enter__`). Throws std::logic_error if already started.
  void start();
  /// Ends the current step and begins the next; the schedule decides what the profiler does.
  /// Throws std::logic_error before start() or after stop().
  void step();
  /// Ends the last step (Python's `__exit__`): a recording cycle stops and its trace is ready.
  /// Throws std::logic_error before start().
  void stop();

  /// The schedule's step counter (Python's `prof.step_num`): N in the current `ProfilerStep#N`.
  int64_t step_num() const { return step_num_; }
  /// What the profiler does during the current step.
  ProfilerAction current_action() const { return action_; }
  bool running() const { return running_; }

  /// The operator table of the latest ready trace: Python's `prof.key_averages()`. With
  /// `group_by_input_shape` (needs record_shapes), one row per name and input shapes.
  /// Throws std::logic_error when no trace is ready yet.
  EventList key_averages(bool group_by_input_shape = false) const;
  /// Writes the latest ready trace: Python's `prof.export_chrome_trace(path)`, gzip-compressed
  /// where `path` ends in ".gz" as Python's is. LibTorch saves a trace once: a second call for
  /// the same trace copies the first one's file, and throws std::runtime_error where that file
  /// has changed or gone since.
  void export_chrome_trace(const std::filesystem::path& path) const;
  /// The latest ready trace in the trace kit's model (events, kernels, memory).
  const trace::Trace& events() const;
  /// Python's `prof.add_metadata_json(key, value)`: a top-level key of the trace file, `value`
  /// JSON text (Kineto's own `distributedInfo` is one). Only while recording; otherwise throws
  /// std::logic_error. A key or value the trace could not keep (metadata_problem) throws
  /// std::invalid_argument: Python writes it, and the file no longer reads as JSON.
  void add_metadata_json(const std::string& key, const std::string& value);
  /// Python's `prof.add_metadata(key, value)`: the same with `value` a string, written as a JSON
  /// string, each backslash as '/' (as Kineto writes it, and Python's: a Windows path reads back
  /// with '/' between its folders); a quote or control character in it is refused
  /// (metadata_problem).
  void add_metadata(const std::string& key, const std::string& value);
  /// Python's `prof.preset_metadata_json(key, value)`: a key set any time, written into every
  /// trace recorded from the next recording on (`value` JSON text, checked now).
  void preset_metadata_json(const std::string& key, const std::string& value);
  /// Which recorder this profile uses ("LibTorch profiler (Kineto)").
  std::string tracer_name() const { return tracer_->name(); }

 private:
  ProfilerAction action_of(int64_t step) const;
  void transit(ProfilerAction from, std::optional<ProfilerAction> to);
  void refuse_if_another_records(ProfilerAction from, std::optional<ProfilerAction> to) const;
  /// add_metadata_json's work, its errors naming `call`.
  void add_metadata_as(const char* call, const std::string& key, const std::string& value_json);
  void trace_ready();
  void open_step();
  void close_step();
  void require_trace(const char* what) const;

  ProfileOptions options_;
  std::shared_ptr<Tracer> tracer_;
  bool running_ = false, started_once_ = false, has_trace_ = false, tracing_ = false;
  int64_t step_num_ = 0;
  ProfilerAction action_ = ProfilerAction::RECORD;
  std::unique_ptr<record_function> step_range_;
  std::map<std::string, std::string> preset_metadata_;  ///< preset_metadata_json's keys
};

/// `with torch.profiler.record_function("name"):` as a scope: a `user_annotation` range in the
/// trace and a row in the table, and an NVTX range of the same name for Nsight Systems.
class record_function {
 public:
  explicit record_function(std::string name);
  ~record_function();
  record_function(const record_function&) = delete;
  record_function& operator=(const record_function&) = delete;

 private:
  std::string name_;
  cuda::NvtxRange nvtx_;
  std::unique_ptr<at::RecordFunction> scope_;
};

/// LibTorch's own profiler (Kineto) as a Tracer: what `profile` records with by default.
std::shared_ptr<Tracer> libtorch_tracer(const std::set<ProfilerActivity>& activities,
                                        bool record_shapes, bool profile_memory, bool with_stack,
                                        bool with_flops = false);

}  // namespace pil::profiler
