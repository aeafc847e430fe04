#include "profiler/profiler.h"

#include <ATen/record_function.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "base/atomic_file.h"
#include "torch_profiler/torch_profiler.h"

namespace fs = std::filesystem;

namespace pil::profiler {

// --- record_function -------------------------------------------------------------------------

record_function::record_function(std::string name) : name_(std::move(name)), nvtx_(name_.c_str()) {
  scope_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (scope_->isActive()) scope_->before(name_);
}

record_function::~record_function() = default;  // RecordFunction's destructor closes the scope

// --- LibTorch's profiler as a Tracer -----------------------------------------------------------

namespace {

class LibTorchTracer : public Tracer {
 public:
  explicit LibTorchTracer(ProfilerSettings s) : profiler_(s) {}
  void prepare() override { profiler_.prepare(); }
  void start() override { profiler_.start(); }
  void stop() override { profiler_.stop(); }
  const trace::Trace& trace() const override { return profiler_.trace(); }
  void save(const fs::path& path) const override { profiler_.save_chrome_trace(path); }
  std::string name() const override { return "LibTorch profiler (Kineto)"; }
  bool records_memory() const override { return true; }
  void add_metadata_json(const std::string& key, const std::string& value) override {
    profiler_.add_metadata_json(key, value);
  }

 private:
  TorchProfiler profiler_;
};

}  // namespace

std::shared_ptr<Tracer> libtorch_tracer(const std::set<ProfilerActivity>& activities,
                                        bool record_shapes, bool profile_memory, bool with_stack,
                                        bool with_flops) {
  ProfilerSettings s;
  s.cpu = activities.count(ProfilerActivity::CPU) > 0;
  s.cuda = activities.count(ProfilerActivity::CUDA) > 0;
  s.record_shapes = record_shapes || with_flops;  // torch counts FLOPs from the inputs
  s.profile_memory = profile_memory;
  s.with_stack = with_stack;
  s.with_flops = with_flops;
  return std::make_shared<LibTorchTracer>(s);
}

// --- tensorboard_trace_handler -----------------------------------------------------------------

TraceHandler tensorboard_trace_handler(const fs::path& dir_name, std::string worker_name,
                                       bool use_gzip) {
  // A file made and removed (access(W_OK) passes for root where no file can be made: /sys's
  // folders, a read-only mount), found only when the first trace was written, after the run.
  if (const std::string why = pil::make_writable_folder(dir_name); !why.empty())
    throw std::runtime_error("tensorboard_trace_handler: " + why);
  if (worker_name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    worker_name = std::string(host) + "_" + std::to_string(::getpid());
  }
  return [dir_name, worker_name, use_gzip](profile& prof) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    prof.export_chrome_trace(dir_name / (worker_name + "." + std::to_string(ns) + ".pt.trace.json" +
                                         (use_gzip ? ".gz" : "")));
  };
}

// --- EventList -------------------------------------------------------------------------------

std::string EventList::table(const std::string& sort_by, int row_limit) const {
  trace::TableOptions o;
  o.sort = trace::SortKey::Unsorted;
  if (!sort_by.empty()) {
    const auto key = trace::parse_sort_key(sort_by);
    if (!key)
      throw std::invalid_argument("key_averages().table(): sort_by \"" + sort_by +
                                  "\" is not a column; allowed: " + trace::sort_key_names() +
                                  " (or \"\" for no sorting)");
    o.sort = *key;
  }
  o.row_limit = row_limit;
  return trace::format_table(averages_, o);
}

// --- profile ---------------------------------------------------------------------------------

ActivityChoice choose_activities(const std::set<ProfilerActivity>& asked, bool cuda_available) {
  if (asked.empty())
    throw std::invalid_argument("pil::profiler::profile: activities is empty; allowed: "
                                "ProfilerActivity::CPU, ProfilerActivity::CUDA or both");
  ActivityChoice c{asked, ""};
  if (asked.count(ProfilerActivity::CUDA) && !cuda_available) {
    c.activities.erase(ProfilerActivity::CUDA);
    c.warning = "CUDA is not available, disabling CUDA profiling";
  }
  if (c.activities.empty())
    throw std::invalid_argument(
        "pil::profiler::profile: activities holds only ProfilerActivity::CUDA and CUDA is not "
        "available here (no GPU, or a CPU build of LibTorch); allowed: add ProfilerActivity::CPU, "
        "or run on a GPU");
  return c;
}

std::string unrecorded_settings(const ProfileOptions& options) {
  if (!options.profile_memory || !options.tracer || options.tracer->records_memory()) return "";
  return "profile_memory is on, but the recorder, " + options.tracer->name() +
         ", records no allocations or frees: the trace will hold no memory events (LibTorch's "
         "profiler records them)";
}

namespace {
/// The profile holding the process's profiler (set up or recording), if any: LibTorch's profiler
/// (and CUPTI) record the whole process.
std::atomic<const profile*> g_holder{nullptr};
}  // namespace

profile::profile(ProfileOptions options) : options_(std::move(options)) {
  if (!options_.tracer) {
    // Asked only where CUDA is wanted, as Python does: asking starts CUDA on a GPU machine.
    const bool cuda = options_.activities.count(ProfilerActivity::CUDA) && torch::cuda::is_available();
    ActivityChoice c = choose_activities(options_.activities, cuda);
    if (!c.warning.empty()) std::cerr << "pil::profiler: warning: " << c.warning << "\n";
    options_.activities = std::move(c.activities);
  }
  if (const std::string w = unrecorded_settings(options_); !w.empty())
    std::cerr << "pil::profiler: warning: " << w << "\n";
  tracer_ = options_.tracer ? options_.tracer
                            : libtorch_tracer(options_.activities, options_.record_shapes,
                                              options_.profile_memory, options_.with_stack,
                                              options_.with_flops);
}

profile::~profile() {
  if (!running_) return;
  try {  // no handler here: a destructor must not throw, and the trace is not complete
    step_range_.reset();
    if (tracing_) tracer_->stop();
  } catch (...) {
  }
  const profile* self = this;
  g_holder.compare_exchange_strong(self, nullptr);
}

ProfilerAction profile::action_of(int64_t step) const {
  return options_.schedule ? (*options_.schedule)(step) : ProfilerAction::RECORD;
}

void profile::open_step() {
  // Python records step ranges only with a schedule; the range opens after the profiler
  // started, so the first recorded step's range is in the trace.
  if (options_.schedule) step_range_ = std::make_unique<record_function>(trace::step_name(step_num_));
}

void profile::close_step() { step_range_.reset(); }

void profile::start() {
  if (running_) throw std::logic_error("pil::profiler::profile::start(): already started");
  if (started_once_)
    throw std::logic_error("pil::profiler::profile::start(): this profile has already run; "
                           "make a new one for another run");
  refuse_if_another_records(ProfilerAction::NONE, action_of(step_num_));
  running_ = started_once_ = true;
  action_ = action_of(step_num_);
  transit(ProfilerAction::NONE, action_);
  open_step();
}

void profile::step() {
  if (!running_)
    throw std::logic_error(std::string("pil::profiler::profile::step(): called ") +
                           (started_once_ ? "after stop()" : "before start()") +
                           "; allowed: start(), then step() at the end of each step, then stop()");
  refuse_if_another_records(action_, action_of(step_num_ + 1));
  close_step();
  const ProfilerAction previous = action_;
  ++step_num_;
  action_ = action_of(step_num_);
  transit(previous, action_);
  open_step();
}

void profile::stop() {
  if (!running_)
    throw std::logic_error(std::string("pil::profiler::profile::stop(): called ") +
                           (started_once_ ? "twice" : "before start()"));
  refuse_if_another_records(action_, std::nullopt);
  close_step();
  running_ = false;
  transit(action_, std::nullopt);
}

// A transition that sets the recorder up or starts it, while another profile records, is refused
// before anything changes: this profile stays where it was.
void profile::refuse_if_another_records(ProfilerAction from, std::optional<ProfilerAction> to) const {
  using A = ProfilerAction;
  const bool sets_up = (to && (*to == A::WARMUP || records(*to))) || from == A::WARMUP;
  const profile* other = g_holder.load();
  if (sets_up && other && other != this)
    throw std::logic_error(
        "pil::profiler::profile: another profile is recording or warming up; LibTorch's profiler "
        "records the whole process, one profile at a time: stop() the other first");
}

// The transitions of torch.profiler.profile's action_map (torch/profiler/profiler.py): what the
// profiler does between two steps' actions. `to` unset: stop().
void profile::transit(ProfilerAction from, std::optional<ProfilerAction> to) {
  using A = ProfilerAction;
  // This profile holds the process's profiler from its set-up (WARMUP's prepare) to the end of
  // its recording; refuse_if_another_records, before the transition, has made sure no other does.
  auto prepare = [&] {
    g_holder = this;
    tracer_->prepare();
  };
  auto begin = [&] {
    g_holder = this;
    tracer_->start();
    tracing_ = true;
    for (const auto& [key, value] : preset_metadata_) tracer_->add_metadata_json(key, value);
  };
  auto end = [&] {
    tracing_ = false;
    g_holder = nullptr;
    tracer_->stop();
  };
  if (!to) {  // stop()
    if (from == A::WARMUP) {
      begin();
      end();
    } else if (records(from)) {
      end();
      trace_ready();
    }
    return;
  }
  switch (from) {
    case A::NONE:
      if (*to == A::WARMUP) prepare();
      if (records(*to)) {
        prepare();
        begin();
      }
      break;
    case A::WARMUP:
      if (*to == A::NONE) {  // Python warns "Incorrect schedule: WARMUP followed by NONE"
        begin();
        end();
      }
      if (records(*to)) begin();
      break;
    case A::RECORD:
      if (!records(*to)) end();  // Python warns: RECORD followed by NONE or WARMUP
      break;
    case A::RECORD_AND_SAVE:
      end();
      trace_ready();
      if (*to != A::NONE) prepare();
      if (records(*to)) begin();
      break;
  }
}

std::string metadata_problem(const std::string& key, const std::string& value_json) {
  auto unkept = [](const std::string& text) {
    for (const char c : text)
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return true;
    return false;
  };
  const std::string why =
      " (Kineto's writer turns every backslash into '/', so no JSON escape survives; the file "
      "would not read)";
  if (key.empty()) return "the key is empty";
  if (unkept(key)) return "the key '" + key + "' holds a quote, backslash or control character" + why;
  if (!nlohmann::json::accept(value_json)) return "the value of '" + key + "' is not JSON text: " + value_json;
  if (value_json.find('\\') != std::string::npos)
    return "the value of '" + key + "' holds a quote, backslash or control character inside a string" + why;
  return "";
}

namespace {
void refuse_bad_metadata(const char* call, const std::string& key, const std::string& value_json) {
  if (const std::string problem = metadata_problem(key, value_json); !problem.empty())
    throw std::invalid_argument(std::string("pil::profiler::profile::") + call + ": " + problem);
}
}  // namespace

void profile::add_metadata_json(const std::string& key, const std::string& value) {
  add_metadata_as("add_metadata_json()", key, value);
}

void profile::add_metadata(const std::string& key, const std::string& value) {
  // Kineto writes every backslash as '/' anyway; done before encoding, a Windows path is kept as
  // Python's add_metadata keeps it ("C:/data"), not refused as an escape.
  std::string text = value;
  std::replace(text.begin(), text.end(), '\\', '/');
  add_metadata_as("add_metadata()", key,
                  nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void profile::add_metadata_as(const char* call, const std::string& key, const std::string& value_json) {
  if (!tracing_)
    throw std::logic_error(std::string("pil::profiler::profile::") + call +
                           ": only while recording (a RECORD or RECORD_AND_SAVE step)");
  refuse_bad_metadata(call, key, value_json);
  tracer_->add_metadata_json(key, value_json);
}

void profile::preset_metadata_json(const std::string& key, const std::string& value) {
  refuse_bad_metadata("preset_metadata_json()", key, value);
  preset_metadata_[key] = value;
}

void profile::trace_ready() {
  has_trace_ = true;
  if (options_.on_trace_ready) options_.on_trace_ready(*this);
}

void profile::require_trace(const char* what) const {
  if (!has_trace_)
    throw std::logic_error(std::string("pil::profiler::profile::") + what +
                           ": no trace is ready yet; one is after a RECORD_AND_SAVE step ends "
                           "(step()) or after stop()");
}

EventList profile::key_averages(bool group_by_input_shape) const {
  require_trace("key_averages()");
  return EventList(trace::key_averages(tracer_->trace(), group_by_input_shape));
}

void profile::export_chrome_trace(const fs::path& path) const {
  require_trace("export_chrome_trace()");
  tracer_->save(path);
}

const trace::Trace& profile::events() const {
  require_trace("events()");
  return tracer_->trace();
}

}  // namespace pil::profiler
