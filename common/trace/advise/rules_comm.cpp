// Exposed communication on one rank: the share of its communication time that ran with no
// computation beside it, as Holistic Trace Analysis's per-rank communication/computation
// overlap (inverted). What counts as which is the ranks report's (ranks.h): on a GPU, NCCL's
// kernels against every other kernel, copy and set; on the CPU, the backend's slices (gloo:*, on
// its worker threads) against the operators on the other threads, less the collectives' own
// calls. Per profiled step, added up over the steps.
#include <algorithm>
#include <cctype>
#include <string_view>

#include "trace/advise/names.h"  // any_name
#include "trace/advise/rules_cpu.h"
#include "trace/ranks.h"

namespace pil::trace::advise_rules {

namespace {

// A slice of the backend's own (gloo:all_reduce, ncclDevKernel_AllReduce...): what the ranks
// report counts as communication. Looked for first, so that a trace with none is not profiled.
bool is_backend_slice(std::string_view name) {
  if (name.empty() || (std::tolower(static_cast<unsigned char>(name[0])) != 'g' &&
                       std::tolower(static_cast<unsigned char>(name[0])) != 'n'))
    return false;
  auto starts = [&](std::string_view p) {
    if (name.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(name[i])) != p[i]) return false;
    return true;
  };
  return starts("gloo:") || starts("nccl");
}

}  // namespace

void exposed_comm(const RuleContext& c, RuleResult& out) {
  if (!any_name(c.trace, is_backend_slice)) return;  // no communication: none exposed
  const RankProfile p = rank_profile(c.trace);
  if (p.collectives.empty()) return;  // no communication: none exposed
  int64_t comm = 0, hidden = 0;
  if (p.steps.empty()) {  // the whole trace: the profile's unions are not cut into steps
    comm = length(p.comm);
    hidden = overlap(p.compute, p.comm);
  } else {
    for (const RankStep& s : p.steps) {
      comm += s.comm_ns;
      hidden += s.overlap_ns;
    }
  }
  if (comm <= 0) return;
  const int64_t exposed = comm - hidden;
  const double share = double(exposed) / double(comm);
  const double of_steps = c.basis_ns > 0 ? double(exposed) / double(c.basis_ns) : 0;
  if (share < threshold::kExposedCommShare || of_steps < c.options.min_saved_share) return;

  int64_t in_steps = 0;
  for (const Collective& k : p.collectives) in_steps += p.steps.empty() || k.step >= 0;
  const double per_step =
      p.steps.empty() ? double(in_steps) : double(in_steps) / double(p.steps.size());
  Symptom s;
  s.text = "communication (" + p.collectives.front().name + (p.gpu ? ", NCCL's kernels" : "") +
           ", " + fixed(per_step, 1) + " collective" + (per_step == 1 ? "" : "s") +
           (p.steps.empty() ? "" : " a step") + ") ran " + format_duration(comm) + ", " +
           percent_text(1 - share) + " of it beside computation: " + format_duration(exposed) +
           " exposed (" + percent_text(share) + " of it, " + percent_text(of_steps) +
           " of the steps)";
  s.figures = {{"comm_ns", double(comm)},       {"overlap_ns", double(hidden)},
               {"exposed_ns", double(exposed)}, {"exposed_share", share},
               {"exposed_of_steps", of_steps},  {"collectives_per_step", per_step}};
  // The collectives that left the most exposed, with the trace's own timestamps.
  std::vector<std::pair<int64_t, size_t>> worst;
  for (size_t i = 0; i < p.collectives.size(); ++i) {
    const Collective& k = p.collectives[i];
    if (!p.steps.empty() && k.step < 0) continue;
    worst.push_back({k.dur_ns - length(clip(p.compute, k.start_ns, k.start_ns + k.dur_ns)), i});
  }
  std::stable_sort(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < worst.size() && i < c.options.examples; ++i) {
    const Collective& k = p.collectives[worst[i].second];
    AdviceExample x;
    x.name = k.name;
    x.ts_ns = k.start_ns - c.trace.base_time_ns;  // the profile's times are absolute
    x.dur_ns = k.dur_ns;
    x.where = c.step_name_at(x.ts_ns);
    if (x.where.empty()) x.where = "outside the steps";
    x.detail = format_duration(worst[i].first) + " of it with no computation beside it";
    s.examples.push_back(std::move(x));
  }
  s.saved_ns = exposed;
  s.how = "the exposed communication (" + format_duration(exposed) +
          "), an upper bound: hidden behind backward (buckets started as their gradients are "
          "ready), none of it would be left on the step";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
