// The rules of `pil-trace advise` that need GPU work in the trace: what keeps a GPU from being
// fed or from running at its speed. Thresholds in thresholds.h; causes in causes.cpp.
#include <algorithm>

#include "trace/advise/rules.h"

namespace pil::trace::advise_rules {
namespace {

// Launch-bound, seen from the GPU: idle time on the streams that waited for the host to launch
// the next work (the stream report's host wait). On the busiest stream, so that two streams'
// idle time is not added up.
void gpu_host_wait(const RuleContext& c, RuleResult& out) {
  const StreamReport& r = c.streams();
  const StreamRow* main = nullptr;
  for (const StreamRow& s : r.streams)
    if (!main || s.busy_ns > main->busy_ns) main = &s;
  if (!main || main->window_ns <= 0) return;
  const double share = double(main->host_wait_ns) / double(main->window_ns);
  if (share < threshold::kHostWaitShare) return;
  Symptom s;
  s.text = "GPU idle waiting on the host: " + percent_text(share) + " of the GPU window (" +
           format_duration(main->host_wait_ns) + " on stream " + std::to_string(main->stream) +
           ", its busiest; busy " + percent_text(main->utilization()) + ")";
  s.figures = {{"host_wait_share", share}, {"host_wait_ns", double(main->host_wait_ns)},
               {"stream", double(main->stream)}, {"busy_share", main->utilization()}};
  s.saved_ns = int64_t(share * double(c.basis_ns));
  s.how = "the GPU's wait on the host is " + percent_text(share) +
          " of the window; removing all of it would leave " + percent_text(1 - share) +
          " of the steps' time";
  out.symptom(std::move(s));
}

// Launch-bound, seen from the CPU: many kernels ran for less time than the call that launched
// them, so no launch rate could keep the GPU busy.
void short_kernels(const RuleContext& c, RuleResult& out) {
  const LaunchReport& l = c.launches();
  if (l.launches.empty()) return;
  const double share = double(l.shorter_than_call) / double(l.launches.size());
  if (share < threshold::kShortKernelShare) return;
  Symptom s;
  s.text = std::to_string(l.shorter_than_call) + " of " + std::to_string(l.launches.size()) +
           " launches (" + percent_text(share) + ") ran GPU work shorter than the launch call";
  s.figures = {{"short_share", share}, {"short_launches", double(l.shorter_than_call)},
               {"launches", double(l.launches.size())}};
  // The time those launches held the CPU beyond their work's length: what launching cost over
  // running, an upper bound on what fewer launches would save.
  int64_t excess = 0;
  std::vector<std::pair<int64_t, size_t>> worst;
  for (const Launch& x : l.launches) {
    if (!x.work_shorter_than_call) continue;
    const Event& call = c.trace.events[x.call];
    int64_t work = 0;
    for (size_t w : c.index.work_of(x.call)) work += c.trace.events[w].dur_ns;
    excess += call.dur_ns - work;
    worst.push_back({call.dur_ns - work, x.call});
  }
  std::sort(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < worst.size() && i < c.options.examples; ++i)
    s.examples.push_back(c.example(worst[i].second,
                                   "the call took " + format_duration(worst[i].first) +
                                       " longer than its GPU work"));
  s.saved_ns = excess;
  s.how = "the launch calls' time beyond their GPU work's, added up (" + format_duration(excess) + ")";
  out.symptom(std::move(s));
}

}  // namespace

std::vector<Rule> gpu_rules() {
  return {
      {"gpu_host_wait", "launch_bound", "GPU idle waiting on the host", true, gpu_host_wait},
      {"short_kernels", "launch_bound", "kernels shorter than their launch", true, short_kernels},
  };
}

}  // namespace pil::trace::advise_rules
