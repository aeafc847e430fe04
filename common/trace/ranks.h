#pragma once
/// \file
/// Data-parallel runs read together: one trace per rank, the questions asked across them. Per
/// rank and step: the step's time, the time in computation, in communication and in both at once
/// (the all-reduce hidden behind backward), each collective (name, bytes, duration). Across
/// ranks, per step: the slowest rank — the one the others waited for in their collectives — and
/// how long each of the others waited.
///
/// What counts as what, in a trace with GPU work: communication is NCCL's kernels (`nccl*`),
/// computation every other kernel, copy and set. In a CPU-only trace: communication is the
/// backend's own slices (`gloo:*`, on Gloo's worker threads), computation every other operator
/// (`cpu_op`) on every other thread, the collectives' calls themselves (`record_param_comms`,
/// `c10d::*`) left out, and taken out of the operators that enclose them too (a bucket's
/// all-reduce is called from a gradient hook inside autograd's AccumulateGrad: while the call
/// blocks, nothing is computed on that thread). Times are absolute (baseTimeNanoseconds + ts), so ranks on one machine —
/// or on machines with synchronized clocks — line up.
///
/// A wait is read at each collective: the k-th collective of a step on every rank is the same
/// call (c10d issues them in the same order everywhere); the rank that starts it last is the one
/// the others waited for, and each other rank waited from its own start to that last start (at
/// most its collective's duration). The slowest rank of a step is the one that waited least.
#include <climits>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "trace/intervals.h"  // Interval: absolute ns here
#include "trace/parse.h"
#include "trace/trace.h"

namespace pil::trace {

class TraceIndex;  // trace/reports.h

/// Traces that cannot be read together (ranks of different runs, a missing or repeated rank):
/// one line saying which files and what is allowed.
struct RanksError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One collective as one rank ran it.
struct Collective {
  std::string name;     ///< the backend's slice ("gloo:all_reduce", "ncclDevKernel_AllReduce...")
  int64_t bytes = -1;   ///< from record_param_comms ("In msg nelems" × dtype); -1 when unknown
  int64_t start_ns = 0; ///< absolute
  int64_t dur_ns = 0;
  /// The profiler step it belongs to (its number), -1 for none: on a GPU the step that launched
  /// it, wherever it ran (none for work launched before recording began); on the CPU the one it
  /// ran in.
  int64_t step = -1;
  size_t event = SIZE_MAX;  ///< its event in the trace read (Trace::events)
  /// An exchange rather than a reduction: all-to-all or send/receive (NCCL runs all-to-all as
  /// SendRecv kernels: "ncclKernel_SendRecv_...", "ncclDevKernel_SendRecv"; Gloo's "gloo:send").
  bool exchange = false;
  /// A sharded collective: all-gather or reduce-scatter (FSDP's and ZeRO's parameters and
  /// gradients, tensor and sequence parallelism's activations), neither an exchange nor an
  /// all-reduce.
  bool sharded = false;
  /// The backend's slice around the launch ("nccl:_all_gather_base") where its name, not the
  /// kernel's, said what the collective is (NCCL runs some all-gathers and all-reduces as
  /// SendRecv kernels); empty where the two agree or there is none.
  std::string kind_from;
};

/// One profiler step on one rank.
struct RankStep {
  int64_t number = 0;  ///< N of the step's "#N"
  int64_t start_ns = 0, dur_ns = 0;  ///< absolute
  /// Unions within the step: on the CPU, of what ran inside its range; on a GPU, of the work
  /// it launched, wherever on the clock that ran (the GPU runs behind the CPU).
  int64_t compute_ns = 0, comm_ns = 0, overlap_ns = 0;
  int64_t collectives = 0;
  int64_t exposed_comm_ns() const { return comm_ns - overlap_ns; }
};

/// Who a trace says it is: Kineto's `distributedInfo` (torch.profiler writes it), or the file's
/// name (`rank<k>`) when it has none.
struct RankIdentity {
  int rank = -1, world_size = -1;
  std::string backend, run_id;  ///< run_id: our lessons' `pil_run_id`; empty when absent
  /// What was wrong with a distributedInfo the trace has but that names no rank ("its rank is
  /// \"1\", not a whole number"); empty when it names one or the trace has none.
  std::string info_problem;
};

/// A collective's arguments, read beside the parser (which keeps no arguments): from a
/// `record_param_comms` event ("Collective name", "In msg nelems", "dtype"), or from the
/// backend's own slice (`gloo:all_reduce`: its "Input Dims" and "Input type").
struct CommArgs {
  std::string collective;  ///< "allreduce", or the slice's name ("gloo:all_reduce")
  int64_t bytes = -1;
  /// The backend's slice: its start as written (ns on the file's clock, before
  /// baseTimeNanoseconds), which pairs it with its event; record_param_comms: unset, paired in order.
  int64_t ts_ns = INT64_MIN;
};

struct RankProfile {
  std::string label;  ///< the file
  RankIdentity id;
  bool gpu = false;   ///< communication and computation read from GPU work
  std::vector<RankStep> steps;
  bool whole_trace = false;  ///< no ProfilerStep ranges: `steps` is the whole trace, as step 0
  /// The processes its steps came from: 1, or more where several ranks' traces were merged into
  /// one file (TraceLens's TraceFusion), which compare_ranks refuses.
  size_t step_processes = 0;
  int64_t step_pid = -1;  ///< that process, where it is one (-1: none, or several)
  std::vector<Collective> collectives;  ///< in start order
  std::vector<Interval> compute, comm;  ///< merged unions of the steps' own (for the picture)
  /// On a GPU with steps: each step's own computation (the work it launched), merged, by its
  /// place in `steps`; empty otherwise. A step's collectives are set against their step's.
  std::vector<std::vector<Interval>> step_compute;
  SkippedFields skipped;  ///< arguments of an unexpected type its reader skipped
  std::map<std::string, int64_t> unread;  ///< events its reader counted and did not read (Trace::unread)
};

/// A GPU kernel that is communication: NCCL's (and RCCL's) "nccl*", torch's symmetric memory
/// collectives ("void (anonymous namespace)::multimem_all_reduce_kernel<...>", one- and two-shot
/// all-reduce, multimem all-gather and reduce), and DeepEP's expert-parallel exchanges
/// (is_expert_exchange_kernel).
bool is_comm_kernel(std::string_view name);
/// DeepEP's kernels that move tokens between GPUs, an all-to-all of a mixture of experts:
/// "deep_ep::intranode::dispatch<...>", "deep_ep::internode::combine<...>",
/// "deep_ep::internode_ll::dispatch<...>", their notify kernels ("dpsk::ep::" in DeepSeek's own
/// published traces).
bool is_expert_exchange_kernel(std::string_view name);

/// A slice of the backend's own that the ranks report counts as communication: a Gloo slice
/// ("gloo:all_reduce", a CPU trace's) or a communication kernel (is_comm_kernel).
bool is_comm_slice(std::string_view name);

/// One rank's trace, analysed. `args`: its record_param_comms arguments in issue order (for the
/// collectives' bytes); may be empty. `index`: the trace's index where the caller has one (on a
/// GPU the steps' work is found through it); else one is made when needed.
RankProfile rank_profile(const Trace& t, const std::vector<CommArgs>& args = {}, const TraceIndex* index = nullptr);

/// The rank identity and the collectives' arguments of a trace file, in one pass over its text
/// (plain or gzip). Throws ParseError when the file cannot be read.
void scan_rank_file(const std::string& path, RankIdentity& id, std::vector<CommArgs>& args);

/// A step across ranks.
struct StepAcross {
  int64_t number = 0;
  int slowest = -1;                ///< the rank the others waited for
  std::vector<int64_t> dur_ns;     ///< per rank (indexed by rank)
  std::vector<int64_t> wait_ns;    ///< per rank: time spent waiting for the slowest
  int64_t matched_collectives = 0; ///< collectives matched across ranks in this step
  int64_t max_wait_ns() const;
};

struct RanksReport {
  std::vector<RankProfile> ranks;  ///< the ranks given, in rank order (ranks[i].id.rank)
  std::vector<StepAcross> steps;   ///< steps every rank recorded, in order
  int world_size = 0;              ///< the run's, from distributedInfo (else the ranks given)
  std::vector<int> missing;        ///< ranks of the run with no trace given
  /// One trace without distributedInfo or a rank in its name: read as rank 0 of 1, and said.
  bool single_process = false;
  /// Ranks whose steps start far from the others' (clocks that disagree): one line each.
  std::vector<std::string> clock_notes;
  /// Steps whose collectives, matched by their order, are not the same on every rank (another
  /// count, kind or size: events dropped from a trace, or ranks that ran different collectives),
  /// so that their waits compare unlike things: one line each.
  std::vector<std::string> match_notes;
  /// Figures that need every rank (the slowest rank, the waits) are partial: ranks are missing.
  bool partial() const { return !missing.empty(); }
  int rank_of(size_t i) const { return ranks[i].id.rank; }
};

/// Puts ranks side by side: checks they are one run (same world size and run id, each rank
/// once, the same steps) and computes the waits. Ranks missing from the run are listed and the
/// figures across ranks marked partial; one trace that says no rank is rank 0 of 1. Clocks that
/// disagree (a rank's steps starting over half a median step from the others') are noted.
/// Throws RanksError.
RanksReport compare_ranks(std::vector<RankProfile> ranks);

/// Trace files, or folders whose `*.json` / `*.json.gz` files are read (the ones with `rank` in
/// their names when any has), read in parallel with `threads` threads in all (0: the cores the
/// process may use), as for one file: up to that many files at once, the threads left over
/// shared among them (each file's reader parses in chunks on its share). Each thread keeps only its rank's profile, not the whole trace. Throws
/// ParseError (a file cannot be read) or RanksError.
RanksReport read_ranks(const std::vector<std::string>& paths, unsigned threads = 0);

/// The report as text tables: per rank, per step, the collectives per rank.
std::string format_ranks(const RanksReport& r);

/// The report as JSON text.
std::string ranks_json(const RanksReport& r);

/// A timeline with one lane per rank: computation above, communication below (where both are
/// drawn at once they overlap), step boundaries, the slowest rank of each step marked.
/// `step`: the index into r.steps to show, or -1 for all.
std::string render_ranks_svg(const RanksReport& r, int width = 1200, long step = -1,
                             const std::string& title = "");

}  // namespace pil::trace
