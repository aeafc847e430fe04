// Operator overhead: operators so small that what every call costs whatever its size (the
// dispatcher, the aten:: frames, the profiler's own record) is most of what they cost, from the
// operators' self time on a CPU-only trace. On a GPU trace the host's time costs the step only
// while the GPU waits for it: the GPU rules judge it there (the launch-bound loop).
#include <algorithm>
#include <vector>

#include "trace/advise/rules_cpu.h"
#include "trace/name_ids.h"

namespace pil::trace::advise_rules {
namespace {

constexpr uint32_t kNoName = 0xffffffffu;

struct NameTotal {
  std::string_view name;
  int64_t calls = 0, ns = 0, median = 0;
  size_t first = 0;  // its first call's slot
};

// CPU-only: operators whose median call has under kSmallOpNs of self time, and the share of the
// steps their calls under it take in self time (their few long calls, a large copy among many
// small ones, are work, not overhead; time two threads spend in them at once counted once).
void overhead_on_cpu(const RuleContext& c, RuleResult& out) {
  const CpuSlices& cs = c.cpu();
  const Trace& t = c.trace;
  NameIds ids;
  std::vector<uint32_t> id_of(cs.size(), kNoName);  // operators in the steps: their name's id
  std::vector<std::vector<int64_t>> self_by_name;
  int64_t op_calls = 0;
  for (size_t s = 0; s < cs.size(); ++s) {
    const Event& e = t.events[cs.event(s)];
    if (!is_operator(e) || !cs.in_steps(s)) continue;
    ++op_calls;
    id_of[s] = ids(e.name);
    if (id_of[s] >= self_by_name.size()) self_by_name.resize(id_of[s] + 1);
    self_by_name[id_of[s]].push_back(cs.self_ns(s));
  }
  std::vector<NameTotal> by_id(self_by_name.size());
  std::vector<char> small(self_by_name.size(), 0);
  for (uint32_t k = 0; k < self_by_name.size(); ++k) {
    by_id[k] = {ids.name(k), 0, 0, median_ns(std::move(self_by_name[k])), 0};
    small[k] = by_id[k].median < threshold::kSmallOpNs;
  }
  auto small_call = [&](size_t s) {
    return id_of[s] != kNoName && small[id_of[s]] && cs.self_ns(s) < threshold::kSmallOpNs;
  };
  for (size_t s = 0; s < cs.size(); ++s)
    if (small_call(s)) {
      NameTotal& n = by_id[id_of[s]];
      if (!n.calls) n.first = s;
      ++n.calls;
      n.ns += cs.self_ns(s);
    }
  const int64_t overhead = length_within(cs.self_intervals_if(small_call), cs.basis());
  const double share = c.basis_ns > 0 ? double(overhead) / double(c.basis_ns) : 0;
  if (share < threshold::kOverheadShare) return;

  std::vector<NameTotal> names;
  int64_t calls = 0;
  for (const NameTotal& n : by_id)
    if (n.calls) {
      names.push_back(n);
      calls += n.calls;
    }
  std::sort(names.begin(), names.end(), [](const NameTotal& a, const NameTotal& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
  });
  Symptom s;
  std::string top;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    top += (i ? ", " : "") + std::string(names[i].name);
  s.text = std::to_string(calls) + " short calls (under " + format_duration(threshold::kSmallOpNs) +
           " of self time) of " + std::to_string(names.size()) +
           " operators whose median call is that short (" + top +
           (names.size() > 3 ? ", ..." : "") + ") took " + percent_text(share) +
           " of the steps in self time (" + format_duration(overhead) + ")";
  s.figures = {{"overhead_share", share},
               {"overhead_ns", double(overhead)},
               {"small_calls", double(calls)},
               {"small_operators", double(names.size())},
               {"operator_calls", double(op_calls)}};
  for (size_t i = 0; i < names.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(cs.event(names[i].first),
                                   std::to_string(names[i].calls) + " calls, median self time " +
                                       format_duration(names[i].median) + ", " +
                                       format_duration(names[i].ns) + " in all"));
  // Matrix products this short, against the CPU's peak when one is given, beside the best
  // placed product of the trace.
  cite_roofline(c, s, [](const RooflineRow& r) {
    return !r.on_gpu && r.calls > 0 && r.time_ns / r.calls < threshold::kSmallOpNs;
  }, true);
  s.saved_ns = overhead;
  s.how = "the short calls' self time (" + format_duration(overhead) +
          "), an upper bound: fewer, larger operators save what each call costs, not the work "
          "the calls did";
  out.symptom(std::move(s));
}

}  // namespace

int64_t median_ns(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + long(n / 2), v.end());
  const int64_t upper = v[n / 2];
  if (n % 2) return upper;
  return (*std::max_element(v.begin(), v.begin() + long(n / 2)) + upper) / 2;
}

void op_overhead(const RuleContext& c, RuleResult& out) {
  if (c.gpu()) {
    out.unable(kGpuJudgesHostTime);
    return;
  }
  overhead_on_cpu(c, out);
}

}  // namespace pil::trace::advise_rules
