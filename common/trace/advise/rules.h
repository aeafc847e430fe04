#pragma once
/// \file
/// What a rule of `pil-trace advise` is, and what it is given. A rule is a function that reads
/// the trace through a RuleContext (the index and the reports it needs, each computed once and
/// shared by all rules) and reports, in a RuleResult, a symptom, that it found nothing, or that
/// the trace lacks a field it needs. The causes (what a symptom means, what to do, which lesson)
/// are in causes.cpp; the thresholds in thresholds.h.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trace/advise/advise.h"
#include "trace/advise/cpu_slices.h"
#include "trace/advise/thresholds.h"
#include "trace/check.h"  // StreamCaptures
#include "trace/reports.h"
#include "trace/roofline.h"
#include "trace/text_table.h"  // format_duration: "12.5 ms", for a sentence

namespace pil::trace::advise_rules {

/// One stretch of time when the GPU ran something (the union over every stream), and the work
/// that started it: the gap before it ended when that work started.
struct BusySpan {
  int64_t start = 0, end = 0;
  size_t first = 0;  ///< the GPU work item that starts the span (the earliest, in event order on ties)
};

/// A stretch with every stream idle, ended by GPU work whose launch call had not yet returned
/// when the GPU went idle: the GPU waited on the host (pil-trace's host wait, over the union of
/// the streams). It ends when that work starts, or when its call returned where the work started
/// more than kLatencyAfterReturnNs later (it waited on something else then: reports.h).
struct HostGap {
  int64_t start = 0, end = 0;
  size_t next = 0;  ///< the GPU work that ended it
  size_t call = 0;  ///< its launch call
  int64_t dur() const { return end - start; }
};

/// The loops of small operators in the steps (op_loop; op_overhead leaves their calls out). A
/// loop is a run of the program's own operator calls (no operator around them) on one thread,
/// one after another under one caller (the innermost named range or operator; the step where
/// none) in one step, every call short (under kSmallOpNs with what it calls; on a trace with GPU
/// work, under kLoopCallGpuNs less its CUDA runtime and driver calls, launching under kSmallOpNs
/// of GPU work): a longer call ends the run (unless of an operator the run called short before:
/// an iteration that took longer), as does another caller or step. A run is a loop when it holds at least
/// kLoopMinCalls calls of one operator. It costs the stretch from its first call's start to its
/// last call's end, less the gaps of kSmallOpNs or more between two calls (something else ran
/// there): its calls and the short untraced time between them (in a backward, the autograd
/// engine's own work for each node, as long as the nodes' calls in lesson 06's loss). On a
/// trace with GPU work the host's time costs the step only while the GPU waits for it: there a
/// loop costs the GPU's idle time waiting on the host inside its stretches (host_gaps()) and
/// the GPU time of the work its calls launched, and the launch rules leave that wait to it.
struct LoopGroup {  ///< one operator's calls in loops under one caller's name, every step together
  std::string_view caller, name;
  int64_t calls = 0, ns = 0, most_in_one = 0;  ///< most_in_one: in one loop
  std::vector<int64_t> durs;
  size_t first = 0;  ///< its first call's slot
};
struct Loops {
  std::vector<char> in_loop;  ///< by slot: a loop's call or inside one (empty: no loop)
  std::vector<LoopGroup> groups;  ///< most time first
  /// The loops' stretches less their long gaps, inside the basis, merged: every thread's, and
  /// each thread's (pid, tid).
  std::vector<Interval> time;
  std::map<std::pair<int64_t, int64_t>, std::vector<Interval>> by_thread;
  int64_t ns = 0;  ///< the length of `time`
  int64_t loops = 0;
  /// With GPU work: the GPU's idle time waiting on the host inside the loops' time of the thread
  /// whose launch ended the wait, and the GPU time of the work the loops' calls launched (time
  /// two items overlap counted once).
  int64_t gpu_wait_ns = 0, launched_ns = 0;
  /// What the loops cost the steps: their length, or with GPU work what the GPU spent on them.
  int64_t cost(bool gpu) const { return gpu ? gpu_wait_ns + launched_ns : ns; }
  /// The part of [from, to) inside the loops of `on`'s thread (a launch call, the launch that
  /// ended a wait).
  int64_t inside(const Event& on, int64_t from, int64_t to) const {
    const auto found = by_thread.find({on.pid, on.tid});
    return found == by_thread.end() ? 0 : length(clip(found->second, from, to));
  }
};

/// A chain of elementwise kernels run back to back between two matrix products on one stream, or
/// on a trace without GPU work of elementwise operators a thread called between two: fusion's
/// (rules_gpu_fusion.cpp). gemm_epilogue leaves a pass that is one of them to it.
struct FusionChain {
  std::vector<size_t> items;     ///< the elementwise kernels (or operators), in order
  size_t before = 0, after = 0;  ///< the matrix products around it
  int64_t time = 0, saved = 0;   ///< the items' time; it less the shortest one's
};

/// What every rule may read. The reports are made on first use.
class RuleContext {
 public:
  RuleContext(const TraceIndex& index, const AdviseOptions& options);
  const TraceIndex& index;
  const Trace& trace;
  const AdviseOptions& options;
  /// The basis gains are stated against (Advice::basis_ns), and the steps' wall times.
  int64_t basis_ns = 0;
  /// Without steps, the basis's span: the recorded window, from the GPU's first work (or its
  /// launch call) where the trace recorded over kHostStallNs before it (the program's set-up:
  /// a real A100 trace's first cudaFree, the CUDA context's 6.39 s, made "2858x faster");
  /// set_up_ns is that part, left out. With steps, the window too (the steps decide).
  int64_t basis_start = 0, basis_end = 0, set_up_ns = 0;
  /// GPU work items with no launch call in the trace (launched before recording began not
  /// counted), those of them with correlation 0, and all GPU work items (Advice::unlinked_work).
  int64_t unlinked_work = 0, unlinked_zero = 0, work_items = 0;
  /// Half or more of the GPU work has no launch call: the rules that follow launches to their
  /// work cannot (Rule::reads_launch_links); one that can do without reads the kernels alone.
  bool links_missing() const { return threshold::most_work_unlinked(unlinked_work, work_items); }
  std::vector<int64_t> step_ns;  ///< each profiled step's wall time, in time order
  /// The stream captures, per thread (check's stream_captures), and in the basis's span every
  /// thread's merged (capture_spans): the launches made inside one run nothing then, so the GPU's
  /// idle time there waits on no launch of that thread (host_gaps leave it out). Empty on most
  /// traces.
  StreamCaptures captures;
  std::vector<Interval> capture_spans;
  /// The median of the steps after the first (0 with fewer than three steps), and whether the
  /// first is kFirstStepRatio times that or more (first_step's finding; the optimizer's share
  /// is judged without it then).
  int64_t median_after_first_step_ns() const;
  bool first_step_slow() const;
  /// What a share of the basis is a share of, in a finding's text: "the steps", or "the window"
  /// where the trace has none.
  const char* basis_noun() const { return step_ns.empty() ? "the window" : "the steps"; }
  bool gpu() const { return !index.device_work().empty(); }
  const StreamReport& streams() const;
  const LaunchReport& launches() const;  ///< LaunchDetail::Launches (no outliers)
  const std::vector<SyncRow>& syncs() const;
  const KeyAverages& table() const { return index.key_averages(); }
  /// The roofline's rows (roofline.h), with the peaks of `options`; empty where the operators'
  /// inputs were not read.
  const std::vector<RooflineRow>& roofline() const;
  /// The CPU slices nested per thread, for the rules about the host's time.
  const CpuSlices& cpu() const;
  /// When the GPU was busy: the union of every stream's work, in time order.
  const std::vector<BusySpan>& busy_spans() const;
  /// Every stretch the GPU waited on the host, in time order (the launch-bound loop's and the
  /// stalls' rules share them; rules_gpu_launch.cpp).
  const std::vector<HostGap>& host_gaps() const;
  /// The loops of small operators worth a finding (the floor, options.min_saved_share), or none
  /// (op_loop's and op_overhead's; rules_cpu_overhead.cpp).
  const Loops& loops() const;
  /// fusion's chains that count for the basis (their first item inside it), in the order found;
  /// rules_gpu_fusion.cpp.
  const std::vector<FusionChain>& fusion_chains() const;
  /// The GPU's busy time (any stream) inside [from, to).
  int64_t gpu_busy_in(int64_t from, int64_t to) const;
  /// The operators of each CPU thread, each thread's in nesting order (order_for_nesting).
  const std::vector<std::vector<size_t>>& ops_by_thread() const;
  /// The operators of each CPU thread that no other operator holds (what the program called;
  /// what they call inside is theirs), each thread's in start order.
  const std::vector<std::vector<size_t>>& top_ops() const;
  /// The runtime and driver calls of each CPU thread (pid, tid), in start order.
  const std::map<std::pair<int64_t, int64_t>, std::vector<size_t>>& calls_by_thread() const;
  /// The time of [from, to) inside the basis: inside the profiled steps' CPU ranges, or the
  /// window where the trace has no steps.
  int64_t basis_overlap(int64_t from, int64_t to) const;
  /// True when time `t` is inside the basis (a step, or the window without steps).
  bool in_basis_at(int64_t t) const;
  /// True when GPU work `i` counts for the basis: it belongs to a step (step_of_work), or the
  /// trace has no steps.
  bool in_basis_work(size_t i) const;
  /// The profiled step (its name) whose CPU range holds time `t`; "" outside every step.
  std::string step_name_at(int64_t t) const;
  /// An example for event `i`: its name, start, duration and where (its step, or its stream
  /// for GPU work).
  AdviceExample example(size_t i, std::string detail = {}) const;

 private:
  Lazy<StreamReport> streams_;
  Lazy<LaunchReport> launches_;
  Lazy<std::vector<SyncRow>> syncs_;
  Lazy<CpuSlices> cpu_;
  Lazy<std::vector<BusySpan>> busy_spans_;
  Lazy<std::vector<RooflineRow>> roofline_;
  Lazy<std::vector<HostGap>> host_gaps_;
  Lazy<Loops> loops_;
  Lazy<std::vector<FusionChain>> fusion_chains_;
  Lazy<std::vector<std::vector<size_t>>> ops_by_thread_, top_ops_;
  Lazy<std::map<std::pair<int64_t, int64_t>, std::vector<size_t>>> calls_by_thread_;
};

/// What a rule reports.
class RuleResult {
 public:
  /// A symptom (its `rule` is filled in). A rule may report several, or none; under its own
  /// cause, or under `cause` where what it found calls for another fix (exposed_comm's
  /// all-to-alls: exposed_exchange).
  void symptom(Symptom s, const char* cause = nullptr) {
    symptoms.push_back(std::move(s));
    causes.push_back(cause);
  }
  /// The trace lacks `field`, which the rule needs: it does not guess.
  void unable(std::string why) { unable_why = std::move(why); }
  std::vector<Symptom> symptoms;
  std::vector<const char*> causes;  ///< per symptom: its cause, where not the rule's (else nullptr)
  std::string unable_why;
};

struct Rule {
  const char* key;    ///< "gpu_host_wait"
  const char* cause;  ///< the cause its symptoms belong to (causes.cpp)
  const char* what;   ///< what it looks for, for the "nothing found" list
  /// Runs only on traces with GPU work (GPU rules), or on every trace.
  bool needs_gpu;
  std::function<void(const RuleContext&, RuleResult&)> run;
  /// It sets GPU times against CPU times at a scale the offset reaches (the GPU's waits between
  /// launches, a stream busy when a call returned, what a synchronize covered): not run where
  /// those are offset (gpu_clock_offset, reports.h). (A stall, or a loop's wait, can only come
  /// out shorter there: host gaps end when the call returns.)
  bool compares_clocks = false;
  /// On a trace without GPU work it takes the host's time for the steps' cost, as in a CPU run:
  /// not run where the trace's GPU side was not recorded (Advice::launches_without_gpu_work),
  /// where the host's time is launch calls and waits for GPU work the trace does not show.
  bool host_time_is_cost = false;
  /// It reads what the profiler's CPU activity records (operators, ranges, memory events): not
  /// run on a trace recorded without it (cuda_side_only), where it has nothing to see.
  bool needs_cpu_side = false;
  /// On a GPU trace it follows launches to their GPU work (correlation ids: the gap before work
  /// its launch ended, an operator's kernels): not run where most GPU work has no launch call
  /// (Advice::unlinked_work), where it would find nothing for want of links, not of a problem.
  /// Off for the rules that read kernels, steps, memory or collectives alone.
  bool reads_launch_links = true;
};

/// The rules of each family, in the order they run (the order does not change the advice).
std::vector<Rule> gpu_rules();
std::vector<Rule> cpu_rules();
/// Rules read from the operators alone, on CPU and GPU traces alike (rules_epilogue.cpp).
std::vector<Rule> operator_rules();

/// What a cause means and who teaches its fix.
struct Cause {
  const char* key;
  const char* title;
  const char* fix;
  LessonRef lesson;
};
/// The cause named `key`; throws std::logic_error for a key no rule should use.
const Cause& cause(const std::string& key);
/// A cause's title or a rule's `what` as said of a trace with no profiled steps, where the gains
/// are of the recorded window: "The CPU stops inside a step..." reads "...inside the recorded
/// window..."; a text that names no step comes back as it is.
const char* without_steps(const char* text);
/// The texts without_steps rewrites, each with its rewrite (the tests check that each is still a
/// cause's title or a rule's `what`).
const std::vector<std::pair<const char*, const char*>>& step_texts();
/// Every cause, for the tests (each lesson section named must exist in its page).
const std::vector<Cause>& all_causes();

/// Cites in `s` the matrix products' roofline rows that `which` accepts, most time first (at
/// most options.examples): counted rows held against a peak (of the bound their intensity puts
/// them under, where both peaks are known; else the one known). With `compare`, and when
/// some were cited, also the row of the best share in the same place (CPU or GPU) among those
/// `which` does not accept, when it did better than every one cited (a comparison).
void cite_roofline(const RuleContext& c, Symptom& s, const std::function<bool(const RooflineRow&)>& which,
                   bool compare);

/// "62%": a share for a sentence (0..1 in).
std::string percent_text(double share);

}  // namespace pil::trace::advise_rules
