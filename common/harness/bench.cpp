#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <torch/cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>

#include "cuda/check.h"
#include "cuda/runtime.h"
#include "harness/bench_flags.h"
#include "harness/lesson.h"
#include "harness/verify.h"

#if PIL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace pil {
namespace {

#if PIL_HAVE_CUDA
/// Times one call with CUDA events on the current stream: the GPU's time, not the CPU's.
class EventTimer {
 public:
  EventTimer() {
    PIL_CUDA_CHECK(cudaEventCreate(&start_));
    try {
      PIL_CUDA_CHECK(cudaEventCreate(&end_));
    } catch (...) {  // no destructor runs for a constructor that throws
      cudaEventDestroy(start_);
      throw;
    }
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  // Recorded on the legacy default stream, where LibTorch and the variants run unless told
  // otherwise.
  void begin() { PIL_CUDA_CHECK(cudaEventRecord(start_, nullptr)); }
  double end_seconds() {
    PIL_CUDA_CHECK(cudaEventRecord(end_, nullptr));
    PIL_CUDA_CHECK(cudaEventSynchronize(end_));
    float ms = 0;
    PIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, end_));
    return double(ms) / 1e3;
  }

 private:
  cudaEvent_t start_ = nullptr, end_ = nullptr;
};
#endif

/// Benchmarks that failed (an error, or a wrong result): the run's exit code says so.
std::atomic<int> failures{0};

/// The options a benchmark runs with: the lesson's defaults, its CPU overrides on the CPU.
Options bench_options(const Lesson& lesson, c10::Device device, int64_t size) {
  Options o;
  o.size = size;
  for (const auto& f : lesson.flags) o.extra[f.name] = f.default_value;
  if (!device.is_cuda())
    for (const auto& [name, value] : lesson.bench_flags_cpu) o.extra[name] = value;
  return o;
}

/// Whether the case runs, decided when it runs (so a filter that leaves it out costs nothing:
/// no package compiled, no library asked): a skip with the reason when the variant cannot
/// take the problem or the library lacks it here (Google Benchmark 1.7 has no skip of its own:
/// an error row starting "skipped:", not counted as a failure).
bool case_runs(benchmark::State& state, const Variant& v, const Problem& p) {
  const VariantChoice c = choose_variant(v, p, /*device_usable=*/true);
  switch (c.status) {
    case VariantChoice::Status::Runs:
      return true;
    case VariantChoice::Status::Refused:
      state.SkipWithError(("skipped: refused: " + c.why).c_str());
      return false;
    default:
      state.SkipWithError(("skipped: unavailable here: " + c.why).c_str());
      return false;
  }
}

void bench_one(benchmark::State& state, const Lesson& lesson, const Variant& v, c10::Device device,
               c10::ScalarType dtype, int64_t size, bool verify_first) {
  const Options o = bench_options(lesson, device, size);
  const Problem p{o, device, dtype};
  try {
    if (!case_runs(state, v, p)) return;
    if (lesson.cpu_threads && !device.is_cuda()) (void)lesson.cpu_threads(p);  // the note is for runs
    if (v.prepare) v.prepare(p);
    at::manual_seed(0);
    const Tensors in = lesson.make_inputs(p);
    at::Tensor out;
    for (int i = 0; i < 3; ++i) out = v.run(in);
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
    if (verify_first) {
      const Verdict verdict = verify(v.result(in, out),
                                     lesson.reference_for(v.name)(in), lesson.tolerance_of(p));
      if (!verdict.passed) {
        ++failures;
        state.SkipWithError(("verification failed: " + verdict.reason).c_str());
        return;
      }
    }
#if PIL_HAVE_CUDA
    std::unique_ptr<EventTimer> timer;
    if (device.is_cuda()) timer = std::make_unique<EventTimer>();
#endif
    for (auto _ : state) {
#if PIL_HAVE_CUDA
      if (timer) {  // GPU time between CUDA events around the call
        timer->begin();
        out = v.run(in);
        state.SetIterationTime(timer->end_seconds());
        continue;
      }
#endif
      // Wall time; on a GPU without the project's CUDA helpers, up to the device finishing.
      const auto t0 = std::chrono::steady_clock::now();
      out = v.run(in);
      if (device.is_cuda()) torch::cuda::synchronize(device.index());
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const double calls = double(state.iterations());
    const double flops = v.flops ? v.flops(p) : lesson.flops ? lesson.flops(p) * v.flops_factor : 0;
    if (flops > 0)
      state.counters["FLOP/s"] = benchmark::Counter(flops * calls, benchmark::Counter::kIsRate);
    if (lesson.items && v.name.rfind("ceiling_", 0) != 0)
      state.SetItemsProcessed(int64_t(lesson.items(p) * calls));
    if (const auto& bytes = v.bytes ? v.bytes : lesson.bytes)
      state.counters["bytes/s"] = benchmark::Counter(bytes(p) * calls, benchmark::Counter::kIsRate);
  } catch (const cuda::Unavailable& e) {
    // The library lacks it here (no cuBLASLt algorithm, say): reported, not a failure.
    state.SkipWithError((std::string("skipped: unavailable here: ") + e.what()).c_str());
  } catch (const VariantUnavailable& e) {
    state.SkipWithError((std::string("skipped: unavailable here: ") + e.what()).c_str());
  } catch (const std::exception& e) {
    ++failures;
    state.SkipWithError(e.what());
  }
  release_after_variant();
}

}  // namespace

int run_lesson_benchmarks(const Lesson& lesson, int argc, char** argv) {
  // Google Benchmark's flags checked first: it runs on some values it cannot use, aborts on
  // others, and names an unknown flag on a line per word.
  const std::vector<std::string> args(argv + 1, argv + argc);  // Initialize takes its flags out
  if (const std::string problem = benchmark_flag_problem(args); !problem.empty()) {
    std::cerr << lesson.name << "_bench: error: " << problem << "\n";
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  const bool gpu = torch::cuda::is_available();
  if (!gpu)
    std::cout << lesson.name << ": GPU benchmarks left out: no usable CUDA GPU: "
              << cuda::unavailable_reason() << "\n";
  // The full names the filter is matched against, and those of the GPU rows left out here.
  std::vector<std::string> registered, left_out;
  auto add = [&](const Variant& v, bool verify_first) {
    for (const bool cuda : {false, true}) {
      if (!cuda && v.needs_cuda) continue;
      const c10::Device device = cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
      for (const c10::ScalarType dtype : {at::kFloat, at::kBFloat16})
        for (const int64_t size : cuda ? lesson.bench_sizes_gpu : lesson.bench_sizes_cpu) {
          const std::string name = v.name + "/" + file_device_name(device) + "/" +
                                   dtype_name(dtype) + "/" + std::to_string(size);
          if (cuda && !gpu) {
            left_out.push_back(name + "/manual_time");
            continue;
          }
          benchmark::RegisterBenchmark(name.c_str(), [&lesson, &v, device, dtype, size, verify_first](benchmark::State& s) {
            bench_one(s, lesson, v, device, dtype, size, verify_first);
          })->UseManualTime()->Unit(benchmark::kMicrosecond);
          registered.push_back(name + "/manual_time");
        }
    }
  };
  for (const auto& v : lesson.variants) add(v, true);
  // A ceiling is verified too where the lesson names a reference for it.
  for (const auto& v : lesson.ceilings) add(v, lesson.references.count(v.name) > 0);
  // A filter that selects none of them (given once at most: benchmark_flag_problem): one line, a
  // usage error (Google Benchmark's own line came before ours, exit 1).
  const std::string filter_flag = "--benchmark_filter=";
  const auto filter = std::find_if(args.begin(), args.end(),
                                   [&](const std::string& a) { return a.rfind(filter_flag, 0) == 0; });
  if (filter != args.end()) {
    const std::string spec = filter->substr(filter_flag.size());
    if (!benchmark_filter_selects(spec, registered)) {
      std::cerr << lesson.name << "_bench: error: --benchmark_filter=" << spec << ": selects no benchmark"
                << (benchmark_filter_selects(spec, left_out) ? " here (only GPU rows, left out: no usable CUDA GPU)" : "")
                << "; allowed: a regular expression matching a name --benchmark_list_tests lists\n";
      benchmark::Shutdown();
      return 2;
    }
  }
  const size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (ran == 0) {
    std::cerr << lesson.name << ": no benchmark matched (see --benchmark_list_tests)\n";
    return 1;
  }
  if (failures > 0) {
    std::cerr << lesson.name << ": " << failures << " benchmark(s) failed (see ERROR OCCURRED)\n";
    return 1;
  }
  return 0;
}

}  // namespace pil
