#pragma once
/// \file
/// The harness every lesson runs through: parse the shared flags, pick device and dtype, make
/// the inputs, warm up, profile on a wait/warm-up/active schedule, verify against a float64
/// reference, print the operator table, write trace, table and summary, end with `RESULT:`.
///
/// A lesson describes its problem and its variants; lesson_main() does the rest (run_lesson(),
/// or the benchmarks in the `_bench` build, then the packages released before CUDA shuts down):
/// \code
///   int main(int argc, char** argv) { return pil::lesson_main(kLesson, argc, argv); }
/// \endcode
#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/options.h"
#include "harness/verify.h"

namespace pil {

/// The tensors a variant works on, in the order the lesson documents.
using Tensors = std::vector<at::Tensor>;

/// Where and how a run happens, resolved from the flags.
struct Problem {
  const Options& options;
  c10::Device device;
  c10::ScalarType dtype;
};

/// Which profiler records a variant. CUPTI takes one subscriber per process, so a run uses one.
enum class Tracer {
  LibTorch,  ///< LibTorch's profiler (Kineto): operators, and CUDA activity on a GPU
  Cupti,     ///< the project's CUPTI tracer: runtime/driver calls, kernels, copies, NVTX ranges
             ///< (for variants that bypass LibTorch; needs a GPU)
};

struct Variant {
  Variant(std::string name_, std::string summary_,
          std::function<at::Tensor(const Tensors& inputs)> run_)
      : name(std::move(name_)), summary(std::move(summary_)), run(std::move(run_)) {}

  std::string name;
  std::string summary;  ///< one line for --list and the docs
  /// One call of the workload: opens the lesson's named range and returns the result.
  std::function<at::Tensor(const Tensors& inputs)> run;
  bool needs_cuda = false;  ///< runs on a CUDA device only (cuBLAS, cuBLASLt, CUDA graphs)
  Tracer tracer = Tracer::LibTorch;
  /// Empty when the variant can take this problem; otherwise what it cannot take and what it
  /// can ("--size 100: lt_bias needs a multiple of 8 for bf16"), reported as a usage error.
  std::function<std::string(const Problem&)> check;
  /// What is verified, made after profiling (so it stays out of the trace): a training step's y
  /// with the gradients, say, computed once more from the weights as they are now, so that it
  /// does not depend on what the last call left behind. Unset: the last call's output itself.
  std::function<at::Tensor(const Tensors& inputs)> collect;
  /// Arithmetic of one call in units of the lesson's flops(): 3 for a training step (the
  /// backward's products are twice the forward's).
  double flops_factor = 1.0;
  /// Bytes one call must move, where they differ from the lesson's bytes() (a kernel measured
  /// on its own, a copy ceiling). Unset: the lesson's.
  std::function<double(const Problem&)> bytes;
  /// Arithmetic of one call, where it is not the lesson's flops() × flops_factor (a GEMM
  /// ceiling of another shape). Unset: that product.
  std::function<double(const Problem&)> flops;
  /// Empty when the library can run this variant here; otherwise why not, in LibTorch's words
  /// ("no flash attention kernel for fp32 on this device"). Reported as a skip (exit 77), not a
  /// usage error: the request was fine, the machine lacks it. A quick look that changes nothing
  /// (--list asks it too): what takes long or may fail belongs in `prepare`.
  std::function<std::string(const Problem&)> unavailable;
  /// Set-up before the variant's first call that takes long or may fail for want of what the
  /// machine lacks (compiling and loading an AOTInductor package); run only when the variant is
  /// about to run. Throws VariantUnavailable: a skip with its reason.
  std::function<void(const Problem&)> prepare;
  /// Another variant whose result this one must also match, under the same tolerance (a fused
  /// kernel against the eager operators it replaces). Checked after profiling, beside the
  /// float64 reference. Empty: none.
  std::string agrees_with;

  /// What is verified, given the last call's output: collect(inputs) where set, else `out`.
  at::Tensor result(const Tensors& inputs, const at::Tensor& out) const {
    return collect ? collect(inputs) : out;
  }
};

/// A variant cannot run here for want of something the machine or the build lacks (a package
/// that could not be compiled or loaded). Thrown by Variant::prepare; reported as a skip (exit 77)
/// with this reason, as cuda::Unavailable is.
struct VariantUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Rows a sampled float64 check takes (--verify sample, the default).
inline constexpr int64_t kSampleRows = 8;

/// Bytes a run needs, checked before anything is allocated.
struct MemoryNeed {
  double device_bytes = 0;  ///< on the chosen device (inputs, outputs, workspace)
  double host_bytes = 0;    ///< on the host (the float64 reference and copies)
};

struct Lesson {
  std::string name;         ///< folder, target and executable name
  std::string description;  ///< one line
  int64_t default_size = 64;
  int64_t max_size = 65536;
  std::string size_help = "Problem size N";  ///< what --size means here ("batch (rows of x)")
  std::vector<LessonFlag> flags;             ///< the lesson's own flags
  /// On the CPU, the defaults where they differ, so that a default run takes seconds there:
  /// --size (0: default_size) and the lesson's own flags. Flags given are kept as given.
  int64_t default_size_cpu = 0;
  std::map<std::string, int64_t> flag_defaults_cpu;
  /// The inputs whose first dimension holds rows the reference computes independently of one
  /// another (x and the bias matrix in y = x·w + b; x and g of a block, by batch element). A
  /// default run (--verify sample) checks a seeded sample of kSampleRows of them against the
  /// float64 reference, computed for those rows alone; --verify full checks all. Empty: all,
  /// always. Only for variants checked against `reference` on their own output (no collect()).
  std::vector<size_t> row_inputs;
  bool profile_memory = false;  ///< --profile-memory's default (allocations in the trace)
  /// On the CPU, sets the intra-op threads a run uses (at::set_num_threads), before the header
  /// line that prints them and before the inputs are made; runs and benchmarks alike. Returns a
  /// line saying why, printed under the header ("" where nothing changed). Unset: LibTorch's
  /// choice (OMP_NUM_THREADS, else the cores). Lesson 06 leaves its loader's workers their cores.
  std::function<std::string(const Problem&)> cpu_threads;
  std::function<Tensors(const Problem&)> make_inputs;
  /// The expected result in float64, computed from the same inputs (on their device or the CPU),
  /// after the variant's calls.
  std::function<at::Tensor(const Tensors& inputs)> reference;
  /// Variants whose result differs in kind (a training step returning gradients too) name their
  /// own reference here; the others use `reference`.
  std::map<std::string, std::function<at::Tensor(const Tensors& inputs)>> references;
  const std::function<at::Tensor(const Tensors&)>& reference_for(const std::string& variant) const {
    auto it = references.find(variant);
    return it == references.end() ? reference : it->second;
  }
  std::function<MemoryNeed(const Problem&)> memory_need;
  /// The tolerance results are checked under, where it is not the dtype's (fp32 with TF32 on a
  /// GPU). Unset: tolerance_for(dtype).
  std::function<Tolerance(const Problem&)> tolerance;
  Tolerance tolerance_of(const Problem& p) const {
    return tolerance ? tolerance(p) : tolerance_for(p.dtype);
  }
  std::vector<Variant> variants;  ///< drives --list, --variant, the tests and the docs

  // For the benchmarks (<lesson>_bench):
  std::vector<int64_t> bench_sizes_gpu{64, 256, 1024, 4096, 8192};
  std::vector<int64_t> bench_sizes_cpu{64, 256, 1024};
  std::function<double(const Problem&)> flops;  ///< arithmetic of one call
  std::function<double(const Problem&)> bytes;  ///< bytes one call must move, at least
  /// Work items of one call, reported as items_per_second (tokens for a transformer). Unset:
  /// none reported.
  std::function<double(const Problem&)> items;
  /// The lesson's own flags for the CPU benchmarks, where the defaults would take too long on a
  /// CPU ({"--seq", 256}). The GPU benchmarks use the defaults.
  std::map<std::string, int64_t> bench_flags_cpu;
  /// Measured beside the variants, not variants themselves: throughput ceilings (named
  /// `ceiling_*`: a plain GEMM, a copy) and single kernels timed on their own. Verified first
  /// where `references` names them.
  std::vector<Variant> ceilings;

  /// Data-parallel: one process per rank over c10d (harness/distributed.h). The harness adds
  /// --ranks, --backend and --comm-timeout-s, starts the ranks itself or joins a launcher's
  /// (RANK, WORLD_SIZE, ...), names each rank's files `..._rank<k>`, writes Kineto's
  /// distributedInfo into each trace, and ends each variant with the table across ranks.
  bool distributed = false;
};

/// The dtype's short name, as flags, file names and summaries spell it: fp32, bf16, fp16, fp64
/// (any other as torch names it: "Long", "Bool").
const char* dtype_name(c10::ScalarType t);

/// Where one variant stands for one problem, decided before anything runs.
struct VariantChoice {
  enum class Status {
    Runs,             ///< it runs (its prepare() may still find the machine lacking)
    CudaOnly,         ///< needs a CUDA device; the problem is on the CPU
    Refused,          ///< its check() refuses the problem (a usage error: `why` says what is allowed)
    Unavailable,      ///< the library or the build lacks it here (a skip: `why` says why)
    DecidedOnDevice,  ///< LibTorch must ask the device, which this machine cannot (no GPU)
  };
  const Variant* variant = nullptr;
  Status status = Status::Runs;
  std::string why;
};

/// Whether each variant named in `names` runs for `p`: a function of the problem (device type,
/// dtype, size, flags) and of what the build has, computed the same way on a machine without
/// the device, so the decisions are tested on the CPU. Asks each variant's check() and
/// unavailable(), never prepare() (nothing is compiled or loaded). `device_usable`: whether
/// `p.device` can be asked (false for CUDA without a GPU: a variant whose unavailable() needs
/// the device is then DecidedOnDevice). The runner, --list and the benchmarks all use it.
std::vector<VariantChoice> choose_variants(const Lesson& lesson, const Problem& p,
                                           const std::vector<std::string>& names, bool device_usable);
/// The same for one variant (or ceiling) of the lesson.
VariantChoice choose_variant(const Variant& v, const Problem& p, bool device_usable);

/// What --list prints. With `p` null (no --device): every variant, one line each
/// (`name<TAB>summary`), CUDA-only ones marked `[CUDA only]`. With a problem: only the variants
/// that would run there, and a `# name: left out: why` line for each other. A variant that is
/// also checked against another ends with `[agrees with OTHER]`, so the tests derive how many
/// `RESULT:` and `agrees with` lines a run must print from what the lesson says it will run.
std::string list_variants(const Lesson& lesson, const Problem* p, bool device_usable);

/// The device as file names spell it: "cpu" or "cuda" (no colon: "cuda:0" is awkward in shells
/// and refused by some filesystems; no index, so the ranks of one run, each on its own GPU,
/// name their files alike but for `_rank<k>`).
std::string file_device_name(const c10::Device& d);

/// AdamW's epsilon for parameters of `dtype`: 1e-8 (LibTorch's default) where the dtype holds
/// it; in fp16, whose smallest normal number is about 6.1e-5 and which rounds 1e-8 to 0, that
/// smallest normal. With eps 0, a second moment that underflows (gradients below about 2.4e-4
/// square to 0 in fp16) makes the update divide by zero: inf and NaN weights within steps.
double adamw_eps(c10::ScalarType dtype);

/// Registers `release` to run once the current variant is done (after its checks, before the
/// next variant and before the process exits): for what a variant holds beyond one call, such as
/// a captured CUDA graph and its memory pool, which must not outlive the CUDA runtime at exit.
void after_variant(std::function<void()> release);

/// Runs what after_variant() registered, and forgets it. The harness calls it after each
/// variant and each benchmark.
void release_after_variant();

/// Registers `release` to run when the lesson's main() returns (lesson_main), before the
/// process's exit: for what lives across variants and benchmark cases (a loaded AOTInductor
/// package) and must still not outlive the CUDA runtime, which shuts down at exit before the
/// destructors of globals such as a lesson's Lesson.
void before_exit(std::function<void()> release);

/// Runs what before_exit() registered, and forgets it. lesson_main calls it.
void release_before_exit();

/// Runs the lesson's Google Benchmark suite: every variant × size × dtype (fp32, bf16) on the
/// devices it runs on, timed per call (CUDA events on a GPU), with FLOP/s and bytes/s counters,
/// each variant verified against the reference before it is timed. GPU benchmarks are left out,
/// with a message, where no GPU is usable. Takes Google Benchmark's flags.
int run_lesson_benchmarks(const Lesson& lesson, int argc, char** argv);


/// Runs the lesson as its command line asks. Returns the process exit code: 0 passed,
/// 1 failed (wrong result or a runtime error), 2 bad usage, 77 skipped (no usable GPU).
int run_lesson(const Lesson& lesson, int argc, const char* const argv[]);

/// A lesson's main(): the lesson itself, or — built as `LESSON_bench`, with PIL_BENCHMARK
/// defined — its benchmarks. Inline, so the lesson's own build decides.
inline int lesson_main(const Lesson& lesson, int argc, char** argv) {
#if PIL_BENCHMARK
  const int code = run_lesson_benchmarks(lesson, argc, argv);
#else
  const int code = run_lesson(lesson, argc, const_cast<const char* const*>(argv));
#endif
  release_before_exit();
  return code;
}

}  // namespace pil
