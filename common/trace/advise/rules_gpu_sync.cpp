// The host waiting on the GPU inside a step: synchronize calls (cudaStreamSynchronize,
// cudaDeviceSynchronize, cudaEventSynchronize, their driver and HIP forms) and copies the host
// waits for (cudaMemcpy, hipMemcpyWithStream: every Memcpy call without Async). A synchronize
// right after a copy to the host is what `.item()`, `.cpu()` and `.to(kCPU)` do (a DtoH
// cudaMemcpyAsync, then cudaStreamSynchronize): it is counted as a synchronize and said so.
//
// The synchronizes that end a step are not counted: its last ones, when the step launches no GPU
// work after them (one, or several back to back: within kSyncMinNs of the next, or with no
// operator between). A profiled loop synchronizes there on purpose,
// so that a step's time holds its GPU work (the lessons' harness does, as Python's loops do with
// a loss read at the end); what it costs — the GPU idle while the next step's first launches
// arrive — shows as host wait. One with GPU work launched after it is counted.
#include <algorithm>
#include <map>

#include "trace/advise/names.h"
#include "trace/advise/rules_gpu.h"

namespace pil::trace::advise_rules {
namespace {

/// The runtime call on the same thread just before call `i`, or -1.
long previous_call(const RuleContext& c, size_t i) {
  const Event& e = c.trace.events[i];
  const auto it = c.calls_by_thread().find({e.pid, e.tid});
  if (it == c.calls_by_thread().end()) return -1;
  const auto& calls = it->second;
  auto k = std::lower_bound(calls.begin(), calls.end(), e.start_ns,
                            [&](size_t a, int64_t t) { return c.trace.events[a].start_ns < t; });
  while (k != calls.begin()) {
    const size_t p = *--k;
    if (p != i && c.trace.events[p].start_ns <= e.start_ns) return long(p);
  }
  return -1;
}

/// What a synchronize followed: "after a copy to the host" and the like, or "".
std::string after_what(const RuleContext& c, size_t sync, bool& to_host) {
  to_host = false;
  const long p = previous_call(c, sync);
  if (p < 0 || !is_copy_call(c.trace.events[size_t(p)].name)) return "";
  const auto work = c.index.work_of(size_t(p));
  if (work.empty()) return "";
  const std::string_view copy = c.trace.events[work.front()].name;
  if (is_copy_to_host(copy)) {
    to_host = true;
    return "after a copy to the host (.item(), .cpu(), .to(kCPU))";
  }
  if (is_copy_to_device(copy)) return "after a copy to the GPU (.to(device) without non_blocking)";
  return "";
}

/// The GPU work running during [from, to), on every stream or, where `only` is GPU work, on its
/// stream: how many items, their busy time (a union), and the longest one's index.
struct WorkDuring {
  int64_t items = 0, busy_ns = 0;
  long longest = -1;
};
WorkDuring work_during(const RuleContext& c, int64_t from, int64_t to, long only = -1) {
  WorkDuring out;
  int64_t most = 0;
  std::vector<Interval> spans;
  for (size_t w : c.index.device_work()) {
    const Event& e = c.trace.events[w];
    if (only >= 0 && (e.pid != c.trace.events[size_t(only)].pid || e.tid != c.trace.events[size_t(only)].tid)) continue;
    const int64_t overlap = std::min(e.end_ns(), to) - std::max(e.start_ns, from);
    if (overlap <= 0) continue;
    ++out.items;
    spans.push_back({std::max(e.start_ns, from), std::min(e.end_ns(), to)});
    if (overlap > most) most = overlap, out.longest = long(w);
  }
  merge(spans);
  out.busy_ns = length(spans);
  return out;
}

/// Stretches in which the GPU did work the trace does not show: before an item that started more
/// than kLatencyAfterReturnNs after its launch call returned, onto a stream idle by then (it
/// waited on another stream's event, another process's work, or work recorded nowhere), from
/// the call's return (or the stream's last work) to its start, less the time any stream of the
/// trace was busy (waiting on another stream's recorded work is a wait on work it shows).
std::vector<Interval> unseen_gpu_work(const RuleContext& c) {
  std::vector<Interval> out;
  for (size_t w : c.index.device_work()) {
    const long call = c.index.launch_of(w);
    if (call < 0) continue;
    const Event& e = c.trace.events[w];
    const int64_t from = std::max(c.trace.events[size_t(call)].end_ns(), c.index.stream_free_before(w));
    if (e.start_ns - from > kLatencyAfterReturnNs) out.push_back({from, e.start_ns});
  }
  if (out.empty()) return out;
  merge(out);
  std::vector<Interval> busy;
  for (const BusySpan& b : c.busy_spans()) busy.push_back({b.start, b.end});
  return subtract(out, busy);
}

/// Whether the thread of call `i` starts an operator in [from, to): work of the CPU's between
/// two synchronizes, which makes the earlier a wait of its own.
bool operator_between(const RuleContext& c, size_t i, int64_t from, int64_t to) {
  const Event& e = c.trace.events[i];
  for (const std::vector<size_t>& ops : c.ops_by_thread()) {
    if (ops.empty() || c.trace.events[ops.front()].pid != e.pid || c.trace.events[ops.front()].tid != e.tid) continue;
    const auto k = std::lower_bound(ops.begin(), ops.end(), from,
                                    [&](size_t a, int64_t t) { return c.trace.events[a].start_ns < t; });
    return k != ops.end() && c.trace.events[*k].start_ns < to;
  }
  return false;
}

}  // namespace

void host_sync(const RuleContext& c, RuleResult& out) {
  const auto& ev = c.trace.events;
  // The waits inside the basis: synchronizes and synchronous copies.
  std::vector<size_t> waits;
  for (size_t i : c.index.synchronizes())
    if (c.in_basis_at(ev[i].start_ns)) waits.push_back(i);
  // A copy to pageable host memory returns only once copied, after the stream's earlier work:
  // cudaMemcpyAsync's too ("Memcpy DtoH (Device -> Pageable)").
  auto waits_for_copy = [&](size_t call) {
    if (is_sync_copy_call(ev[call].name)) return true;
    if (!is_copy_call(ev[call].name)) return false;
    const auto work = c.index.work_of(call);
    // ... where the call did last until its copy ran (a call that returned before is no wait).
    return !work.empty() && is_copy_to_host(ev[work.front()].name) && is_pageable_copy(ev[work.front()].name) &&
           ev[call].end_ns() >= ev[work.front()].start_ns;
  };
  if (any_name(c.trace, is_copy_call)) {
    PerName<bool> copy_call;  // once per name: every runtime call is asked
    for (size_t i : c.index.api_calls())
      if (copy_call(ev[i].name, is_copy_call) && waits_for_copy(i) && c.in_basis_at(ev[i].start_ns)) waits.push_back(i);
  }
  if (waits.empty()) return;
  std::sort(waits.begin(), waits.end(), [&](size_t a, size_t b) { return ev[a].start_ns < ev[b].start_ns; });
  // What of a call is a wait for the GPU: all of a synchronize or of a synchronous copy; of a
  // copy to pageable memory, only until its stream's earlier work ended (the copy itself, and
  // the staging through a pinned buffer after it, are pageable_copy's: counted once, there).
  auto pageable_work = [&](size_t call) -> long {
    if (!is_copy_call(ev[call].name)) return -1;
    const auto work = c.index.work_of(call);
    return !work.empty() && is_pageable_copy(ev[work.front()].name) ? long(work.front()) : -1;
  };
  auto wait_end = [&](size_t call) {
    const long copy = pageable_work(call);
    return copy < 0 ? ev[call].end_ns() : ev[call].start_ns + wait_before_copy(c, call, size_t(copy));
  };
  auto wait_ns = [&](size_t call) { return wait_end(call) - ev[call].start_ns; };

  // Per step (one group without steps): the last GPU launch, and the waits.
  auto group_of = [&](int64_t t) { return c.step_ns.empty() ? 0L : c.index.step_at(t); };
  std::map<long, int64_t> last_launch;
  for (size_t i : c.index.launch_calls())
    if (c.in_basis_at(ev[i].start_ns)) {
      int64_t& t = last_launch.emplace(group_of(ev[i].start_ns), INT64_MIN).first->second;
      t = std::max(t, ev[i].start_ns);
    }
  std::map<long, std::vector<size_t>> by_step;
  for (size_t i : waits) by_step[group_of(ev[i].start_ns)].push_back(i);

  std::vector<size_t> counted;
  int64_t excused = 0, most_in_a_step = 0;
  for (auto& [step, calls] : by_step) {
    // The synchronizes after the step's last launch, however many back to back (an event's
    // synchronize, then the stream's: a public trace's 306 us one before a 2 us one read as a
    // wait to remove, the same program's other order as none). One followed by an operator
    // before the next (more than kSyncMinNs apart) let the CPU work in between: a wait of its
    // own, counted. A short gap of untraced time alone does not (a compiled MoE script's 15.5 ms
    // final cudaDeviceSynchronize, 94 us before a second one, read as a 2.58 ms gain); a longer
    // one is the CPU's work too, untraced Python (kFinalSyncUntracedNs).
    const auto l = last_launch.find(step);
    int64_t next_start = INT64_MAX;  // the start of the synchronize excused after it
    while (!calls.empty()) {
      const size_t last = calls.back();  // in start order
      const bool final_one = l == last_launch.end() || l->second < ev[last].end_ns();
      const int64_t apart = next_start == INT64_MAX ? 0 : next_start - ev[last].end_ns();
      const bool back_to_back = apart < threshold::kSyncMinNs ||
                                (apart < threshold::kFinalSyncUntracedNs &&
                                 !operator_between(c, last, ev[last].end_ns(), next_start));
      if (!final_one || !back_to_back || waits_for_copy(last)) break;
      next_start = ev[last].start_ns;
      calls.pop_back();
      ++excused;
    }
    most_in_a_step = std::max<int64_t>(most_in_a_step, int64_t(calls.size()));
    counted.insert(counted.end(), calls.begin(), calls.end());
  }
  // A wait for GPU work the trace does not show (half of it or more in such a stretch) is not
  // the wait's own cost: the GPU was busy with something unrecorded. Left out, and said.
  int64_t unseen_ns = 0, unseen_waits = 0;
  {
    const std::vector<Interval> unseen = unseen_gpu_work(c);
    if (!unseen.empty())
      counted.erase(std::remove_if(counted.begin(), counted.end(),
                                   [&](size_t i) {
                                     const int64_t in = length(clip(unseen, ev[i].start_ns, wait_end(i)));
                                     if (2 * in < wait_ns(i)) return false;
                                     unseen_ns += wait_ns(i);
                                     ++unseen_waits;
                                     return true;
                                   }),
                    counted.end());
  }
  const bool unseen_said = unseen_waits && double(unseen_ns) >= c.options.min_saved_share * double(c.basis_ns);
  const std::string unseen_text =
      unseen_waits ? pil::trace::counted(unseen_waits, "wait") + " (" + format_duration(unseen_ns) +
                         ") on GPU work the trace does not show (work that started more than " +
                         format_duration(kLatencyAfterReturnNs) +
                         " after its launch call returned, onto an idle stream: another stream's event, "
                         "another process, or work recorded nowhere" +
                         (c.launches().slow_latency() ? "; at this trace's slow launch latency, perhaps the latency"
                                                      : "") +
                         ")"
                   : "";
  // A pageable copy that ran at once waited for nothing.
  counted.erase(std::remove_if(counted.begin(), counted.end(), [&](size_t i) { return wait_ns(i) <= 0; }),
                counted.end());
  int64_t waited = 0, busy = 0, after_dtoh = 0;
  for (size_t i : counted) {
    waited += wait_ns(i);
    busy += c.gpu_busy_in(ev[i].start_ns, wait_end(i));
    bool to_host = false;
    after_what(c, i, to_host);
    after_dtoh += to_host;
  }
  // Where what is left finds nothing, the waits left out are why: the rule could not judge them.
  auto none_seen = [&] {
    if (unseen_said) out.unable("the host's waits were " + unseen_text + ": what they cost cannot be told");
  };
  if (counted.empty() || waited < threshold::kSyncMinNs) return none_seen();

  // The GPU's idle time inside the steps (or the window): without the waits the CPU launches
  // ahead, but the GPU's own work cannot get shorter, so no step gets faster by more than this.
  int64_t gpu_idle = 0;
  if (c.step_ns.empty()) {
    gpu_idle = std::max<int64_t>(0, c.basis_ns - c.gpu_busy_in(c.basis_start, c.basis_end));
  } else {
    for (size_t s : c.index.steps)
      gpu_idle += std::max<int64_t>(0, ev[s].dur_ns - c.gpu_busy_in(ev[s].start_ns, ev[s].end_ns()));
  }
  // What each wait can cost: its time with the GPU idle too (neither side working), and the GPU
  // work it held back (the GPU's busy time during it), which the host's next work could have
  // overlapped had it gone on, at most the GPU's idle time after it, up to the next wait or its
  // step's end. The CPU's wait while the GPU is busy costs nothing by itself (a public RTX A4000
  // trace: 18.5 ms waited, the GPU busy 99% of it, read as 18.5 ms to gain; its next 14.2 ms were
  // host work after a wait that held back 196 us).
  std::vector<size_t> in_order = counted;
  std::stable_sort(in_order.begin(), in_order.end(), [&](size_t a, size_t b) { return ev[a].start_ns < ev[b].start_ns; });
  int64_t held_back = 0;
  for (size_t k = 0; k < in_order.size(); ++k) {
    const size_t i = in_order[k];
    const int64_t from = wait_end(i);
    int64_t to = c.basis_end;
    if (const long step = c.index.step_at(ev[i].start_ns); step >= 0) to = ev[c.index.steps[size_t(step)]].end_ns();
    if (k + 1 < in_order.size()) to = std::min(to, ev[in_order[k + 1]].start_ns);
    const int64_t idle_after = to > from ? (to - from) - c.gpu_busy_in(from, to) : 0;
    const int64_t busy_during = c.gpu_busy_in(ev[i].start_ns, from);
    held_back += (wait_ns(i) - busy_during) + std::min(busy_during, idle_after);
  }
  const int64_t saved = std::min(held_back, gpu_idle);
  if (double(saved) < c.options.min_saved_share * double(c.basis_ns)) return none_seen();

  const size_t syncs = counted.size() - size_t(std::count_if(counted.begin(), counted.end(), [&](size_t i) {
                         return waits_for_copy(i);
                       }));
  const size_t sync_copies = counted.size() - syncs;
  std::string kinds;
  if (syncs)
    kinds += pil::trace::counted(int64_t(syncs), "synchronize") +
             (after_dtoh ? " (" + std::to_string(after_dtoh) + " after a copy to the host)" : "");
  if (sync_copies)
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(sync_copies) + " synchronous cop" +
             (sync_copies == 1 ? "y" : "ies");
  Symptom s;
  s.text = kinds +
           (c.step_ns.empty() ? " inside the window (its final synchronizes, after its last launch,"
                              : " inside the steps, at most " + std::to_string(most_in_a_step) +
                                    " in one step (each step's final synchronizes, after its last launch,") +
           " not counted): the CPU waited " + format_duration(waited) +
           ", the GPU busy " + percent_text(waited ? double(busy) / double(waited) : 0) + " of it" +
           (unseen_said ? "; not counted: " + unseen_text : "");
  s.figures = {{"waits", double(counted.size())},
               {"synchronizes", double(syncs)},
               {"sync_copies", double(sync_copies)},
               {"after_copy_to_host", double(after_dtoh)},
               {"most_in_a_step", double(most_in_a_step)},
               {"final_not_counted", double(excused)},
               {"waited_ns", double(waited)},
               {"gpu_busy_ns", double(busy)},
               {"gpu_idle_ns", double(gpu_idle)},
               {"held_back_ns", double(held_back)},
               {"unseen_waits", double(unseen_waits)},
               {"unseen_wait_ns", double(unseen_ns)}};
  std::vector<size_t> worst = counted;
  std::stable_sort(worst.begin(), worst.end(), [&](size_t a, size_t b) { return wait_ns(a) > wait_ns(b); });
  for (size_t k = 0; k < worst.size() && k < c.options.examples; ++k) {
    const Event& e = ev[worst[k]];
    // A pageable copy waited for its own stream's work; a synchronize, for what ran anywhere.
    const long copy = pageable_work(worst[k]);
    const WorkDuring w = work_during(c, e.start_ns, wait_end(worst[k]), copy);
    std::string detail =
        copy >= 0 ? "waited " + format_duration(wait_ns(worst[k])) + " of its " + format_duration(e.dur_ns) +
                        " for its stream's earlier work: " + format_duration(w.busy_ns) + " of GPU work on that stream ("
                  : "waited " + format_duration(e.dur_ns) + " for " +
                        format_duration(c.gpu_busy_in(e.start_ns, e.end_ns())) + " of GPU work (";
    detail += pil::trace::counted(w.items, "item");
    if (w.longest >= 0) {
      const std::string_view n = ev[size_t(w.longest)].name;
      detail += ", the longest " + std::string(n.substr(0, 60)) + (n.size() > 60 ? "..." : "");
    }
    detail += ")";
    bool to_host = false;
    const std::string after = after_what(c, worst[k], to_host);
    if (copy >= 0) detail += "; a copy to pageable memory, which the host waits for (the copy's own time is the pageable copies' finding)";
    else if (waits_for_copy(worst[k])) detail += "; a copy the host waits for";
    else if (!after.empty()) detail += "; " + after;
    s.examples.push_back(c.example(worst[k], detail));
  }
  s.saved_ns = saved;
  s.how = "what the waits cost (" + format_duration(held_back) +
          ": each one's time with the GPU idle too, and the GPU work it held back, at most the GPU's idle time "
          "after it, up to the next wait or its step's end), at most the GPU's idle time in the " +
          (c.step_ns.empty() ? "window" : "steps") + " (" +
          format_duration(gpu_idle) +
          "): without the waits the CPU goes on while that work runs, but the GPU's own work cannot get shorter";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
