#include "harness/lesson.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/DeviceAccelerator.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <iostream>
#include <limits>
#include <thread>
#include <variant>

#include "base/atomic_file.h"
#include "base/command_line.h"
#include "base/system_info.h"
#include "cuda/check.h"
#include "cuda/runtime.h"
#if PIL_HAVE_CUPTI
#include "cuda/cupti_tracer.h"
#endif
#if PIL_HAVE_DISTRIBUTED
#include "harness/distributed.h"
#endif
#include "harness/error_text.h"
#include "harness/progress.h"
#include "harness/summary.h"
#include "harness/verify.h"
#include "profiler/profiler.h"
#include "trace/expect.h"
#include "trace/ranks.h"
#include "trace/reports.h"
#include "trace/text_table.h"

namespace fs = std::filesystem;

namespace pil {
namespace {

/// Exit codes, as ctest reads them.
enum Exit { kPassed = 0, kFailed = 1, kUsage = 2, kSkipped = 77 };

/// A usage problem found after parsing (memory, output folder): one line, exit 2.
struct UsageError {
  std::string message;
};

c10::ScalarType resolve_dtype(DTypeChoice d, bool cuda) {
  switch (d) {
    case DTypeChoice::F32: return at::kFloat;
    case DTypeChoice::BF16: return at::kBFloat16;
    case DTypeChoice::F16: return at::kHalf;
    case DTypeChoice::Auto: break;
  }
  return cuda ? at::kBFloat16 : at::kFloat;
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

/// The line for a problem too large for memory: "--size 1 --seq 131072: needs 12.00 GB on the host
/// but 8.00 GB is available; allowed: a smaller --seq or --heads". The flags that set the size
/// are --size and the lesson's number flags that memory_need reads, each found by asking it again
/// with the flag at its least (05's --bucket-kb and 06's --workers move no byte): the line names
/// those given, the remedy those that can still shrink the side that is short (not "a smaller
/// --size" when it is already 1). `side` picks that side from a MemoryNeed.
std::string too_large(const Lesson& lesson, const Problem& p, double (*side)(const MemoryNeed&),
                      const std::string& where, uint64_t available) {
  const double need = side(lesson.memory_need(p));
  auto need_with = [&](const std::function<void(Options&)>& set) {
    Options o = p.options;
    set(o);
    try {
      return side(lesson.memory_need(Problem{o, p.device, p.dtype}));
    } catch (const std::exception&) {
      return need;  // a shape the lesson cannot size says nothing about this flag
    }
  };
  std::string shape = "--size " + std::to_string(p.options.size), remedy;
  std::vector<std::string> can_shrink;
  if (need_with([](Options& o) { o.size = 1; }) < need) can_shrink.push_back("--size");
  for (const LessonFlag& f : lesson.flags) {
    if (!f.choices.empty() || !p.options.extra.count(f.name)) continue;
    const double least = need_with([&](Options& o) { o.extra[f.name] = f.min; });
    const bool moves = least != need || need_with([&](Options& o) { o.extra[f.name] *= 2; }) != need;
    if (moves && p.options.given.count(f.name)) shape += " " + f.name + " " + std::to_string(p.options.flag(f.name));
    if (least < need) can_shrink.push_back(f.name);
  }
  for (size_t i = 0; i < can_shrink.size(); ++i)
    remedy += (i == 0 ? "" : i + 1 == can_shrink.size() ? " or " : ", ") + can_shrink[i];
  remedy = remedy.empty() ? "a machine with more memory" : "a smaller " + remedy;
  auto bytes = [](double b) { return trace::format_bytes(int64_t(std::min(b, 9e18))); };
  return shape + ": needs " + bytes(need) + " on " + where + " but " + bytes(double(available)) +
         " is available; allowed: " + remedy;
}

void check_memory(const Lesson& lesson, const Problem& p) {
  const MemoryNeed need = lesson.memory_need(p);
  const uint64_t host = available_host_memory();
  if (p.device.is_cuda()) {
    const uint64_t dev = cuda::free_memory(p.device.index());
    if (dev > 0 && need.device_bytes > double(dev))
      throw UsageError{too_large(lesson, p, [](const MemoryNeed& n) { return n.device_bytes; }, "the GPU", dev)};
    if (host > 0 && need.host_bytes > double(host))
      throw UsageError{too_large(lesson, p, [](const MemoryNeed& n) { return n.host_bytes; }, "the host", host)};
  } else if (host > 0 && need.device_bytes + need.host_bytes > double(host)) {
    // On the CPU both are the host's.
    throw UsageError{too_large(lesson, p, [](const MemoryNeed& n) { return n.device_bytes + n.host_bytes; },
                               "the host", host)};
  }
}

/// The recorders a variant can use besides LibTorch's (pil::profiler's default): the schedule,
/// steps and table are pil::profiler::profile's whichever records.
#if PIL_HAVE_CUPTI
class CuptiRecorder : public profiler::Tracer {
 public:
  void prepare() override {}
  void start() override { tracer_.start(); }
  void stop() override { tracer_.stop(); }
  const trace::Trace& trace() const override { return tracer_.trace(); }
  void save(const fs::path& path) const override { tracer_.save(path); }
  std::string name() const override { return "the project's CUPTI tracer (not Kineto)"; }

 private:
  cuda::CuptiTracer tracer_;
};
#endif

/// --profiler off: nothing recorded in process, so an outside profiler can subscribe to CUPTI.
class NoRecorder : public profiler::Tracer {
 public:
  void prepare() override {}
  void start() override {}
  void stop() override {}
  const trace::Trace& trace() const override { return empty_; }
  void save(const fs::path&) const override {}
  std::string name() const override {
    return "none (--profiler off): NVTX ranges only, for an outside profiler";
  }

 private:
  trace::Trace empty_;
};

/// The recorder for a variant; null for LibTorch's, pil::profiler's default.
std::shared_ptr<profiler::Tracer> make_recorder(const Variant& v, bool profiler) {
  if (!profiler) return std::make_shared<NoRecorder>();
  if (v.tracer == Tracer::Cupti) {
#if PIL_HAVE_CUPTI
    return std::make_shared<CuptiRecorder>();
#else
    throw cuda::Unavailable("records with CUPTI, which this build lacks (the CUDA toolkit's CUPTI was not "
                            "found at configure time)");
#endif
  }
  return nullptr;
}

/// The variant's result (`mine`, as verified) against that of the variant it must agree with,
/// on the same inputs and weights, under the same tolerance: where both have a collect(), the
/// other's (it recomputes from the weights as they are, and moves none); else one more call of
/// it (a forward-only variant, such as `compiled`, against the forward of one whose collect()
/// adds the backward).
/// Returns the verdict that stands: the reference's if that failed, else this one.
Verdict check_agreement(const Lesson& lesson, const Variant& variant, const Tensors& inputs,
                        const at::Tensor& mine, const Problem& p, const Verdict& against_reference) {
  const Variant* other = nullptr;
  for (const auto& v : lesson.variants)
    if (v.name == variant.agrees_with) other = &v;
  if (!other) throw std::logic_error(variant.name + ": agrees_with names no variant: " + variant.agrees_with);
  const at::Tensor theirs = variant.collect && other->collect ? other->collect(inputs) : other->run(inputs);
  const Verdict v = verify(mine, theirs, lesson.tolerance_of(p));
  std::cout << v.describe("agrees with " + other->name);
  return against_reference.passed ? v : against_reference;
}

/// Data-parallel runs: this process's rank and the ranks in all (0 and 1 otherwise).
struct RankOf {
  int rank = 0, size = 1;
  bool on = false;
};
RankOf rank_of() {
#if PIL_HAVE_DISTRIBUTED
  if (dist::group_open()) return {dist::group().rank, dist::group().size, true};
#endif
  return {};
}

/// The files a variant's run writes in `dir`, named by `run_stem` (output_stem's) and, for a
/// data-parallel rank, `_rank<k>`: one place, so that a file added here is checked before the run too.
struct RunFiles {
  fs::path trace, table, summary;
};
RunFiles run_files(const fs::path& dir, const std::string& run_stem, const RankOf& rank) {
  const std::string stem = rank.on ? run_stem + "_rank" + std::to_string(rank.rank) : run_stem;
  return {dir / (stem + ".pt.trace.json"), dir / (stem + ".table.txt"), dir / (stem + ".summary.json")};
}

/// The table across ranks, on rank 0, from every rank's trace (after a barrier: all are written).
/// `stem` names a rank's files without the `_rank<k>` part.
void report_across_ranks(const fs::path& dir, const std::string& stem) {
#if PIL_HAVE_DISTRIBUTED
  const RankOf me = rank_of();
  if (!me.on) return;
  dist::barrier("every rank's trace written");
  if (me.rank != 0) return;
  std::vector<std::string> paths;
  for (int r = 0; r < me.size; ++r)
    paths.push_back(run_files(dir, stem, {r, me.size, true}).trace.string());
  std::cout << "\n== across ranks (pil-trace ranks on the "
            << (me.size == 1 ? std::string("one trace") : std::to_string(me.size) + " traces") << ")\n";
  try {
    const trace::RanksReport report = trace::read_ranks(paths);
    std::cout << trace::format_ranks(report);
    const fs::path svg = dir / (stem + "_ranks.svg");
    write_text_atomically(svg, trace::render_ranks_svg(report, 1200, -1, stem + ": ranks side by side"));
    std::cout << "ranks svg: " << svg.string() << "\n";
  } catch (const std::exception& e) {
    // Ranks on other machines write their traces there: read them together once gathered.
    std::cout << "across ranks: not read here: " << e.what() << "\n";
  }
#else
  (void)dir, (void)stem;
#endif
}

/// One line of the comparison printed after several variants ran.
struct VariantLine {
  std::string name, result;
  int64_t median_step_ns = 0;
  int64_t peak_bytes = -1;       ///< from the trace's memory events (GPU memory if any)
  int64_t cuda_peak_bytes = -1;  ///< the caching allocator's peak, on a GPU
  std::string peak_range;
};

/// The variants side by side: step time, memory, result (when more than one ran).
void print_comparison(const std::vector<VariantLine>& lines) {
  if (lines.size() < 2) return;
  bool memory = false, cuda = false;
  for (const auto& l : lines) {
    memory = memory || l.peak_bytes >= 0;
    cuda = cuda || l.cuda_peak_bytes >= 0;
  }
  std::vector<std::string> headers{"Median step"};
  if (memory) headers.insert(headers.end(), {"Peak (trace)", "Peak in"});
  if (cuda) headers.push_back("Allocator peak");
  headers.insert(headers.end(), {"Result", "Variant"});
  trace::TextTable table(headers);
  for (const auto& l : lines) {
    std::vector<std::string> row{l.median_step_ns >= 0 ? trace::format_duration(l.median_step_ns) : "-"};
    if (memory) {
      row.push_back(l.peak_bytes >= 0 ? trace::format_bytes(l.peak_bytes) : "-");
      row.push_back(l.peak_range.empty() ? "-" : l.peak_range);
    }
    if (cuda) row.push_back(l.cuda_peak_bytes >= 0 ? trace::format_bytes(l.cuda_peak_bytes) : "-");
    row.push_back(l.result);
    row.push_back(l.name);
    table.add(row);
  }
  std::cout << "\n== the variants side by side (median recorded step"
            << (memory ? "; memory peak above what was held when recording began" : "") << ")\n"
            << table.str();
}

/// A variant's inputs and its one call (data-parallel runs: where the failure tests make a rank
/// stop).
struct VariantCall {
  const Lesson& lesson;
  const Variant& variant;
  Tensors inputs;
  at::Tensor operator()() const {
#if PIL_HAVE_DISTRIBUTED
    if (lesson.distributed) dist::test_failure_point();
#endif
    return variant.run(inputs);
  }
};

/// Set-up: the run's header line, the variant's own preparation (a package compiled and
/// loaded), the seeded inputs.
VariantCall set_up(const Lesson& lesson, const Variant& variant, const Problem& p,
                   const std::string& device_name) {
  const Options& o = p.options;
  const std::string threads_note = lesson.cpu_threads && !p.device.is_cuda() ? lesson.cpu_threads(p) : "";
  std::cout << "\n== " << lesson.name << " | variant " << variant.name << " | " << p.device.str()
            << " (" << device_name << ") | " << dtype_name(p.dtype) << " | size " << o.size
            << " | seed " << o.seed;
  if (!p.device.is_cuda()) {  // what a CPU run's times depend on (OMP_NUM_THREADS sets it)
    const int threads = at::get_num_threads();
    std::cout << " | " << threads << " intra-op thread" << (threads == 1 ? "" : "s");
  }
  std::cout << "\n";
  if (!threads_note.empty()) std::cout << threads_note << "\n";
  if (variant.prepare) variant.prepare(p);
  at::manual_seed(o.seed);
  return {lesson, variant, lesson.make_inputs(p)};
}

/// Warm-up: the plain calls before the profiler starts; returns the last output.
at::Tensor warm_up(const VariantCall& call, const Problem& p) {
  const int calls = p.options.warmup_calls;
  at::Tensor out;
  Progress progress("warm-up calls", calls);
  for (int i = 0; i < calls; ++i) {
    out = call();
    progress.update(i + 1);
  }
  synchronize(p.device);
  return out;
}

/// What recording the steps leaves for verifying and reporting.
struct Recording {
  std::unique_ptr<profiler::profile> prof;   ///< its events, table and trace
  at::Tensor out;                            ///< the last step's output
  std::vector<RunSummary::Step> wall_steps;  ///< for --profiler off (else the trace has them)
  int64_t cuda_peak = -1;                    ///< the caching allocator's peak over the steps
};

/// Recording: one cycle of torch.profiler's schedule, the steps named ProfilerStep#N (N the
/// schedule's step).
Recording record_steps(const Variant& variant, const VariantCall& call, const Problem& p) {
  const Options& o = p.options;
  const profiler::Schedule schedule(o.wait, o.warmup, o.active, /*repeat=*/1);
  std::cout << "schedule: " << o.warmup_calls << " warm-up calls, then wait " << o.wait
            << ", warmup " << o.warmup << ", active " << o.active << " ("
            << trace::count_of(schedule.total_steps(), "step", "steps") << ")\n";
  if (p.device.is_cuda()) at::accelerator::resetPeakStats(p.device.index());
  Recording rec;
  // [profile-steps]
  profiler::ProfileOptions settings;
  settings.activities = {profiler::ProfilerActivity::CPU};
  if (p.device.is_cuda()) settings.activities.insert(profiler::ProfilerActivity::CUDA);
  settings.schedule = schedule;
  settings.record_shapes = o.record_shapes;
  settings.profile_memory = o.profile_memory;
  settings.tracer = make_recorder(variant, o.profiler);
  rec.prof = std::make_unique<profiler::profile>(std::move(settings));
  profiler::profile& prof = *rec.prof;
  std::cout << "tracer: " << prof.tracer_name() << "\n";
  Progress step_progress("steps", static_cast<int>(schedule.total_steps()));
  prof.start();
  for (int64_t step = 0; step < schedule.total_steps(); ++step) {
    const profiler::ProfilerAction action = prof.current_action();
    const auto t0 = std::chrono::steady_clock::now();
    rec.out = call();
    // The last step waits for the GPU, so the trace holds every kernel it launched.
    if (action == profiler::ProfilerAction::RECORD_AND_SAVE) synchronize(p.device);
    if (profiler::records(action))
      rec.wall_steps.push_back({trace::step_name(prof.step_num()),
                                std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - t0).count()});
#if PIL_HAVE_DISTRIBUTED
    // Kineto's distributedInfo (rank, world size, backend), as torch.distributed writes it.
    if (action == profiler::ProfilerAction::RECORD_AND_SAVE && rank_of().on)
      prof.add_metadata_json("distributedInfo", dist::distributed_info_json());
#endif
    // step() ends this step's range and begins the next; after the last, stop() ends it and
    // the recording (the schedule's RECORD_AND_SAVE).
    if (step + 1 < schedule.total_steps()) {
      // Work still running on the GPU from the steps before would land in the first recorded
      // step: let it finish before step() starts the recording.
      if (!profiler::records(action) && profiler::records(schedule(step + 1))) synchronize(p.device);
      prof.step();
    }
    step_progress.update(step + 1);
  }
  prof.stop();
  step_progress.finish();
  // [profile-steps]

  // The allocator's peak over the steps alone, read before the reference and any comparison
  // allocate (the float64 reference can be far larger than the variant).
  if (p.device.is_cuda()) {
    synchronize(p.device);
    rec.cuda_peak = at::accelerator::getDeviceStats(p.device.index())
                        .allocated_bytes[size_t(c10::CachingAllocator::StatType::AGGREGATE)]
                        .peak;
  }
  return rec;
}

/// The rows a sampled check takes (sorted, on the CPU), or an undefined tensor for a check of
/// the whole result: --verify full, a lesson without independent rows, a variant checked
/// against a reference of its own or on what its collect() gathers, or too few rows to sample.
at::Tensor sampled_rows(const Lesson& lesson, const Variant& variant, const Problem& p, const Tensors& inputs) {
  if (p.options.verify_full || lesson.row_inputs.empty() || variant.collect || lesson.references.count(variant.name))
    return {};
  const int64_t rows = inputs.at(lesson.row_inputs.front()).size(0);
  if (rows <= kSampleRows) return {};
  at::Generator gen = at::detail::createCPUGenerator(p.options.seed);
  return std::get<0>(at::randperm(rows, gen).slice(0, 0, kSampleRows).sort());
}

/// Verifying: the result against the float64 reference, after the runs (a variant that trains
/// has changed its weights by now, and its collect() and reference both use them as they are),
/// then against the variant it must agree with. Prints each comparison.
Verdict verify_variant(const Lesson& lesson, const Variant& variant, const Problem& p,
                       const Tensors& inputs, const at::Tensor& out) {
  Progress check_progress("verify (the result against the float64 reference)", 0);
  const at::Tensor result = variant.result(inputs, out);
  Verdict verdict;
  if (const at::Tensor rows = sampled_rows(lesson, variant, p, inputs); rows.defined()) {
    // The reference for the sampled rows alone: their inputs' rows, the rest as they are.
    Tensors sample = inputs;
    const at::Tensor at_device = rows.to(inputs.at(lesson.row_inputs.front()).device());
    for (size_t i : lesson.row_inputs) sample.at(i) = inputs.at(i).index_select(0, at_device);
    if (std::string why = unusable(result); !why.empty()) {
      verdict.reason = why;
      verdict.elements = result.numel();
    } else {
      verdict = verify(result.index_select(0, rows.to(result.device())), lesson.reference(sample),
                       lesson.tolerance_of(p));
    }
    std::string picked;
    for (int64_t i = 0; i < rows.numel(); ++i) picked += (i ? ", " : "") + std::to_string(rows[i].item<int64_t>());
    verdict.scope = "a sample: rows " + picked + " of " + std::to_string(result.size(0)) + " (seed " +
                    std::to_string(p.options.seed) + "), the whole result checked for NaN, infinity and "
                    "all zeros; --verify full checks every row";
  } else {
    verdict = verify(result, lesson.reference_for(variant.name)(inputs), lesson.tolerance_of(p));
  }
  check_progress.finish();
  std::cout << verdict.describe();
  if (!variant.agrees_with.empty()) verdict = check_agreement(lesson, variant, inputs, result, p, verdict);
  return verdict;
}

/// A variant's files' names without their endings: variant, device, dtype, size, then each lesson
/// flag set away from its default ("eager_cpu_fp32_n512", "naive_cpu_fp32_n1_seq128").
std::string output_stem(const Lesson& lesson, const Variant& variant, const Problem& p) {
  const Options& o = p.options;
  return variant.name + "_" + file_device_name(p.device) + "_" + dtype_name(p.dtype) + "_n" + std::to_string(o.size) +
         flags_in_name(lesson.flags, lesson.flag_defaults_cpu, o.extra, !p.device.is_cuda());
}

/// Why one of the files the runs will write cannot be written, said before any run (a trace's
/// name taken by a folder failed after the run, and left its table and a summary naming the
/// trace): "" when each can be.
std::string outputs_problem(const Lesson& lesson, const std::vector<const Variant*>& runnable, const Problem& p) {
  for (const Variant* v : runnable) {
    const RunFiles files = run_files(p.options.out_dir, output_stem(lesson, *v, p), rank_of());
    for (const fs::path& path : {files.trace, files.table, files.summary}) {
      if (const std::string why = unwritable_reason(path); !why.empty())
        return "--out: cannot write " + path.string() + ": " + why + "; allowed: a folder where the run's files can be written";
    }
  }
  return "";
}

/// Reporting: the table, the summary, the trace and what it says, the `RESULT:` line; fills
/// `line` for the comparison. Returns the exit code.
int report_variant(const Lesson& lesson, const Variant& variant, const Problem& p,
                   const std::string& device_name, const Recording& rec, const Verdict& verdict,
                   VariantLine& line) {
  const Options& o = p.options;
  profiler::profile& prof = *rec.prof;
  const trace::TraceIndex index(prof.events());
  const trace::KeyAverages& table = index.key_averages();
  trace::TableOptions table_options;
  table_options.sort = o.sort.value_or(p.device.is_cuda() ? trace::SortKey::DeviceTotal
                                                          : trace::SortKey::CpuTotal);
  table_options.row_limit = o.row_limit;
  const std::string table_text = o.profiler ? trace::format_table(table, table_options) : "";
  std::cout << table_text;

  const RankOf me = rank_of();
  const std::string run_stem = output_stem(lesson, variant, p);
  const fs::path dir(o.out_dir);
  const RunFiles files = run_files(dir, run_stem, me);
  const fs::path& trace_path = files.trace;
  const fs::path& table_path = files.table;
  const fs::path& summary_path = files.summary;

  RunSummary s;
  s.lesson = lesson.name;
  s.variant = variant.name;
  s.libtorch_version = TORCH_VERSION;
  s.device = file_device_name(p.device);
  s.device_name = device_name;
  s.dtype = dtype_name(p.dtype);
  s.size = o.size;
  s.seed = o.seed;
  for (const auto& f : lesson.flags)
    s.flags.push_back({f.name.substr(2), o.flag(f.name), f.choices.empty() ? "" : flag_text(f, o.flag(f.name))});
  if (me.on) {
    s.rank = me.rank;
    s.world_size = me.size;
#if PIL_HAVE_DISTRIBUTED
    s.backend = dist::to_string(dist::group().backend);
#endif
  }
  s.wait = o.wait;
  s.warmup = o.warmup;
  s.active = o.active;
  s.warmup_calls = o.warmup_calls;
  s.result = verdict.passed ? "PASSED" : "FAILED";
  s.max_abs_err = verdict.max_abs_err;
  s.max_rel_err = verdict.max_rel_err;
  s.mismatches = verdict.mismatches;
  if (o.profiler) {
    s.trace_path = trace_path.string();
    s.table_path = table_path.string();
  }
  for (size_t i : index.steps) {
    const trace::Event& e = prof.events().events[i];
    s.steps.push_back({std::string(e.name), e.dur_ns});
  }
  if (!o.profiler) s.steps = rec.wall_steps;  // wall clock on the CPU (a GPU's last step synchronized)
  s.operators = table;
  s.memory = index.memory();
  s.cuda_peak_allocated = rec.cuda_peak;
  if (rec.cuda_peak >= 0)
    std::cout << "memory: the caching allocator's peak over the steps: " << trace::format_bytes(rec.cuda_peak)
              << " allocated on " << p.device.str() << "\n";

  write_text_atomically(summary_path, to_json(s));
  if (o.profiler) {
    write_text_atomically(table_path, table_text);
    prof.export_chrome_trace(trace_path);
    std::cout << trace::explain(index);
    for (const auto& e : o.expect) std::cout << trace::check_expectation(index, e).line() << "\n";
    std::cout << "table: " << table_path.string() << "\n";
  }
  std::cout << "summary: " << summary_path.string() << "\n";
  if (o.profiler) std::cout << "trace: " << trace_path.string() << "\n";
  if (o.profiler) report_across_ranks(dir, run_stem);
  std::cout << "RESULT: " << (verdict.passed ? "PASSED" : "FAILED") << std::endl;

  line.result = s.result;
  std::vector<int64_t> steps;
  for (const auto& st : s.steps) steps.push_back(st.cpu_ns);
  line.median_step_ns = steps.empty() ? 0 : int64_t(trace::DurationStats::of(steps).median);
  if (const trace::MemoryRow* m = trace::main_memory_row(s.memory)) {
    line.peak_bytes = m->peak_growth;
    line.peak_range = m->peak_range;
  }
  line.cuda_peak_bytes = s.cuda_peak_allocated;
  return verdict.passed ? kPassed : kFailed;
}

/// One variant: set up, warm up, record the steps, verify, report. Returns its exit code and
/// fills `line` for the comparison.
int run_variant(const Lesson& lesson, const Variant& variant, const Problem& p,
                const std::string& device_name, VariantLine& line) {
  line.name = variant.name;
  const VariantCall call = set_up(lesson, variant, p, device_name);
  warm_up(call, p);
  const Recording rec = record_steps(variant, call, p);
  const Verdict verdict = verify_variant(lesson, variant, p, call.inputs, rec.out);
  return report_variant(lesson, variant, p, device_name, rec, verdict, line);
}

/// --device cuda on a machine without a usable GPU: the SKIPPED result, saying why; else nothing.
std::optional<int> skip_without_cuda(const Lesson& lesson, const Options& o) {
  if (o.device != DeviceChoice::Cuda || torch::cuda::is_available()) return std::nullopt;
  std::string reason = cuda::unavailable_reason();
  if (reason.empty()) reason = "torch::cuda::is_available() is false (this LibTorch may be CPU-only)";
  std::cout << lesson.name << ": --device cuda: no usable CUDA GPU: " << reason << "\n"
            << "RESULT: SKIPPED" << std::endl;
  return kSkipped;
}

/// The options with the lesson's CPU defaults for the flags not given, on the CPU.
Options with_device_defaults(const Lesson& lesson, Options o, const c10::Device& device) {
  if (device.is_cuda()) return o;
  if (lesson.default_size_cpu > 0 && !o.given.count("--size")) o.size = lesson.default_size_cpu;
  for (const auto& [flag, value] : lesson.flag_defaults_cpu)
    if (!o.given.count(flag)) o.extra[flag] = value;
  return o;
}

/// The device a run uses: CUDA when asked for, or on auto when a GPU is usable; data-parallel
/// ranks on one machine each take their own GPU (LOCAL_RANK).
c10::Device run_device(const Options& o, bool cuda_usable) {
  const bool cuda = o.device == DeviceChoice::Cuda || (o.device == DeviceChoice::Auto && cuda_usable);
  if (!cuda) return c10::Device(c10::kCPU);
  int gpu = 0;
#if PIL_HAVE_DISTRIBUTED
  if (dist::group_open()) gpu = dist::group().local_rank;
#endif
  return c10::Device(c10::kCUDA, c10::DeviceIndex(gpu));
}

/// The variants to run, in order, after the one-line reports of those left out. A single
/// variant asked for by name that cannot run is the run's verdict instead: a usage error
/// (thrown), or a skip (returned).
std::variant<std::vector<const Variant*>, int> variants_to_run(const Lesson& lesson, const Problem& p) {
  const Options& o = p.options;
  const std::vector<VariantChoice> choices = choose_variants(lesson, p, o.variants, /*device_usable=*/true);
  const bool one = choices.size() == 1;
  std::vector<const Variant*> runnable;
  for (const VariantChoice& c : choices) {
    const std::string& name = c.variant->name;
    switch (c.status) {
      case VariantChoice::Status::Runs:
        runnable.push_back(c.variant);
        break;
      case VariantChoice::Status::Refused:
        if (!one) {  // as --list says: left out of "all", with what it takes
          std::cout << lesson.name << ": variant " << name << " left out: " << c.why << "\n";
          break;
        }
        throw UsageError{c.why};
      case VariantChoice::Status::CudaOnly: {
        if (!one) {
          std::cout << lesson.name << ": variant " << name << " runs on CUDA only: left out\n";
          break;
        }
        if (o.device == DeviceChoice::Auto) {
          std::cout << lesson.name << ": --variant " << name
                    << " needs a CUDA GPU: no usable CUDA GPU: " << cuda::unavailable_reason()
                    << "\nRESULT: SKIPPED" << std::endl;
          return kSkipped;
        }
        std::string cpu_variants;
        for (const auto& w : lesson.variants)
          if (!w.needs_cuda) cpu_variants += (cpu_variants.empty() ? "" : "|") + w.name;
        throw UsageError{"--variant " + name + ": runs on CUDA only; allowed with --device cpu: " +
                         cpu_variants};
      }
      case VariantChoice::Status::Unavailable:
      case VariantChoice::Status::DecidedOnDevice:
        if (!one) {
          std::cout << lesson.name << ": variant " << name << " left out: " << c.why << "\n";
          break;
        }
        std::cout << lesson.name << ": --variant " << name << ": " << c.why << "\nRESULT: SKIPPED"
                  << std::endl;
        return kSkipped;
    }
  }
  return runnable;
}

/// The --out folder made if missing, and a file made and removed in it: what is wrong, or "".
std::string out_folder_problem(const std::string& out_dir) {
  const std::string why = make_writable_folder(out_dir);
  return why.empty() ? why : "--out: " + why;
}

int run_parsed(const Lesson& lesson, const Options& given) {
  if (const auto skipped = skip_without_cuda(lesson, given)) return *skipped;
  const c10::Device device = run_device(given, torch::cuda::is_available());
  // The run's GPU is the current device for all that takes the current one (the current stream
  // of the kernels launched by hand, a CUDA graph's capture stream, NCCL's communicators): each
  // data-parallel rank's own GPU, not device 0 for every rank of a machine with several.
  if (device.is_cuda()) at::accelerator::setDeviceIndex(device.index());
  const Options o = with_device_defaults(lesson, given, device);
  const Problem problem{o, device, resolve_dtype(o.dtype, device.is_cuda())};
  const std::string device_name = device.is_cuda() ? cuda::device_name(device.index()) : cpu_model_name();

  auto chosen = variants_to_run(lesson, problem);
  if (const int* verdict = std::get_if<int>(&chosen)) return *verdict;
  const std::vector<const Variant*>& runnable = std::get<std::vector<const Variant*>>(chosen);

#if PIL_HAVE_CUPTI
  // NVTX ranges reach CUPTI only if NVTX is pointed at it before its first range.
  // Not with --profiler off: an outside profiler (nsys) routes NVTX to itself.
  for (const Variant* v : runnable)
    if (v->tracer == Tracer::Cupti && o.profiler) cuda::CuptiTracer::route_nvtx_to_cupti();
#endif

  check_memory(lesson, problem);
  if (const std::string why = out_folder_problem(o.out_dir); !why.empty()) throw UsageError{why};
  if (const std::string why = outputs_problem(lesson, runnable, problem); !why.empty()) throw UsageError{why};

  // Several variants: one that throws is that variant's FAILED line, and the others still run
  // (not a data-parallel lesson's, where the other ranks would wait on this one).
  const bool go_on_after_errors = runnable.size() > 1 && !lesson.distributed;
  int worst = kPassed;
  std::vector<VariantLine> lines;
  for (const Variant* v : runnable) {
    lines.emplace_back();
    try {
      worst = std::max(worst, run_variant(lesson, *v, problem, device_name, lines.back()));
    } catch (const UsageError&) {
      release_after_variant();
      throw;
    } catch (const std::exception& e) {
      release_after_variant();
      std::cout << std::flush;
      // The library or the build turned out to lack what the variant needs here (no cuBLASLt
      // algorithm for its epilogue and dtype, a package that did not compile): a skip with the
      // reason, as for `unavailable`.
      if (dynamic_cast<const cuda::Unavailable*>(&e) || dynamic_cast<const VariantUnavailable*>(&e)) {
        lines.pop_back();
        if (runnable.size() > 1) {
          std::cout << lesson.name << ": variant " << v->name << " left out: " << e.what() << "\n";
          continue;
        }
        std::cout << lesson.name << ": --variant " << v->name << ": " << e.what() << "\nRESULT: SKIPPED"
                  << std::endl;
        return kSkipped;
      }
      if (!go_on_after_errors) throw;
      const bool oom = dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr;
      std::cerr << lesson.name << ": variant " << v->name << ": " << (oom ? "out of memory: " : "error: ")
                << one_line(e) << std::endl;
      std::cout << "RESULT: FAILED" << std::endl;
      lines.back().name = v->name;
      lines.back().result = "FAILED";
      lines.back().median_step_ns = -1;  // it recorded no step
      worst = kFailed;
      continue;
    }
    release_after_variant();
  }
  print_comparison(lines);
  return worst;
}

}  // namespace

VariantChoice choose_variant(const Variant& v, const Problem& p, bool device_usable) {
  VariantChoice c;
  c.variant = &v;
  if (v.needs_cuda && !p.device.is_cuda()) {
    c.status = VariantChoice::Status::CudaOnly;
    c.why = "runs on CUDA only";
  } else if (std::string why = v.check ? v.check(p) : ""; !why.empty()) {
    c.status = VariantChoice::Status::Refused;
    c.why = why;
  } else if (v.unavailable) {
    try {
      c.why = v.unavailable(p);
      if (!c.why.empty()) c.status = VariantChoice::Status::Unavailable;
    } catch (const std::exception&) {
      if (device_usable) throw;
      c.status = VariantChoice::Status::DecidedOnDevice;
      c.why = "LibTorch asks the device whether it has this kernel, and no " + p.device.str() +
              " is usable here";
    }
  }
  return c;
}

std::vector<VariantChoice> choose_variants(const Lesson& lesson, const Problem& p,
                                           const std::vector<std::string>& names, bool device_usable) {
  std::vector<VariantChoice> out;
  for (const auto& name : names)
    for (const auto& v : lesson.variants)
      if (v.name == name) out.push_back(choose_variant(v, p, device_usable));
  return out;
}

std::string list_variants(const Lesson& lesson, const Problem* p, bool device_usable) {
  auto line = [](const Variant& v, bool mark_cuda) {
    std::string s = v.name + "\t" + v.summary;
    if (mark_cuda && v.needs_cuda) s += " [CUDA only]";
    if (!v.agrees_with.empty()) s += " [agrees with " + v.agrees_with + "]";
    return s + "\n";
  };
  std::string text;
  if (!p) {
    for (const auto& v : lesson.variants) text += line(v, true);
    return text;
  }
  std::vector<std::string> names;
  for (const auto& v : lesson.variants) names.push_back(v.name);
  std::string left_out;
  for (const VariantChoice& c : choose_variants(lesson, *p, names, device_usable)) {
    if (c.status == VariantChoice::Status::Runs)
      text += line(*c.variant, false);
    else if (c.status == VariantChoice::Status::DecidedOnDevice)
      left_out += "# " + c.variant->name + ": not known here: " + c.why + "\n";
    else
      left_out += "# " + c.variant->name + ": left out: " + c.why + "\n";
  }
  return text + left_out;
}

std::string file_device_name(const c10::Device& d) { return d.is_cuda() ? "cuda" : "cpu"; }

double adamw_eps(c10::ScalarType dtype) {
  constexpr double kDefault = 1e-8;  // LibTorch's AdamWOptions default
  if (dtype == at::kHalf) return std::max(kDefault, double(std::numeric_limits<c10::Half>::min()));
  return kDefault;
}

namespace {
std::vector<std::function<void()>>& releases() {
  static std::vector<std::function<void()>> r;
  return r;
}
}  // namespace

const char* dtype_name(c10::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return "bf16";
    case at::kHalf: return "fp16";
    case at::kDouble: return "fp64";
    case at::kFloat: return "fp32";
    // Not a dtype of the lessons' flags: said as torch says it (an int64 input is no fp32).
    default: return c10::toString(t);
  }
}

void after_variant(std::function<void()> release) { releases().push_back(std::move(release)); }

void release_after_variant() {
  std::vector<std::function<void()>> now;
  now.swap(releases());
  for (auto& r : now) r();
}

namespace {

/// Runs `body`, turning what it throws into one line on stderr and its exit code.
int guarded(const Lesson& lesson, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::cerr << lesson.name << ": error: " << e.message << std::endl;
    return kUsage;
  } catch (const c10::OutOfMemoryError& e) {
    std::cout << std::flush;
    std::cerr << lesson.name << ": out of memory: " << one_line(e) << std::endl;
  } catch (const std::exception& e) {
    std::cout << std::flush;
    std::cerr << lesson.name << ": error: " << one_line(e) << std::endl;
  }
  std::cout << "RESULT: FAILED" << std::endl;
  return kFailed;
}

/// --list: every variant; with --device, those that would run there (for the dtype, size and
/// flags given). CUDA without a GPU here is listed all the same, as decided from the flags and
/// the build: only what LibTorch must ask the device is marked so.
int print_list(const Lesson& lesson, const Options& given) {
  if (given.device == DeviceChoice::Auto) {
    std::cout << list_variants(lesson, nullptr, false);
    return kPassed;
  }
  const bool cuda = given.device == DeviceChoice::Cuda;
  const c10::Device device = cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  const Options o = with_device_defaults(lesson, given, device);
  const Problem p{o, device, resolve_dtype(o.dtype, cuda)};
  std::cout << list_variants(lesson, &p, !cuda || torch::cuda::is_available());
  return kPassed;
}

/// The flags every data-parallel lesson takes, beside its own.
std::vector<LessonFlag> distributed_flags() {
  return {{"--ranks", "Ranks to start, one process each (when no launcher set RANK, WORLD_SIZE)", 2, 1, 64, {}},
          {"--backend", "c10d backend: auto (nccl with a GPU per rank, else gloo on the CPU; with --device "
                        "cuda and too few GPUs, a skip), gloo (CPU), nccl (GPU)",
           0, 0, 2, {"auto", "gloo", "nccl"}},
          {"--comm-timeout-s", "Seconds a collective waits for the other ranks before the run stops",
           30, 1, 3600, {}}};
}

#if PIL_HAVE_DISTRIBUTED
/// A backend choice that ends the run, said as every rank and the launcher say it: a usage error
/// (exit 2) or a skip (exit 77); nothing for a backend to go on with.
std::optional<int> backend_refusal(const Lesson& lesson, dist::BackendChoice requested,
                                   const dist::BackendDecision& choice) {
  if (choice.verdict == dist::BackendDecision::Verdict::Usage) {
    std::cerr << lesson.name << ": error: " << choice.why << std::endl;
    return kUsage;
  }
  if (choice.verdict == dist::BackendDecision::Verdict::Skip) {
    std::cout << lesson.name << ": --backend "
              << (requested == dist::BackendChoice::Auto ? "auto" : dist::to_string(choice.backend)) << ": "
              << choice.why << "\nRESULT: SKIPPED" << std::endl;
    return kSkipped;
  }
  return std::nullopt;
}

/// Data-parallel: start the ranks (no launcher around), or be one rank of the group.
int run_distributed(const Lesson& lesson, Options o, int argc, const char* const argv[]) {
  const std::chrono::seconds timeout(o.flag("--comm-timeout-s"));
  const auto requested = static_cast<dist::BackendChoice>(o.flag("--backend"));
  // A usage error every rank would hit is found before any rank starts.
  if (const std::string why = dist::backend_usage_error(requested, o.device); !why.empty()) {
    std::cerr << lesson.name << ": error: " << why << std::endl;
    return kUsage;
  }
  dist::RankEnv env;
  try {
    env = dist::read_rank_env();
    if (!env.launched) {
      // What every rank would say alike, said once before any starts: no GPU, too few GPUs for
      // the ranks, an --out folder where no file can be made (each rank said it, and the run
      // ended FAILED, exit 1).
      if (const auto skipped = skip_without_cuda(lesson, o)) return *skipped;
      const int ranks = int(o.flag("--ranks"));
      const int gpus = torch::cuda::is_available() ? int(torch::cuda::device_count()) : 0;
      const dist::BackendDecision choice =
          dist::choose_backend(requested, o.device, gpus, ranks, dist::build_has_nccl());
      if (const auto refused = backend_refusal(lesson, requested, choice)) return *refused;
      if (const std::string why = out_folder_problem(o.out_dir); !why.empty()) {
        std::cerr << lesson.name << ": error: " << why << std::endl;
        return kUsage;
      }
      const std::vector<std::string> args(argv + 1, argv + argc);
      return dist::launch_ranks(ranks, args, timeout + std::chrono::seconds(5));
    }
  } catch (const dist::SetupError& e) {
    std::cerr << lesson.name << ": error: " << e.what() << std::endl;
    return kUsage;
  }
  if (const auto skipped = skip_without_cuda(lesson, o)) return *skipped;
  const int gpus = torch::cuda::is_available() ? int(torch::cuda::device_count()) : 0;
  const dist::BackendDecision choice =
      dist::choose_backend(requested, o.device, gpus, env.local_world_size, dist::build_has_nccl());
  if (const auto refused = backend_refusal(lesson, requested, choice)) return *refused;
  const dist::Backend backend = choice.backend;
  o.device = choice.device;
  if (backend == dist::Backend::Gloo) {
    // Ranks sharing a machine share its cores: each takes its part for its operators.
    at::set_num_threads(std::max(1, int(std::thread::hardware_concurrency()) / env.local_world_size));
  }
  try {
    const dist::Group g = dist::open_group(env, backend, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    std::cout << lesson.name << ": rank " << g.rank << " of " << g.size << ", backend " << dist::to_string(g.backend)
              << ", store " << env.master_addr << ":" << env.master_port << ", run " << g.run_id
              << ", collectives time out after " << timeout.count() << " s" << std::endl;
  } catch (const dist::SetupError& e) {
    std::cerr << lesson.name << ": error: " << e.what() << std::endl;
    return kUsage;
  }
  return guarded(lesson, [&] { return run_parsed(lesson, o); });
}
#endif

/// A run whose report did not reach standard output whole (a full disk, a closed descriptor) is
/// not a success, though the trace was written: said on standard error, and exit 2 as for an
/// --out that cannot be written; a failed run keeps its own code.
int with_stdout_checked(const Lesson& lesson, StdoutCheck& out, int code) {
  const std::string problem = out.problem();
  if (problem.empty()) return code;
  std::cerr << lesson.name << ": error: " << problem << std::endl;
  return code == kPassed ? kUsage : code;
}

}  // namespace

int run_lesson(const Lesson& lesson, int argc, const char* const argv[]) {
  StdoutCheck out;
  // By name: LessonInfo's fields of one type in another order would still compile, swapped.
  LessonInfo info;
  info.name = lesson.name;
  info.description = lesson.description;
  info.default_size = lesson.default_size;
  info.max_size = lesson.max_size;
  info.size_help = lesson.size_help;
  info.flags = lesson.flags;
  info.profile_memory = lesson.profile_memory;
  info.default_size_cpu = lesson.default_size_cpu;
  info.flag_defaults_cpu = lesson.flag_defaults_cpu;
  if (lesson.distributed)
    for (auto& f : distributed_flags()) info.flags.push_back(f);
  for (const auto& v : lesson.variants) info.variants.push_back({v.name, v.summary});
  const ParsedArgs parsed = parse_options(info, argc, argv);
  if (parsed.list)
    return with_stdout_checked(lesson, out, guarded(lesson, [&] { return print_list(lesson, parsed.options); }));
  if (!parsed.run) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.text
                                                     << (parsed.exit_code ? "\n" : "");
    return with_stdout_checked(lesson, out, parsed.exit_code);
  }
  if (lesson.distributed) {
#if PIL_HAVE_DISTRIBUTED
    const int code = with_stdout_checked(lesson, out, run_distributed(lesson, parsed.options, argc, argv));
    // A rank leaves at once: c10d's threads may still wait on a peer that died, and a rank's
    // files are written whole already.
    std::cerr.flush();
    std::_Exit(code);
#else
    std::cerr << lesson.name << ": error: this build has no c10d Gloo (install libgloo-dev, reconfigure)" << std::endl;
    return kUsage;
#endif
  }
  return with_stdout_checked(lesson, out, guarded(lesson, [&] { return run_parsed(lesson, parsed.options); }));
}

}  // namespace pil
