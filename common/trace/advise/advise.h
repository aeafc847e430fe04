#pragma once
/// \file
/// From explaining to diagnosing: `pil-trace advise`. Each rule (advise/rules_*.cpp) looks for
/// one symptom in a trace and states it with the figures that triggered it, the worst examples
/// (with the trace's own timestamps, to find them in Perfetto) and an upper bound on the time
/// that removing it would save. Symptoms of one root cause (a launch-bound loop shows as GPU idle
/// time waiting on the host *and* as kernels shorter than their launches) are one finding, whose
/// gain is the largest of its symptoms' (they are the same time seen twice: never added up).
/// Findings are ordered by that gain; each names the lesson section that teaches the fix and the
/// command that shows its effect. What was checked and found clean, and what could not be
/// checked because the trace lacks a field, are listed too: a rule never guesses.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/advise/thresholds.h"
#include "trace/parse.h"
#include "trace/reports.h"

namespace pil::trace {

/// Where a lesson teaches a fix: the lesson's folder, a section's title as the page spells it,
/// and the command that shows the effect. `link()` is the page and its GitHub anchor, which the
/// site's pages keep as well ("03_mlp/README.md#what-did-compiling-change").
struct LessonRef {
  std::string lesson;   ///< "03_mlp"; a page under docs/ as "docs/perfetto.md"
  std::string section;  ///< "What did compiling change?"
  std::string command;  ///< "./run-lesson 03_mlp --variant all"
  std::string link() const;
};

/// GitHub's anchor for a heading: lower case, punctuation dropped but for '-' and '_', spaces to
/// '-' ("2. Why is the first step slow?" -> "2-why-is-the-first-step-slow").
std::string github_anchor(const std::string& heading);

/// One of the worst examples of a symptom: what, where, and when on the trace's clock.
struct AdviceExample {
  std::string name;    ///< the event's name ("cudaStreamSynchronize", a kernel's name)
  int64_t ts_ns = 0;   ///< its start, on the trace's clock (printed as the trace writes it)
  int64_t dur_ns = 0;
  std::string where;   ///< "ProfilerStep#3", "stream 7", "thread 4242"
  std::string detail;  ///< what about it ("waited 1.2 ms for 0.3 ms of GPU work")
};

/// A matrix product's roofline figures (roofline.h), cited in a symptom's evidence: how far
/// calls of that shape got from the peak that bounds them.
struct RooflineCite {
  std::string text;     ///< roofline_evidence(): "aten::mm [64, 64]x[64, 64] float: 0.4% of ..."
  std::string op;       ///< "aten::mm"
  std::string tensors;  ///< "[64, 64]x[64, 64]"
  std::string dtype;    ///< "float"
  int64_t calls = 0;
  int64_t time_ns = 0;  ///< all calls: their GPU work, or their CPU time
  double gflops = 0;    ///< achieved
  double gbps = 0;      ///< achieved (the least traffic the shapes need: roofline_formulas.h)
  double share = 0;     ///< of the peak of its bound, 0..1
  std::string bound;    ///< which peak the share is of: "compute", "memory" (roofline.h)
  double peak_gflops = 0;
  double peak_gbps = 0;
  std::string peak;     ///< where the peak is from: "H100 SXM5 80GB", "--cpu-peak-gflops/..."
  /// Not a call of the symptom's kind: the best share of the same place (CPU or GPU), for
  /// comparison ("at 512: 4%; at 4096: 71%").
  bool comparison = false;
};

/// What one rule saw.
struct Symptom {
  std::string rule;  ///< the rule's key ("gpu_host_wait")
  std::string text;  ///< one line with its figures
  /// The figures the text quotes, by name, for --json and the tests ("host_wait_share": 0.62).
  std::vector<std::pair<std::string, double>> figures;
  std::vector<AdviceExample> examples;  ///< worst first
  /// Roofline figures of the matrix products that bear on it, most time first (needs their
  /// recorded shapes and a peak: advise_read_options, has_matrix_peak); empty otherwise.
  std::vector<RooflineCite> roofline;
  /// An upper bound on the wall time over the advice's basis that removing the symptom's cause
  /// would save, and how it was computed. 0 for a symptom that costs no time (a memory peak
  /// near the device's capacity): `how` then says what it costs instead.
  int64_t saved_ns = 0;
  std::string how;
  /// The command that shows this symptom more closely, where the rule knows a better one than
  /// its cause's ("pil-trace chain TRACE --range CALLER" for the copies' first caller); empty:
  /// the cause's. The finding takes its largest symptom's.
  std::string command;
  /// The fix, where the rule knows a better one than its cause's for this trace (fp32_gemm on a
  /// GeForce card: autocast, as TF32 is no faster there; gemm_epilogue on the CPU: no cuBLASLt);
  /// empty: the cause's. The finding takes its largest symptom's.
  std::string fix;
};

/// Symptoms of one root cause, with what to do about it.
struct Finding {
  std::string cause;  ///< key ("launch_bound")
  std::string title;  ///< one line ("The GPU waits on the host: a launch-bound loop")
  std::string fix;    ///< what to do, in a sentence or two
  LessonRef lesson;
  std::vector<Symptom> symptoms;  ///< largest saving first
  int64_t saved_ns = 0;           ///< the largest of its symptoms' (one cause, not added up)
  double speedup = 1;             ///< basis / (basis - saved): "at most Nx faster"
};

/// A rule that was run and found nothing, or could not run because the trace lacks a field.
struct RuleNote {
  std::string rule;  ///< the rule's key
  std::string what;  ///< what it looks for ("host synchronizes inside a step")
  std::string why;   ///< empty when it found nothing; else the field the trace lacks
};

struct Advice {
  /// The profiled window's start on the trace's clock: examples are also given from there (the
  /// origin of `pil-trace svg --from-us` and `slice --from-us`).
  int64_t window_start_ns = 0;
  /// What the gains are relative to: the profiled steps' wall time added up, or the trace's
  /// window where it has no steps.
  int64_t basis_ns = 0;
  /// Without steps, the set-up recorded before the GPU's first work, left out of the basis (0:
  /// none, or a trace with steps or without GPU work).
  int64_t set_up_ns = 0;
  /// Of set_up_ns, the time in the DataLoader's fetches (enumerate(DataLoader)# ranges), which
  /// the basis line names where it is a quarter of the set-up or more.
  int64_t set_up_loading_ns = 0;
  std::string basis;  ///< "the 3 profiled steps (12.5 ms)"
  int64_t steps = 0;
  /// The processes whose threads record the steps: more than one where several processes'
  /// traces were merged into one file (summary --json's steps.processes; pil-trace check).
  int64_t processes = 0;
  bool gpu = false;   ///< the trace has GPU work
  /// CUDA calls and GPU work but no operator or range (cuda_side_only): the rules that read the
  /// operators are not run, and the header says so.
  bool cuda_side_only = false;
  /// Without GPU work: the CUDA runtime or driver calls that start some (launches, copies,
  /// sets). Where there are any, the GPU's side was not recorded (the profiler's GPU activity
  /// off or lost): the rules that take the host's time for a CPU run's cost are not run.
  int64_t launches_without_gpu_work = 0;
  /// Without GPU work and without any CUDA call: what shows that the run used a device all the
  /// same (DeviceUseWithoutWork::evidence: its memory there, cuDNN's operators); "" where nothing
  /// does. Where something does, the GPU's side was not recorded, as with launches above.
  std::string device_use;
  /// Without GPU work and without a call that starts any: the CUDA calls that only synchronize
  /// or query (cudaDeviceSynchronize, cudaGetDevice...). The process used CUDA, but any work they
  /// waited for was launched before recording began: judged as a CPU run, and the header says so.
  int64_t sync_or_query_calls = 0;
  /// The trace is in the autograd profiler's own format (Trace::autograd_profiler_slices), which
  /// holds a run's CPU side only: whether the run used a GPU, it cannot say.
  bool cpu_side_only_format = false;
  /// Events of a device pil-trace does not model (Trace::unread's device kinds: MTIA's, XPU's...),
  /// by kind: that device's work is in the run but not in the findings.
  std::map<std::string, int64_t> unmodelled_device_events;
  /// Slices of Python's tracer in the trace (Trace::python_functions): the host's times include
  /// its cost, which the header says.
  int64_t python_functions = 0;
  /// What the profiler logged that says GPU events are missing (ProfilerMessages::gpu_loss): the
  /// missing work reads as GPU idle time, which the header says.
  std::vector<std::string> profiler_gpu_loss;
  /// Where the trace's last launches found no GPU work (check's gpu_events_stop_early), what the
  /// header says of it (lost_tail_said and lost_tail_consequence); "" where they did not.
  std::string gpu_events_stop_early;
  /// Where the steps hold no work while most calls ran outside them (check's steps_empty): what
  /// that means for the findings; "" otherwise.
  std::string steps_hold_nothing;
  /// Where the basis holds stream captures (check's stream_captures), what the header says of
  /// them: their launch calls run nothing then, so the GPU's idle time inside them is the
  /// capture's, left out of the host's waits; "" where it holds none.
  std::string captures;
  int64_t capture_idle_ns = 0;  ///< the GPU's idle time left out as theirs (captured_idle_ns)
  bool lost_after_recording = false;  ///< that work ran after recording stopped, most likely (else dropped)
  /// GPU work items with no launch call in the trace (launched before recording began not
  /// counted), and all the GPU work items: where half or more have none (ROCm traces whose
  /// correlation ids are all 0), the rules that follow launches to their work are not run and
  /// the header says so.
  int64_t unlinked_work = 0, work_items = 0;
  std::string unlinked;  ///< what the header says of them, where links_missing(); else ""
  bool links_missing() const { return advise_rules::threshold::most_work_unlinked(unlinked_work, work_items); }
  /// The floor the findings were held to (AdviseOptions::min_saved_share).
  double min_share = advise_rules::threshold::kMinSavedShare;
  std::vector<Finding> findings;  ///< largest gain first
  std::vector<RuleNote> clean;    ///< checked: nothing found
  std::vector<RuleNote> unable;   ///< not checked: the trace lacks what the rule needs
};

struct AdviseOptions {
  size_t examples = 3;         ///< worst examples kept per symptom
  /// The CPU's compute peak, GFLOP/s, when the user gives one: the CPU's matrix products'
  /// share of it in the evidence (a trace carries none).
  double cpu_peak_gflops = 0;
  /// A measured GPU ceiling, TFLOP/s, in place of the table of peaks' (roofline.h).
  double gpu_peak_tflops = 0;
  /// Threads running the rules (independent of each other; the reports they share are made
  /// once, by the first that asks). The advice is the same whatever the count.
  unsigned threads = 1;
  /// The floor under every finding: a symptom whose upper-bound saving is under this share of
  /// the basis is not reported (threshold::kMinSavedShare by default; `advise --min-share`).
  /// Rules with a threshold of their own above it keep theirs.
  double min_saved_share = advise_rules::threshold::kMinSavedShare;
  /// The trace's path as the user gave it: each finding's "see the effect" command that reads a
  /// trace names it (and its folder for `ranks`) instead of the placeholders TRACE and
  /// TRACES_FOLDER. Empty: the placeholders stay.
  std::string trace_path;
  /// pil-trace as the user ran it (its argv[0]: "build/bin/pil-trace", "pil-trace" on the PATH,
  /// an absolute path): a command that reads the user's trace runs it, not the project's
  /// "build/bin/pil-trace", which is the right path only from this project's folder, where a
  /// trace path given from elsewhere is not. Empty: "build/bin/pil-trace" stays.
  std::string program;
};

/// A cause's command with the trace named: "traces/TRACE.pt.trace.json" becomes `trace_path`,
/// "TRACES_FOLDER" its folder, each quoted for a shell where it needs it, and there
/// "build/bin/pil-trace" becomes `program` where one is given; unchanged when `trace_path` is
/// empty.
std::string command_for_trace(const std::string& command, const std::string& trace_path,
                              const std::string& program = "");

/// True when a matrix product's roofline figures have a peak to be held against: a peak given
/// in `options`, or a GPU of the trace (its head's deviceProperties) in the table of peaks.
bool has_matrix_peak(const Trace& head, const AdviseOptions& options);

/// How advise wants a trace read (`base` gives the rest: threads, chunks): the recorded inputs
/// and their concrete values (ParseOptions::read_shapes, read_concrete) of the operators its
/// rules judge by them (shapes_for: advise_rules::needs_input_shapes), no other's; and the
/// matrix products' (is_matrix_formula), for their roofline figures in the evidence, where
/// has_matrix_peak says there is a peak to hold them against (shapes_also_for, _if).
ParseOptions advise_read_options(ParseOptions base = {}, const AdviseOptions& options = {});

/// Every rule over the trace. The index's trace should be read with shapes
/// (ParseOptions::read_shapes, with read_concrete: rebuilt_constant tells a factory's sizes
/// apart by them) where the rules about shapes and dtypes are to run.
Advice advise(const TraceIndex& index, const AdviseOptions& options = {});

/// The advice as a user reads it: findings with evidence, gain and lesson; then what was clean.
std::string format_advice(const Advice& advice, const std::string& path);

/// The advice as JSON (`pil-trace advise --json`): the same fields, times in ns.
nlohmann::ordered_json advice_json(const Advice& advice);

}  // namespace pil::trace
