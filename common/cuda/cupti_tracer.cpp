#include "cuda/cupti_tracer.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "cuda/check.h"
#include "cuda/names.h"
#include "cuda/runtime.h"
#include "trace/chrome_writer.h"

namespace pil::cuda {

namespace {

constexpr size_t kBufferBytes = size_t(8) << 20;
constexpr size_t kAlign = 8;

/// CUPTI delivers records through plain C callbacks: they reach the one active tracer through
/// this pointer (CUPTI allows one subscriber per process, so there is at most one).
std::mutex g_mutex;
CuptiTracer* g_active = nullptr;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* p = nullptr;
  if (posix_memalign(&p, kAlign, kBufferBytes) != 0) p = nullptr;
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? kBufferBytes : 0;
  *max_records = 0;
}

}  // namespace

/// The fields every GPU-side record has: times, device, stream, correlation.
template <typename Record>
void fill_gpu_work(trace::Event& e, const Record* r, uint64_t base) {
  e.start_ns = int64_t(r->start) - int64_t(base);
  e.dur_ns = r->end > r->start ? int64_t(r->end - r->start) : 0;
  e.pid = r->deviceId;
  e.tid = r->streamId;
  e.correlation = r->correlationId;
}

struct CuptiTracer::State {
  trace::Trace trace;
  uint64_t base = 0;
  bool running = false;
  /// NVTX range starts waiting for their ends: marker id -> (start, thread, name).
  struct Open {
    uint64_t start;
    uint32_t thread;
    std::string_view name;
  };
  std::map<uint32_t, Open> open_markers;

  int64_t rel(uint64_t t) const { return int64_t(t) - int64_t(base); }

  void add(const CUpti_Activity* record) {
    using trace::Category;
    trace::Event e;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
        const char* name = nullptr;
        cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                             a->cbid, &name);
        // CUPTI's names carry a version ("cudaLaunchKernel_v7000"); Kineto's do not.
        e.name = trace.intern(name ? api_name(name) : std::string_view("unknown API call"));
        e.category = runtime ? Category::Runtime : Category::Driver;
        e.start_ns = rel(a->start);
        e.dur_ns = a->end > a->start ? int64_t(a->end - a->start) : 0;
        e.pid = a->processId;
        e.tid = a->threadId;
        e.correlation = a->correlationId;
        break;
      }
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        // CUPTI hands over the mangled name; Kineto shows it demangled.
        e.name = trace.intern(k->name ? kernel_name(k->name) : std::string("kernel"));
        e.category = Category::Kernel;
        fill_gpu_work(e, k, base);
        trace::KernelInfo info;
        info.grid[0] = k->gridX, info.grid[1] = k->gridY, info.grid[2] = k->gridZ;
        info.block[0] = k->blockX, info.block[1] = k->blockY, info.block[2] = k->blockZ;
        info.registers = k->registersPerThread;
        info.shared_memory = int64_t(k->staticSharedMemory) + k->dynamicSharedMemory;
        e.kernel_info = uint32_t(trace.kernels.size());
        trace.kernels.push_back(info);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        static const char* kinds[] = {"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                                      "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                                      "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
        e.name = trace.intern(m->copyKind < sizeof kinds / sizeof *kinds ? kinds[m->copyKind] : "Memcpy");
        e.category = Category::Memcpy;
        fill_gpu_work(e, m, base);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        e.name = trace.intern("Memset");
        e.category = Category::Memset;
        fill_gpu_work(e, m, base);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MARKER: {
        // NVTX push/pop: a start record and an end record with the same id become one range.
        const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
        if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
          open_markers[m->id] = {m->timestamp, m->objectId.pt.threadId,
                                 trace.intern(m->name ? m->name : "range")};
          return;
        }
        if (!(m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END)) return;
        auto it = open_markers.find(m->id);
        if (it == open_markers.end()) return;
        e.name = it->second.name;
        e.category = Category::UserAnnotation;
        e.start_ns = rel(it->second.start);
        e.dur_ns = m->timestamp > it->second.start ? int64_t(m->timestamp - it->second.start) : 0;
        e.pid = m->objectId.pt.processId;
        e.tid = it->second.thread;
        open_markers.erase(it);
        break;
      }
      default:
        return;
    }
    trace.events.push_back(e);
  }
};

namespace {

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    CUpti_Activity* record = nullptr;
    while (g_active && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
      g_active->collect(static_cast<const void*>(record));
  }
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MARKER,
};

}  // namespace

CuptiTracer::CuptiTracer() : state_(std::make_unique<State>()) {}

CuptiTracer::~CuptiTracer() {
  if (state_->running) {
    try {
      stop();
    } catch (...) {
      // Destructors do not throw.
    }
  }
}

void CuptiTracer::route_nvtx_to_cupti() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  // The CUPTI library this program is linked with is the injection NVTX wants.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetTimestamp), &info) && info.dli_fname)
    ::setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

void CuptiTracer::start() {
  if (state_->running) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_active) throw Error("a CUPTI tracer is already recording in this process");
    g_active = this;
  }
  try {
    PIL_CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    for (CUpti_ActivityKind k : kKinds) PIL_CUPTI_CHECK(cuptiActivityEnable(k));
    PIL_CUPTI_CHECK(cuptiGetTimestamp(&state_->base));
  } catch (...) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_active = nullptr;
    throw;
  }
  state_->trace.base_time_ns = 0;
  state_->trace.device_names = {device_name(0)};
  state_->running = true;
}

void CuptiTracer::stop() {
  if (!state_->running) return;
  state_->running = false;
  // However the steps below end (a faulted kernel makes the synchronize throw), recording ends
  // here: the kinds are disabled and no later buffer is routed to this tracer, which may be gone
  // by then.
  struct Detach {
    bool disabled = false;
    void disable() {
      for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
      disabled = true;
    }
    ~Detach() {
      if (!disabled) disable();
      std::lock_guard<std::mutex> lock(g_mutex);
      g_active = nullptr;
    }
  } detach;
  PIL_CUDA_CHECK(cudaDeviceSynchronize());
  detach.disable();
  PIL_CUPTI_CHECK(cuptiActivityFlushAll(1));  // its buffers still reach this tracer
}

void CuptiTracer::collect(const void* record) {
  state_->add(static_cast<const CUpti_Activity*>(record));
}

const trace::Trace& CuptiTracer::trace() const { return state_->trace; }

void CuptiTracer::save(const std::filesystem::path& path) const {
  // Named as Kineto names its traces: by the path given.
  trace::write_chrome_trace_file(state_->trace, path, {path.string(), "pil CUPTI tracer (not Kineto)"});
}

}  // namespace pil::cuda
