// Operator overhead: operators so small that what every call costs whatever its size (the
// dispatcher, the aten:: frames, the profiler's own record) is most of what they cost.
// On a CPU-only trace, from the operators' self time; on a GPU trace, from the CPU time of each
// operator against the GPU work it launched.
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "trace/advise/rules_cpu.h"
#include "trace/first_by_id.h"
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
  s.saved_ns = overhead;
  s.how = "the short calls' self time (" + format_duration(overhead) +
          "), an upper bound: fewer, larger operators save what each call costs, not the work "
          "the calls did";
  out.symptom(std::move(s));
}

// GPU: operators that held the CPU longer than the GPU work they launched ran (outermost
// operators, their CPU time less the runtime calls in them that launched nothing), so the CPU
// cannot launch fast enough to keep the GPU busy. That costs wall time only while the GPU has
// nothing to run: the saving is the GPU's idle time while they ran, at most their CPU time
// beyond their GPU work. Operators inside the DataLoader's fetches are data preparation (the
// data_loading rule's). On a GPU trace that is the launch-bound loop's symptom, and goes under
// its cause.
void overhead_on_gpu(const RuleContext& c, RuleResult& out) {
  const CpuSlices& cs = c.cpu();
  const Trace& t = c.trace;
  // The outermost operator around each slice (itself, for an outermost one), or -1.
  std::vector<int32_t> top(cs.size(), -1);
  std::vector<int32_t> slot_of_call(t.events.size(), -1);
  for (size_t s = 0; s < cs.size(); ++s) {  // parents come before children
    const Event& e = t.events[cs.event(s)];
    const long p = cs.parent(s);
    top[s] = p >= 0 ? top[size_t(p)] : -1;
    if (top[s] < 0 && is_operator(e)) top[s] = int32_t(s);
    if (is_launch_call(e.category)) slot_of_call[cs.event(s)] = int32_t(s);
  }
  // GPU work to the outermost operator around its launch call; work whose call is not in the
  // trace by its External id (the operator's own).
  std::vector<int64_t> gpu_ns(cs.size(), 0), runtime_ns(cs.size(), 0);
  std::optional<FirstById> by_id;
  for (size_t w : c.index.device_work()) {
    long owner = -1;
    if (const long call = c.index.launch_of(w); call >= 0) owner = slot_of_call[size_t(call)];
    if (owner < 0) {
      if (!by_id) {
        uint64_t max_id = 0;
        for (size_t s = 0; s < cs.size(); ++s)
          if (is_torch_scope(t.events[cs.event(s)].category))
            max_id = std::max(max_id, t.events[cs.event(s)].external_id);
        by_id.emplace(max_id, t.events.size());
        for (size_t s = 0; s < cs.size(); ++s)
          if (is_torch_scope(t.events[cs.event(s)].category))
            by_id->add(t.events[cs.event(s)].external_id, long(s));
      }
      owner = (*by_id)[t.events[w].external_id];
    }
    if (owner >= 0 && top[size_t(owner)] >= 0)
      gpu_ns[size_t(top[size_t(owner)])] += t.events[w].dur_ns;
  }
  // Runtime calls that launched no GPU work (synchronizes, allocations, queries, the runtime's
  // own start-up): the CUDA runtime's time, which the GPU rules judge, not dispatch.
  for (size_t s = 0; s < cs.size(); ++s)
    if (top[s] >= 0 && is_launch_call(t.events[cs.event(s)].category) &&
        c.index.work_of(cs.event(s)).empty())
      runtime_ns[size_t(top[s])] += t.events[cs.event(s)].dur_ns;

  std::map<std::string_view, NameTotal> by_name;
  std::vector<Interval> spans;  // the calls that took longer than their GPU work
  int64_t excess = 0, calls = 0;
  for (size_t s = 0; s < cs.size(); ++s) {
    const Event& e = t.events[cs.event(s)];
    if (top[s] != int32_t(s) || !cs.in_steps(s) || cs.in_data_loading(s)) continue;
    const int64_t over = e.dur_ns - runtime_ns[s] - gpu_ns[s];
    if (over <= 0) continue;
    excess += over;
    ++calls;
    spans.push_back({e.start_ns, e.end_ns()});
    NameTotal& n = by_name[e.name];
    if (!n.calls) n.first = s;
    n.name = e.name;
    ++n.calls;
    n.ns += over;
  }
  // The saving is at most the excess: under the threshold, the GPU's idle time need not be found.
  if (excess <= 0 || double(excess) < threshold::kOverheadShare * double(c.basis_ns)) return;
  // The time they ran with no GPU work running on any stream: what they can have cost.
  std::vector<Interval> busy;
  for (size_t w : c.index.device_work())
    busy.push_back({t.events[w].start_ns, t.events[w].end_ns()});
  merge(busy);
  merge(spans);
  const int64_t idle = overlap(spans, subtract(cs.basis(), busy));
  const int64_t saved = std::min(excess, idle);
  const double share = c.basis_ns > 0 ? double(saved) / double(c.basis_ns) : 0;
  if (share < threshold::kOverheadShare) return;
  std::vector<NameTotal> names;
  for (auto& [name, n] : by_name) names.push_back(n);
  std::sort(names.begin(), names.end(), [](const NameTotal& a, const NameTotal& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
  });
  Symptom s;
  s.cause = "launch_bound";
  s.text = std::to_string(calls) +
           " operator calls held the CPU longer than the GPU work they "
           "launched (" +
           format_duration(excess) + " beyond it in all); the GPU ran nothing for " +
           format_duration(idle) + " while they ran (" +
           percent_text(double(idle) / double(c.basis_ns)) + " of the steps)";
  s.figures = {{"excess_ns", double(excess)},
               {"calls", double(calls)},
               {"idle_ns", double(idle)},
               {"saved_share", share}};
  for (size_t i = 0; i < names.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(cs.event(names[i].first), std::to_string(names[i].calls) +
                                                                 " calls, " +
                                                                 format_duration(names[i].ns) +
                                                                 " of CPU beyond their GPU work"));
  s.saved_ns = saved;
  s.how = "the GPU's idle time while those operators held the CPU (" + format_duration(idle) +
          "), at most their CPU time beyond their GPU work (" + format_duration(excess) + ")";
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
  if (c.gpu())
    overhead_on_gpu(c, out);
  else
    overhead_on_cpu(c, out);
}

}  // namespace pil::trace::advise_rules
