// Exposed communication on one rank: the share of its communication time that ran with no
// computation beside it, as Holistic Trace Analysis's per-rank communication/computation
// overlap (inverted). What counts as which is the ranks report's (ranks.h): on a GPU, NCCL's
// kernels against every other kernel, copy and set; on the CPU, the backend's slices (gloo:*, on
// its worker threads) against the operators on the other threads, less the collectives' own
// calls. Per profiled step, added up over the steps.
//
// Three symptoms, by what the collectives do, since the fixes differ: all-reduces (of gradients,
// and broadcasts, reduces, barriers) under the cause exposed_comm, whose fix is to overlap them
// with backward; all-gathers and reduce-scatters (FSDP's and ZeRO's parameters and gradients,
// tensor parallelism's activations) under exposed_sharded, whose fix is to start them before
// their result is needed; exchanges (all-to-all, send/receive: embedding lookups sharded across
// ranks, experts) under exposed_exchange, whose fix is to start the next batch's exchange while
// this one computes. A rank whose collectives are all of one kind is judged on the ranks
// report's own step figures; with several kinds, each kind's collectives are cut to the steps
// and set against the same computation. A trace with no backward pass gets a note on its
// all-reduces: they are not gradients', and buckets do not hide them (said only where the
// trace recorded operators: a trace of GPU work alone cannot tell).
#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>
#include <unordered_map>

#include "trace/advise/names.h"  // any_name
#include "trace/advise/rules_cpu.h"
#include "trace/ranks.h"

namespace pil::trace::advise_rules {

namespace {

/// What a collective does, for the cause its exposure goes under.
enum class Kind { AllReduce, Sharded, Exchange };

Kind kind_of(const Collective& k) {
  return k.exchange ? Kind::Exchange : k.sharded ? Kind::Sharded : Kind::AllReduce;
}

/// Whether the trace shows a forward pass with no backward: operators recorded (a trace of GPU
/// work alone, or of few operators, cannot tell) and none of autograd's nodes
/// ("autograd::engine::evaluate_function: MmBackward0", or "MmBackward0" as older traces name it).
bool forward_only(const Trace& t) {
  int64_t operators = 0;
  for (const Event& e : t.events) operators += e.category == Category::CpuOp;
  if (operators < 100) return false;
  return !any_name(t, [](std::string_view n) {
    return n.rfind("autograd::engine::evaluate_function", 0) == 0 ||
           (n.size() > 9 && (n.find("Backward0") != std::string_view::npos ||
                             n.compare(n.size() - 8, 8, "Backward") == 0));
  });
}

void exposed(const RuleContext& c, const RankProfile& p, RuleResult& out, Kind kind) {
  const bool exchange = kind == Kind::Exchange;
  std::vector<size_t> mine;  // the collectives of this rule's kind
  for (size_t i = 0; i < p.collectives.size(); ++i)
    if (kind_of(p.collectives[i]) == kind) mine.push_back(i);
  if (mine.empty()) return;
  int64_t comm = 0, hidden = 0;
  if (mine.size() == p.collectives.size()) {  // all of one kind: the report's own figures
    if (p.steps.empty()) {  // the whole trace: the profile's unions are not cut into steps
      comm = length(p.comm);
      hidden = overlap(p.compute, p.comm);
    } else {
      for (const RankStep& s : p.steps) {
        comm += s.comm_ns;
        hidden += s.overlap_ns;
      }
    }
  } else if (!p.step_compute.empty()) {  // a GPU's: each step's of this kind against its own work
    for (size_t k = 0; k < p.steps.size(); ++k) {
      std::vector<Interval> kind;
      for (size_t i : mine)
        if (p.collectives[i].step == p.steps[k].number)
          kind.push_back({p.collectives[i].start_ns, p.collectives[i].start_ns + p.collectives[i].dur_ns});
      merge(kind);
      comm += length(kind);
      hidden += overlap(p.step_compute[k], kind);
    }
  } else {  // this kind's collectives, inside the steps (p.compute is already)
    std::vector<Interval> kind;
    for (size_t i : mine) kind.push_back({p.collectives[i].start_ns, p.collectives[i].start_ns + p.collectives[i].dur_ns});
    merge(kind);
    if (!p.steps.empty()) {
      std::vector<Interval> steps;
      for (const RankStep& s : p.steps) steps.push_back({s.start_ns, s.start_ns + s.dur_ns});
      merge(steps);
      kind = intersect(kind, steps);
    }
    comm = length(kind);
    hidden = overlap(p.compute, kind);
  }
  if (comm <= 0) return;
  const int64_t exposed = comm - hidden;
  const double share = double(exposed) / double(comm);
  const double of_steps = c.basis_ns > 0 ? double(exposed) / double(c.basis_ns) : 0;
  if (share < threshold::kExposedCommShare || of_steps < c.options.min_saved_share) return;

  int64_t in_steps = 0;
  for (size_t i : mine) in_steps += p.steps.empty() || p.collectives[i].step >= 0;
  const double per_step =
      p.steps.empty() ? double(in_steps) : double(in_steps) / double(p.steps.size());
  // The name it quotes: the one with the most time among this kind's collectives of the steps
  // (the earliest where several tie): a few broadcasts before many all-reduces are not what
  // the time went to.
  std::string_view name = p.collectives[mine.front()].name;
  std::map<std::string_view, int64_t> time;
  {
    int64_t best = -1;
    for (size_t i : mine)
      if (p.steps.empty() || p.collectives[i].step >= 0)
        best = std::max(best, time[p.collectives[i].name] += p.collectives[i].dur_ns);
    for (size_t i : mine)
      if (time.count(p.collectives[i].name) && time[p.collectives[i].name] == best) {
        name = p.collectives[i].name;
        break;
      }
  }
  // Where the backend's slice said what the kernel is ("nccl:_all_gather_base" around a
  // SendRecv kernel), both are named.
  std::string label = p.gpu ? kernel_label(name) : std::string(name);
  for (size_t i : mine)
    if (p.collectives[i].name == name && !p.collectives[i].kind_from.empty()) {
      label = p.collectives[i].kind_from + " run as " + label;
      break;
    }
  // Other names of this kind (another collective, dtype or algorithm): counted, not listed.
  const size_t others = time.size() > 1 ? time.size() - 1 : 0;
  const bool whole = per_step == double(int64_t(per_step));
  Symptom s;
  s.text = std::string(exchange ? "exchanges" : kind == Kind::Sharded ? "all-gathers and reduce-scatters"
                                                                         : "communication") +
           " (" + label +
           (others ? " and " + std::to_string(others) + " other name" + (others == 1 ? "" : "s") : "") +
           (p.gpu ? ", GPU kernels" : "") + ", " + fixed(per_step, whole ? 0 : 1) + " collective" +
           (per_step == 1 ? "" : "s") + (p.steps.empty() || p.whole_trace ? "" : " a step") + ") ran " +
           format_duration(comm) + ", " + percent_text(1 - share) +
           " of it beside computation: " + format_duration(exposed) + " exposed (" +
           percent_text(share) + " of it, " + percent_text(of_steps) + " of " + c.basis_noun() + ")";
  s.figures = {{"comm_ns", double(comm)},       {"overlap_ns", double(hidden)},
               {"exposed_ns", double(exposed)}, {"exposed_share", share},
               {"exposed_of_steps", of_steps},  {"collectives_per_step", per_step}};
  // The collectives that left the most exposed, with the trace's own timestamps.
  std::unordered_map<int64_t, size_t> step_place;  // a step's number -> its place, with step_compute
  if (!p.step_compute.empty())
    for (size_t s = 0; s < p.steps.size(); ++s) step_place.emplace(p.steps[s].number, s);
  std::vector<std::pair<int64_t, size_t>> worst;
  for (size_t i : mine) {
    const Collective& k = p.collectives[i];
    if (!p.steps.empty() && k.step < 0) continue;
    // Against its own step's work on a GPU (the work that step launched), else all of it.
    const std::vector<Interval>* compute = &p.compute;
    if (const auto s = step_place.find(k.step); s != step_place.end()) compute = &p.step_compute[s->second];
    worst.push_back({k.dur_ns - length(clip(*compute, k.start_ns, k.start_ns + k.dur_ns)), i});
  }
  std::stable_sort(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < worst.size() && i < c.options.examples; ++i) {
    const Collective& k = p.collectives[worst[i].second];
    const std::string detail = format_duration(worst[i].first) + " of it with no computation beside it";
    if (p.gpu && k.event < c.trace.events.size()) {  // its stream and the step that launched it
      s.examples.push_back(c.example(k.event, detail));
      continue;
    }
    AdviceExample x;
    x.name = k.name;
    x.ts_ns = k.start_ns - c.trace.base_time_ns;  // the profile's times are absolute
    x.dur_ns = k.dur_ns;
    x.where = c.step_name_at(x.ts_ns);
    if (x.where.empty()) x.where = c.step_ns.empty() ? (p.gpu ? "on the GPU" : "on the CPU") : "outside the steps";
    x.detail = detail;
    s.examples.push_back(std::move(x));
  }
  s.saved_ns = exposed;
  // One rank's trace cannot tell a collective's transfer from its wait for a slower rank: that
  // wait is the other rank's work to shorten, not this one's to hide.
  const std::string wait_note =
      "; part of it may be this rank waiting for a slower one, which one rank's trace cannot tell "
      "from the transfer (pil-trace ranks on every rank's trace measures the wait)";
  const std::string on_step = c.step_ns.empty() ? "in the window" : "on the step";
  switch (kind) {
    case Kind::Exchange:
      s.how = "the exposed exchanges (" + format_duration(exposed) +
              "), an upper bound: started for the next batch while this one computes, none of it "
              "would be left " + on_step + wait_note;
      break;
    case Kind::Sharded:
      s.how = "the exposed all-gathers and reduce-scatters (" + format_duration(exposed) +
              "), an upper bound: started before their result is needed, none of it would be "
              "left " + on_step + wait_note;
      break;
    case Kind::AllReduce:
      // Without a backward pass they are no gradients' (tensor parallelism's all-reduces
      // between a layer's products, an evaluation's): buckets of gradients are then no fix, and
      // the finding is a cause of its own (exposed_forward).
      if (forward_only(c.trace)) {
        s.how = "the exposed communication (" + format_duration(exposed) +
                "), an upper bound: hidden behind other computation, none of it would be left " +
                on_step + wait_note;
        s.text += "; the trace's operators have no backward pass, so these are not gradients' "
                  "all-reduces";
      } else {
        s.how = "the exposed communication (" + format_duration(exposed) +
                "), an upper bound: hidden behind backward (buckets started as their gradients "
                "are ready), none of it would be left " + on_step + wait_note;
        // Several a step: the gradients are in buckets already (a public MI300X DDP rank, 4 a
        // step and 74% exposed, was told to bucket them), so the fix is not buckets as such.
        if (per_step >= 2)
          s.fix = "The gradients are already reduced in " + fixed(per_step, whole ? 0 : 1) +
                  " collectives a step (buckets), and still exposed: a bucket that starts only as backward ends "
                  "(the last one, or every one where backward is shorter than the transfers) is exposed whatever "
                  "its size. Smaller buckets start earlier (DDP's bucket_cap_mb; the lesson's bucketed variant), "
                  "bf16 gradients (a DDP communication hook) halve the bytes, and a slower rank makes the others "
                  "wait in every collective (pil-trace ranks on every rank's trace tells which).";
      }
      break;
  }
  const bool forward = kind == Kind::AllReduce && forward_only(c.trace);
  out.symptom(std::move(s), kind == Kind::Exchange  ? "exposed_exchange"
                            : kind == Kind::Sharded ? "exposed_sharded"
                            : forward               ? "exposed_forward"
                                                    : nullptr);
}

}  // namespace

void exposed_comm(const RuleContext& c, RuleResult& out) {
  if (!any_name(c.trace, is_comm_slice)) return;  // no communication: none exposed (looked for first)
  const RankProfile p = rank_profile(c.trace, {}, &c.index);
  if (p.collectives.empty()) return;  // no communication: none exposed
  for (const Kind kind : {Kind::AllReduce, Kind::Sharded, Kind::Exchange}) exposed(c, p, out, kind);
}

}  // namespace pil::trace::advise_rules
