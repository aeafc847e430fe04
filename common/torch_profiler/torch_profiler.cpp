#include "torch_profiler/torch_profiler.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <kineto/ActivityType.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"

// From torch/csrc/profiler/kineto_shim.h, which needs Kineto's own include folder: the call
// torch.profiler makes for `distributedInfo` (a top-level key of the saved trace).
namespace torch::autograd::profiler {
TORCH_API void addMetadataJson(const std::string& key, const std::string& value);
}

namespace pil {

namespace tap = torch::autograd::profiler;
namespace tpi = torch::profiler::impl;

struct TorchProfiler::Result {
  std::unique_ptr<tap::ProfilerResult> result;
  /// LibTorch saves a result once ("Trace is already saved." after). The one save goes to the
  /// first path asked for where its name is plain (written whole beside it, then renamed: a trace
  /// of gigabytes is written once), and a later save copies that file while it is as the save
  /// left it; where the first name ends in ".gz", to a private plain file, compressed into the
  /// path and kept for later saves.
  std::string saved;  ///< the private file, or "" (a first save to a plain name, or none yet)
  std::filesystem::path first;  ///< the first plain save's file, or ""
  struct stat first_stat {};    ///< that file as the save left it
  ~Result() {
    if (!saved.empty()) ::unlink(saved.c_str());
  }
};

namespace {

tpi::ProfilerConfig make_config(const ProfilerSettings& s) {
  return tpi::ProfilerConfig(tpi::ProfilerState::KINETO, s.record_shapes, s.profile_memory,
                             s.with_stack, s.with_flops, /*with_modules=*/false,
                             tpi::ExperimentalConfig());
}

std::set<tpi::ActivityType> activities(const ProfilerSettings& s) {
  std::set<tpi::ActivityType> a;
  if (s.cpu) a.insert(tpi::ActivityType::CPU);
  if (s.cuda) a.insert(tpi::ActivityType::CUDA);
  return a;
}

trace::Category category_of(uint8_t kineto_type) {
  using K = libkineto::ActivityType;
  switch (static_cast<K>(kineto_type)) {
    case K::CPU_OP: return trace::Category::CpuOp;
    case K::USER_ANNOTATION: return trace::Category::UserAnnotation;
    case K::GPU_USER_ANNOTATION: return trace::Category::GpuUserAnnotation;
    case K::CUDA_RUNTIME: return trace::Category::Runtime;
    case K::CUDA_DRIVER: return trace::Category::Driver;
    case K::CONCURRENT_KERNEL: return trace::Category::Kernel;
    case K::GPU_MEMCPY: return trace::Category::Memcpy;
    case K::GPU_MEMSET: return trace::Category::Memset;
    default: return trace::Category::Other;
  }
}

/// Input shapes as Python prints them (str of a list of lists): "[[64, 64], [64], []]".
std::string shapes_text(const c10::ArrayRef<std::vector<int64_t>> shapes) {
  std::string out = "[";
  for (size_t i = 0; i < shapes.size(); ++i) {
    out += i ? ", [" : "[";
    for (size_t j = 0; j < shapes[i].size(); ++j)
      out += (j ? ", " : "") + std::to_string(shapes[i][j]);
    out += "]";
  }
  return out + "]";
}

trace::Event convert(const tap::KinetoEvent& k, trace::Trace& into, bool with_flops) {
  trace::Event e;
  e.name = into.intern(k.name());
  e.category = category_of(k.activityType());
  e.start_ns = int64_t(k.startNs());
  e.dur_ns = k.endNs() > k.startNs() ? int64_t(k.endNs() - k.startNs()) : 0;
  if (e.on_device()) {
    e.pid = k.deviceIndex();
    e.tid = k.deviceResourceId();
  } else {
    e.tid = int64_t(k.startThreadId());
  }
  if (e.name == "[memory]") {  // an allocation or free (profile_memory): bytes, no duration
    e.category = trace::Category::Memory;
    e.dur_ns = 0;
    e.memory_info = uint32_t(into.memory.size());
    into.memory.push_back({k.nBytes(), -1,
                           k.deviceType() == c10::DeviceType::CUDA || k.deviceType() == c10::DeviceType::HIP,
                           k.deviceType() == c10::DeviceType::CPU ? -1 : k.deviceIndex(),
                           int8_t(k.deviceType())});
    return e;
  }
  if (trace::is_torch_scope(e.category)) {
    if (k.hasShapes()) {
      e.input_shapes = uint32_t(into.input_shapes.size());
      into.input_shapes.push_back(into.intern(shapes_text(k.shapes())));
    }
    e.external_id = k.correlationId();  // an operator's own id, which its GPU work points to
    // What torch counted for this call (0 for the operators it does not count): Python's table
    // adds up the same number (FunctionEvent.flops is KinetoEvent::flops()).
    if (with_flops && k.flops()) into.counted_flops.push_back({into.events.size(), k.flops()});
  } else {
    e.correlation = k.correlationId();
    e.external_id = k.linkedCorrelationId();
  }
  return e;
}

}  // namespace

TorchProfiler::TorchProfiler(ProfilerSettings settings) : settings_(settings) {
  // Without CUDA tracing Kineto still asks for GPUs (for the trace's deviceProperties) and, on a
  // machine without one, logs "gpuGetDeviceCount failed" and its stage messages on stderr.
  // Level 5 is above Kineto's highest (ERROR = 4): silent. A level the user set is kept.
  if (!settings_.cuda) ::setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
}

TorchProfiler::~TorchProfiler() {
  if (recording_) {
    try {
      tap::disableProfiler();
    } catch (...) {
      // Destructors do not throw; the profiler is off either way.
    }
  }
}

void TorchProfiler::prepare() {
  if (prepared_) return;
  tap::prepareProfiler(make_config(settings_), activities(settings_));
  prepared_ = true;
}

void TorchProfiler::start() {
  if (recording_) return;
  prepare();
  tap::enableProfiler(make_config(settings_), activities(settings_));
  recording_ = true;
  // As torch.profiler's start_trace: the saved trace says it was recorded with_flops, so a
  // reader of the file (pil-trace ops, Python) counts the same FLOPs from its inputs.
  if (settings_.with_flops) add_metadata_json("with_flops", "1");
}

void TorchProfiler::add_metadata_json(const std::string& key, const std::string& value) {
  if (!recording_) throw std::logic_error("TorchProfiler::add_metadata_json() while not recording");
  tap::addMetadataJson(key, value);
}

void TorchProfiler::stop() {
  if (!recording_) throw std::logic_error("TorchProfiler::stop() without start()");
  recording_ = false;
  prepared_ = false;  // the next cycle prepares again, as Python's prepare_trace
  result_ = std::make_unique<Result>();
  result_->result = tap::disableProfiler();
  trace_ = trace::Trace{};
  trace_.with_flops = settings_.with_flops;
  for (const auto& k : result_->result->events())
    trace_.events.push_back(convert(k, trace_, settings_.with_flops));
}

namespace {

/// Whether `a` is the same file as `b` was (device, inode, size and modification time).
bool unchanged(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

/// LibTorch's one save of `result` into `file`; its error (whose what() carries a C++
/// backtrace) as its message alone.
void save_once(tap::ProfilerResult& result, const std::string& file) {
  try {
    result.save(file);
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
}

/// Kineto names a trace after the file it saved it in (its last field, "traceName", on a line
/// of its own): where the save went to a temporary file, that file's path, which is gone once
/// the trace is in place. The field is set to `name`, the file the trace is written as, by
/// rewriting the file's tail in place (a trace of any size: the last few kilobytes only), as
/// JSON (Kineto writes the path unescaped: a quote in it made the file unreadable). Best effort:
/// a trace without the field, or one this cannot rewrite, is left as it was; never throws, since
/// LibTorch's one save is already spent.
void name_trace(const std::string& file, const std::string& name) noexcept {
  try {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    if (!f) return;
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    const std::streamoff from = std::max<std::streamoff>(0, size - 8192);
    std::string tail(size_t(size - from), '\0');
    f.seekg(from);
    if (!f.read(tail.data(), std::streamsize(tail.size()))) return;
    const std::string key = "\"traceName\": \"";
    const size_t at = tail.rfind(key);
    if (at == std::string::npos) return;
    const size_t value = at + key.size();
    // The value ends at the last quote of its line: a quote inside an unescaped path, or an
    // escaped one of a name set before, comes earlier.
    const size_t line_end = std::min(tail.find('\n', value), tail.size());
    const size_t end = line_end > value ? tail.rfind('"', line_end - 1) : std::string::npos;
    if (end == std::string::npos || end < value) return;
    // Not UTF-8 (a path's bytes): replaced by U+FFFD, as a JSON reader needs text.
    const std::string quoted = nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const std::string rewritten = quoted.substr(1, quoted.size() - 2) + tail.substr(end);
    f.seekp(from + std::streamoff(value));
    f.write(rewritten.data(), std::streamsize(rewritten.size()));
    f.flush();
    const bool written = bool(f);
    if (written && ::truncate(file.c_str(), off_t(from + std::streamoff(value + rewritten.size()))) == 0) return;
    // Put the old tail back (the file as LibTorch wrote it).
    f.clear();
    f.seekp(from + std::streamoff(value));
    f.write(tail.data() + value, std::streamsize(tail.size() - value));
    f.flush();
    (void)::truncate(file.c_str(), off_t(size));
  } catch (...) {
    // The trace stays as LibTorch wrote it.
  }
}

}  // namespace

void TorchProfiler::save_chrome_trace(const std::filesystem::path& path) const {
  if (!result_) throw std::logic_error("TorchProfiler::save_chrome_trace() before stop()");
  Result& r = *result_;
  if (r.saved.empty() && r.first.empty()) {
    if (!named_gz(path)) {  // straight into place: one write
      write_file_atomically(path, [&](const std::filesystem::path& tmp) {
        // LibTorch counts a save that could not open its file as done (it logs the failure and
        // returns): a file that cannot be made fails here, before the one save is spent.
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) throw std::runtime_error(std::strerror(errno));
        ::close(fd);
        save_once(*r.result, tmp);
        name_trace(tmp, path.string());
      });
      char* where = ::realpath(path.c_str(), nullptr);  // absolute: a later save may run elsewhere
      if (!where || ::stat(where, &r.first_stat) != 0) {
        std::free(where);
        throw std::runtime_error("cannot read back " + path.string() + " after writing it");
      }
      r.first = where;
      std::free(where);
      return;
    }
    const char* dir = std::getenv("TMPDIR");
    std::string name = std::string(dir && *dir ? dir : "/tmp") + "/pil-trace-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw std::runtime_error("cannot make a temporary file for the trace in " + name);
    ::close(fd);
    try {
      save_once(*r.result, name);
    } catch (const std::runtime_error& e) {
      ::unlink(name.c_str());
      throw std::runtime_error("cannot write " + path.string() + ": " + e.what());
    }
    r.saved = name;
  }
  if (!r.saved.empty()) {
    name_trace(r.saved, path.string());  // the private copy, named for each file made from it
    copy_file_atomically(r.saved, path, Gzip::ByName);  // compressed in the copy's one pass
    return;
  }
  struct stat now {};
  if (::stat(r.first.c_str(), &now) != 0 || !unchanged(now, r.first_stat))
    throw std::runtime_error("cannot write " + path.string() +
                             ": LibTorch saves a trace once; it went to " + r.first.string() +
                             ", which has changed or gone since");
  struct stat target {};
  if (::stat(path.c_str(), &target) == 0 && unchanged(target, r.first_stat)) return;  // that file
  copy_file_atomically(r.first, path, Gzip::ByName);
}

}  // namespace pil
