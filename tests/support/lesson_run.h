#pragma once
// Helpers for the lessons' end-to-end checks: run a lesson into a fresh folder, read the lines
// it printed, and look into the trace it wrote.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_process.h"
#include "support/trace_json.h"

namespace pil::test {

/// The value of a "key: value" line the lesson printed ("trace", "table", "summary").
std::string line_value(const std::string& out, const std::string& key);

/// The slices whose names start with `prefix`.
std::vector<TraceSlice> named(const std::vector<TraceSlice>& all, const std::string& prefix);

/// The summary JSON file a lesson run named in its output ("summary: PATH").
nlohmann::json read_summary(const std::string& out);

/// How many slices called `name` lie inside `outer` (same lane, within its interval).
size_t count_inside(const std::vector<TraceSlice>& all, const TraceSlice& outer,
                    const std::string& name);

/// Runs the lesson `exe` on the CPU with `args` (bad ones), into a fresh folder, and checks the
/// refusal: exit 2, one line on stderr naming args[0], nothing written. Returns the run, for
/// checks of the message itself.
ProcessResult expect_usage_error(const std::string& exe, std::vector<std::string> args);

/// The lesson `exe` run on the CPU with `args`, into a fresh folder.
struct LessonRun {
  TempDir dir;
  ProcessResult r;
  std::string trace;
  /// `shape`: the lesson's test shape, put after `args` (a lesson's suite passes its small one).
  LessonRun(const std::string& exe, std::vector<std::string> args,
            const std::vector<std::string>& shape = {});
  std::vector<TraceSlice> slices() const { return read_trace_slices(trace); }
  nlohmann::json summary() const { return read_summary(r.out); }
};

/// Checks a run of a lesson's `compiled` variant (AOTInductor): where the build compiled no
/// package (`built` false: no Python torch), that it was a skip saying so, and returns false;
/// else that it passed and agreed with `agrees_with`, and returns true (the trace is there).
bool compiled_run_passed(const LessonRun& run, const std::string& agrees_with, bool built);

/// What a lesson says it will run for `args` (`--list` with them, e.g. --device cuda --dtype
/// bf16): the variants, and how many are also checked against another. The checks derive the
/// `RESULT:` and `agrees with` lines a run must print from it, so a new variant or a build
/// option cannot silently break them.
struct Listed {
  std::vector<std::string> variants;
  size_t agreeing = 0;
};
Listed listed_variants(const std::string& exe, std::vector<std::string> args);

/// Copies `trace` into the folder `keep_dir` (made if missing) as "<test>.<n>.<its file name>",
/// n counting the copies this process made, so that two runs of one variant in one test keep
/// both: a failed check's trace, for the GPU check to bring back. Returns the copy's path, or ""
/// where nothing was kept (no folder given, no trace, or the copy failed: said on stderr).
std::string keep_trace(const std::string& trace, const std::string& keep_dir, const std::string& test);

/// The lesson `exe` run on CUDA with `args`, into a fresh folder, for the *Gpu suites. Where no
/// GPU is usable the lesson exits 77, and so does the test process: the suite is a skip. (A
/// variant that is unavailable on the GPU at hand leaves its exit code 77 for the test to see.)
/// A run that ends while its test has failed keeps its trace where PIL_GPU_KEEP_DIR says, if set
/// (scripts/gpu-check.sh sets it, and brings the folder back): a check that keeps its runs until
/// its assertions have run leaves the traces it failed on.
struct GpuLessonRun {
  TempDir dir;
  ProcessResult r;
  std::string trace;  ///< the trace file the run wrote
  std::vector<TraceSlice> slices;
  GpuLessonRun(const std::string& exe, std::vector<std::string> args);
  ~GpuLessonRun();
  nlohmann::json summary() const { return read_summary(r.out); }
  /// Slices of category `cat` ("kernel", "gpu_memcpy", ...) whose names start with `prefix`.
  size_t count(const std::string& cat, const std::string& prefix = "") const;
  /// Slices of category `cat` whose names contain `part` anywhere.
  size_t count_containing(const std::string& cat, const std::string& part) const;
  /// Kernels launched by an operator called `op` (joined by External id, as Kineto writes it):
  /// how the checks count a GEMM without naming its kernel, which cuBLAS picks per GPU and
  /// shape (nvjet_* on Hopper, sometimes with a split-K reduce kernel beside it).
  size_t kernels_under(const std::string& op) const { return kernels_of(op).size(); }
  /// Those kernels themselves (their names, to tell a GEMM from a copy).
  std::vector<TraceSlice> kernels_of(const std::string& op) const;
#ifdef PIL_TRACE_EXE
  /// pil-trace's JSON answer about this run's trace: {"launches"}, {"chain", "--range", ...}.
  nlohmann::json pil_trace(std::vector<std::string> args) const {
    args.insert(args.begin() + 1, trace);
    args.push_back("--json");
    return nlohmann::json::parse(run_process(PIL_TRACE_EXE, args).out);
  }
#endif
};

}  // namespace pil::test
