// Memory peaks near the device's capacity, and what held them: the allocator's total at the
// peak (the `[memory]` events of profile_memory) over the GPU's memory (deviceProperties'
// totalGlobalMem). A trace carries no capacity for host memory, so host peaks are not judged.
#include "trace/advise/rules_cpu.h"
#include "trace/check.h"  // trace_ts
#include "trace/key_averages.h"  // format_bytes: KB, MB, GB of 1024, as Python's table

namespace pil::trace::advise_rules {
namespace {

/// Bytes of memory GPU `device` has, from the trace's deviceProperties; 0 when it does not say.
int64_t device_capacity(const Trace& t, int32_t device) {
  const DeviceInfo* d = t.device_info(device);
  return d ? d->total_global_mem : 0;
}

}  // namespace

void memory_peak(const RuleContext& c, RuleResult& out) {
  const std::vector<MemoryRow>& rows = c.index.memory();
  if (rows.empty()) {
    // Memory events come with the profiler's CPU activity: without it, profile_memory records none.
    out.unable(cuda_side_only(c.index)
                   ? "the trace has no memory events: record with profile_memory and the CPU activity "
                     "(ProfilerActivity.CPU; this trace has no operator or range)"
                   : "the trace has no memory events: record with profile_memory");
    return;
  }
  bool gpu_rows = false, judged = false;
  for (const MemoryRow& row : rows) {
    if (!row.cuda) continue;
    gpu_rows = true;
    const int64_t capacity = device_capacity(c.trace, row.device);
    if (capacity <= 0) continue;
    judged = true;
    // The allocator's own total where the trace gives it; else what the window added, which
    // is less than what was held (memory allocated before the window is not in it).
    const bool total = row.peak_total >= 0;
    const int64_t peak = total ? row.peak_total : row.peak_growth;
    const double share = double(peak) / double(capacity);
    if (share < threshold::kMemoryPeakShare) continue;
    Symptom s;
    s.text = device_label(row) + " peaked at " + format_bytes(peak) + " of its " +
             format_bytes(capacity) + " (" + percent_text(share) +
             (total ? "" : ", counted from the window's start") + ") at " +
             trace_ts(row.peak_at_ns) + " us, in " +
             (row.peak_range.empty() ? std::string("no named range") : "range " + row.peak_range) +
             (row.peak_op.empty() ? std::string() : ", operator " + row.peak_op);
    // Most of the peak held before recording began: the window did not make it (a public vLLM
    // trace's 178.47 GB, 16.91 MB of it added while recording: the server's cache, allocated at
    // start-up to a set share of the GPU, read as activations to checkpoint).
    const int64_t held_before = total ? std::max<int64_t>(0, row.peak_total - row.peak_growth) : 0;
    const bool mostly_held = 2 * held_before >= peak;
    if (mostly_held) {
      s.text += "; " + format_bytes(held_before) + " of it held when recording began (the window added " +
                format_bytes(row.peak_growth) + ")";
      s.fix = "Most of the peak was allocated before recording began, so the recorded work did not make it: "
              "see what the program holds from its start (the weights, the optimizer's state, a cache it "
              "allocates up front: an inference server reserves a set share of the GPU for its KV cache, "
              "vLLM's gpu_memory_utilization) and record from the start to see it allocated. Where it is the "
              "steps' own, lower the peak: activation checkpointing, a smaller batch, a fused attention.";
    }
    s.figures = {{"peak_bytes", double(peak)},
                 {"capacity_bytes", double(capacity)},
                 {"peak_share", share},
                 {"device", double(row.device)}};
    if (total) s.figures.push_back({"held_before_bytes", double(held_before)});
    AdviceExample x;
    x.name = row.peak_op.empty() ? "(memory peak)" : row.peak_op;
    x.ts_ns = row.peak_at_ns;
    x.where = c.step_name_at(row.peak_at_ns);
    if (x.where.empty()) x.where = c.step_ns.empty() ? "GPU " + std::to_string(row.device) : "outside the steps";
    if (!row.peak_range.empty()) x.where += ", range " + row.peak_range;
    x.detail = "the peak: " + format_bytes(peak) + " allocated";
    s.examples.push_back(std::move(x));
    s.saved_ns = 0;
    s.how =
        "a peak this near the capacity is not a time: it fails (out of memory) when the "
        "batch or the sequence grows, and leaves the allocator no room to cache";
    out.symptom(std::move(s));
  }
  if (!gpu_rows)
    out.unable("a trace carries no capacity for host memory: host peaks are not judged");
  else if (!judged)
    out.unable("the trace's deviceProperties give no totalGlobalMem");
}

}  // namespace pil::trace::advise_rules
