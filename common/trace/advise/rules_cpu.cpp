// The rules of `pil-trace advise` that run on every trace, CPU-only ones included: where the
// host's time goes. Thresholds in thresholds.h; causes in causes.cpp.
#include <algorithm>

#include "trace/advise/rules.h"

namespace pil::trace::advise_rules {
namespace {

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A first step far slower than the rest: warm-up, the allocator, loading, compiling. Needs at
// least three steps (a first and two to compare it with).
void first_step(const RuleContext& c, RuleResult& out) {
  if (c.step_ns.size() < 3) {
    out.unable("fewer than 3 profiled steps (ProfilerStep#N)");
    return;
  }
  const int64_t rest = median(std::vector<int64_t>(c.step_ns.begin() + 1, c.step_ns.end()));
  if (rest <= 0) return;
  const double ratio = double(c.step_ns[0]) / double(rest);
  if (ratio < threshold::kFirstStepRatio) return;
  Symptom s;
  const Event& first = c.trace.events[c.index.steps[0]];
  s.text = "the first step (" + std::string(first.name) + ") took " + format_duration(first.dur_ns) +
           ", " + fixed(ratio, 1) + "x the others' median (" + format_duration(rest) + ")";
  s.figures = {{"first_step_ns", double(first.dur_ns)}, {"median_other_ns", double(rest)},
               {"ratio", ratio}};
  s.examples.push_back(c.example(c.index.steps[0]));
  s.saved_ns = first.dur_ns - rest;
  s.how = "the first step's time beyond the others' median";
  out.symptom(std::move(s));
}

}  // namespace

std::vector<Rule> cpu_rules() {
  return {
      {"first_step", "first_step", "a first step far slower than the rest", false, first_step},
  };
}

}  // namespace pil::trace::advise_rules
