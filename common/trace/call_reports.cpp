#include "trace/reports.h"

#include "trace/report_helpers.h"
#include "trace/first_by_id.h"
#include "trace/intervals.h"
#include "trace/name_ids.h"
#include "trace/nesting.h"
#include "trace/text_table.h"
#include <algorithm>
#include <array>
#include <unordered_set>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <future>
#include <iterator>
#include <limits>
#include <map>
#include <queue>
#include <regex>
#include <set>
#include <system_error>
#include <tuple>
#include <unordered_map>

// The reports that follow calls: the chain from a named range down to its GPU work, two runs
// side by side, memory per range, the profiler's own work.

namespace pil::trace {
using namespace report_helpers;

// --- Chain -----------------------------------------------------------------------------------

OtherThreadsWork launched_by_other_threads(const TraceIndex& index, size_t range) {
  const Trace& t = index.trace();
  const Event& r = t.events[range];
  OtherThreadsWork out;
  for (size_t c : index.launch_calls()) {
    const Event& call = t.events[c];
    if (call.pid != r.pid || call.tid == r.tid || call.start_ns < r.start_ns || call.start_ns >= r.end_ns()) continue;
    for (size_t w : index.work_of(c)) ++out.items, out.gpu_ns += t.events[w].dur_ns;
  }
  return out;
}

std::vector<ChainLine> chain_report(const TraceIndex& index, const std::string& range,
                                    size_t instance) {
  const Trace& t = index.trace();
  std::vector<size_t> found;
  for (size_t i = 0; i < t.events.size(); ++i)
    if (!t.events[i].on_device() && t.events[i].name == range) found.push_back(i);
  std::sort(found.begin(), found.end(),
            [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; });
  if (instance >= found.size()) return {};
  const Event& root = t.events[found[instance]];

  // The root whatever it is (a step, a range, an operator, a Python function recorded with
  // with_stack or with_modules), and the operators, ranges and calls of its thread inside it.
  std::vector<size_t> inner = {found[instance]};
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (i == found[instance] || !is_cpu_slice(e.category) || e.pid != root.pid || e.tid != root.tid)
      continue;
    if (e.start_ns >= root.start_ns && e.end_ns() <= root.end_ns()) inner.push_back(i);
  }
  order_for_nesting(t.events, inner);
  std::vector<ChainLine> lines;
  nest(t.events, inner, [&](size_t i, long, int depth) {
    const Event& e = t.events[i];
    lines.push_back({depth, i, false, e.start_ns - root.start_ns, 0});
    for (size_t w : index.work_of(i)) {
      const Event& g = t.events[w];
      const bool queued = index.stream_free_before(w) > e.end_ns();
      const int64_t delay = g.start_ns - e.end_ns();
      lines.push_back({depth + 1, w, true, g.start_ns - root.start_ns, delay, queued,
                       !queued && waited_after_return(delay), !queued && ran_in_call(e, g)});
    }
    return true;
  });
  return lines;
}

// --- Diff ------------------------------------------------------------------------------------

const char* to_string(Change c) {
  switch (c) {
    case Change::Added: return "added";
    case Change::Removed: return "removed";
    case Change::Faster: return "faster";
    case Change::Slower: return "slower";
    case Change::Same: return "same";
  }
  return "?";
}

std::string kernel_spelling(std::string name) {
  // torch 2.x's kernels take std::array where older builds took at::detail::Array; compilers
  // write an unsigned long template argument as 2ul or 2, and "> >" or ">>".
  static const std::regex array("at::detail::Array<"), suffix("([0-9])(?:ull|ul|u|ll|l)\\b",
                                                                 std::regex::icase),
      space(" +>");
  if (name.find('<') == std::string::npos) return name;
  name = std::regex_replace(name, array, "std::array<");
  name = std::regex_replace(name, suffix, "$1");
  return std::regex_replace(name, space, ">");
}

int64_t written_step_ns(const Trace& t) {
  if (t.events.empty()) return 0;
  int64_t step = 1000;
  for (const Event& e : t.events) {
    while (step > 1 && (e.start_ns % step != 0 || e.dur_ns % step != 0)) step /= 10;
    if (step == 1) break;
  }
  return step;
}

namespace {

/// The table diff compares: every event's but the GPU work launched before recording began (an
/// earlier, unrecorded step's, still running: a slice of step K holds step K-1's tail so), whose
/// items and time it counts apart.
KeyAverages diff_table(const TraceIndex& index, int64_t& left_out, int64_t& left_out_ns) {
  const Trace& t = index.trace();
  std::vector<char> before(t.events.size(), 0);
  for (size_t w : index.device_work())
    if (index.launched_before_recording(w)) {
      before[w] = 1;
      ++left_out;
      left_out_ns += t.events[w].dur_ns;
    }
  if (left_out == 0) return key_averages(t);
  std::vector<Event> kept;
  kept.reserve(t.events.size() - size_t(left_out));
  for (size_t i = 0; i < t.events.size(); ++i)
    if (!before[i]) kept.push_back(t.events[i]);
  return key_averages(kept, t.memory);
}

}  // namespace

DiffReport diff_report(const TraceIndex& a, const TraceIndex& b, double tolerance) {
  DiffReport d;
  const KeyAverages ka = diff_table(a, d.before_recording_a, d.before_recording_ns_a),
                    kb = diff_table(b, d.before_recording_b, d.before_recording_ns_b);
  d.cpu_a = ka.self_cpu_total_ns;
  d.cpu_b = kb.self_cpu_total_ns;
  d.device_a = ka.self_device_total_ns;
  d.device_b = kb.self_device_total_ns;
  // Kernels counted as the table counts them: those launched before recording began left out.
  auto kernels = [](const TraceIndex& x) {
    int64_t n = 0;
    for (size_t w : x.device_work())
      n += x.trace().events[w].category == Category::Kernel && !x.launched_before_recording(w);
    return n;
  };
  d.kernels_a = kernels(a);
  d.kernels_b = kernels(b);

  // GPU work by its name's spelling (kernel_spelling), CPU rows by name; a row shows A's name.
  std::map<std::string, DiffRow> rows;
  auto add = [&](const KeyAverages& k, bool is_a) {
    for (const auto& r : k.rows) {
      if (is_step_row(r.name)) continue;  // step numbers differ between runs
      // GPU rows apart from CPU rows of the same name; rows one trace spells alike add up.
      DiffRow& row = rows[r.device_work ? "\x01" + kernel_spelling(r.name) : r.name];
      if (row.name.empty()) row.name = r.name;
      else if (!is_a && row.name != r.name && row.calls_a > 0 && row.calls_b == 0) ++d.respelled;
      row.device = r.device_work;
      const int64_t time = r.device_work ? r.device_total_ns : r.cpu_total_ns;
      (is_a ? row.calls_a : row.calls_b) += r.calls;
      (is_a ? row.time_a : row.time_b) += time;
    }
  };
  add(ka, true);
  add(kb, false);
  // A change within what the clocks can tell is none: each call's time may be off by up to one
  // step of the coarser trace's clock (1 us in a trace written in whole microseconds, where 2 us
  // against 3 us is no change), errors that mostly cancel over many calls: the square root of
  // the calls times the step (1000 calls of 2 us against 3 us is a change).
  d.clock_step_ns = std::max(written_step_ns(a.trace()), written_step_ns(b.trace()));
  for (auto& [name, row] : rows) {
    const double delta = double(row.time_b - row.time_a);
    const bool within_clock =
        std::abs(delta) <= std::sqrt(double(std::max<int64_t>({row.calls_a, row.calls_b, 1}))) * double(d.clock_step_ns);
    if (row.calls_a == 0)
      row.change = Change::Added;
    else if (row.calls_b == 0)
      row.change = Change::Removed;
    else if (!within_clock && double(row.time_b) > double(row.time_a) * (1 + tolerance))
      row.change = Change::Slower;
    else if (!within_clock && double(row.time_b) < double(row.time_a) * (1 - tolerance))
      row.change = Change::Faster;
    else
      row.change = Change::Same;
    d.rows.push_back(row);
  }
  std::stable_sort(d.rows.begin(), d.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::llabs(x.time_b - x.time_a) > std::llabs(y.time_b - y.time_a);
  });
  return d;
}

// --- Memory ----------------------------------------------------------------------------------

std::map<std::pair<int, int32_t>, std::vector<size_t>> memory_events_by_device(const Trace& t) {
  std::map<std::pair<int, int32_t>, std::vector<size_t>> by_device;
  if (t.memory.empty()) return by_device;  // no memory events: nothing to look for
  for (size_t i = 0; i < t.events.size(); ++i)
    if (const MemoryInfo* m = t.memory_info(t.events[i]))
      by_device[{m->cuda ? 1 : m->device_type, m->device_type == 0 ? -1 : m->device}].push_back(i);
  for (auto& [key, idx] : by_device)
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return t.events[a].start_ns < t.events[b].start_ns;
    });
  return by_device;
}

std::vector<MemoryRow> memory_report(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::vector<MemoryRow> rows;
  for (const auto& [key, idx] : memory_events_by_device(t)) {
    MemoryRow r;
    r.cuda = key.first == 1;
    r.device_type = int8_t(key.first);
    r.device = key.second;
    r.first_event = idx.front();
    int64_t in_use = 0;
    size_t peak_event = idx.front();
    // The allocator's own total as of the latest event that gives one. An event with a total of 0
    // is of an allocator that keeps none (torch's MapAllocator: the shared memory a DataLoader's
    // worker processes hand their batches over in, allocated and freed with total 0): its memory
    // is in use all the same, but its 0 is no total ("allocator total then 0 B"). Only a free of
    // all the total said before it leaves a total of 0.
    int64_t total = -1, total_at_peak = -1;
    auto gives_total = [&](const MemoryInfo& m) {
      return m.total_allocated > 0 || (m.total_allocated == 0 && m.bytes < 0 && -m.bytes == total);
    };
    for (size_t i : idx) {
      const MemoryInfo& m = *t.memory_info(t.events[i]);
      (m.bytes >= 0 ? r.allocations : r.frees) += 1;
      if (m.bytes > 0) r.allocated_bytes += m.bytes;
      if (gives_total(m)) total = m.total_allocated;
      in_use += m.bytes;
      if (in_use > r.peak_growth) {
        r.peak_growth = in_use;
        peak_event = i;
        total_at_peak = total;
      }
    }
    r.end_growth = in_use;
    if (r.peak_growth > 0) {  // memory rose above the start: say when and where
      const Event& p = t.events[peak_event];
      r.peak_at_ns = p.start_ns;
      r.peak_total = total_at_peak;
      // The innermost range and operator open at that moment, by the table's rule: of the
      // slices holding the time, the latest to start, then the shortest. Ranges on the allocating thread first; else on any thread of the
      // process (LibTorch runs a GPU backward on its own thread, outside the user's ranges).
      auto innermost = [&](Category c, bool same_thread) {
        const Event* best = nullptr;
        for (const auto& e : t.events) {
          if (e.category != c || e.pid != p.pid || (same_thread && e.tid != p.tid) ||
              e.start_ns > p.start_ns || e.end_ns() < p.start_ns ||
              (c == Category::UserAnnotation && is_step_name(e.name)))
            continue;
          if (!best || e.start_ns > best->start_ns ||
              (e.start_ns == best->start_ns && e.dur_ns < best->dur_ns))
            best = &e;
        }
        return best ? std::string(best->name) : std::string();
      };
      r.peak_range = innermost(Category::UserAnnotation, true);
      if (r.peak_range.empty()) r.peak_range = innermost(Category::UserAnnotation, false);
      r.peak_op = innermost(Category::CpuOp, true);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// --- A device used, its work not recorded ----------------------------------------------------

bool cuda_side_only(const TraceIndex& index) {
  if (index.device_work().empty() && index.api_calls().empty()) return false;
  return std::none_of(index.trace().events.begin(), index.trace().events.end(), [](const Event& e) {
    return e.category == Category::CpuOp || e.category == Category::UserAnnotation;
  });
}

std::string DeviceUseWithoutWork::evidence() const {
  std::string s;
  if (!device.empty()) s = (allocations > 0 ? counted(allocations, "allocation") : counted(frees, "free")) + " on " + device;
  if (!op.empty())
    s += (s.empty() ? "" : "; ") + op + " called " + op_times();
  if (!autograd_thread.empty())
    s += (s.empty() ? "" : "; ") + counted(autograd_ops, "operator") + " on autograd's device thread " +
         autograd_thread;
  return s;
}

std::string DeviceUseWithoutWork::op_times() const {
  return op_calls == 1 ? std::string("once") : grouped(op_calls) + " times";
}

std::string DeviceUseWithoutWork::activity() const {
  switch (device_type) {
    case 1: return "the profiler's activities without ProfilerActivity.CUDA";  // CUDA's, HIP's (6) counted as 1
    case 12: return "the profiler's activities without ProfilerActivity.XPU";
    case 13: return "torch.profiler has no activity for MPS: its work is never in the trace";
    case 15: return "the profiler's activities without ProfilerActivity.HPU";
    case 19: return "the profiler's activities without ProfilerActivity.MTIA";
    case 20: return "the profiler's activities without ProfilerActivity.PrivateUse1";
    default: return "the profiler's activities without the device's";
  }
}

bool is_gpu_only_operator(std::string_view name) {
  if (name == "aten::cudnn_is_acceptable") return false;  // asks, runs nothing
  for (std::string_view prefix : {"aten::cudnn_", "aten::_cudnn_", "aten::miopen_", "aten::_miopen_"})
    if (name.substr(0, prefix.size()) == prefix) return true;
  return is_triton_kernel_range(name);
}

bool is_triton_kernel_range(std::string_view name) {
  // Inductor's launcher records each Triton kernel's launch under the kernel's name, with
  // "kernel_backend": "triton" (torch/_inductor/runtime/triton_heuristics.py); its CPU code is
  // C++ (cpp_fused_*). XAheli/torch-profiler's compiled MoE on an H200, traced without the CUDA
  // activity: triton_per_fused_cumsum_0 and the like, read as a CPU run.
  return name.substr(0, 7) == "triton_";
}

DeviceUseWithoutWork device_use_without_work(const TraceIndex& index) {
  DeviceUseWithoutWork use;
  if (!index.device_work().empty() || !index.api_calls().empty()) return use;
  const Trace& t = index.trace();
  for (const MemoryRow& r : index.memory())
    if (r.device_type != 0) {
      use.device = device_label(r);
      use.device_type = r.device_type;
      use.allocations = r.allocations;
      use.frees = r.frees;
      use.first_memory = r.first_event;
      break;
    }
  std::map<std::string_view, std::pair<int64_t, size_t>> gpu_only;  // name -> (calls, first call)
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.category != Category::CpuOp || !is_gpu_only_operator(e.name)) continue;
    auto& [calls, first] = gpu_only.try_emplace(e.name, 0, i).first->second;
    ++calls;
    if (e.start_ns < t.events[first].start_ns) first = i;
  }
  for (const auto& [name, c] : gpu_only)
    if (c.first > use.op_calls) use.op = std::string(name), use.op_calls = c.first, use.first_op = c.second;
  // Operators on the autograd engine's thread for a device (Kineto names it "thread 11026
  // (pt_autograd_0)"): a backward ran on a device (a public RTX A1000 VAE trace, recorded without
  // the CUDA activity).
  std::map<std::pair<int64_t, int64_t>, std::string> device_threads;
  for (const auto& [lane, name] : t.lane_names)
    if (const size_t at = name.find("pt_autograd_"); at != std::string::npos && lane.second != -1 &&
                                                      (at == 0 || name[at - 1] == '('))
      device_threads[lane] = name.substr(at, name.find(')', at) - at);
  if (!device_threads.empty())
    for (size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      const auto it = e.category == Category::CpuOp ? device_threads.find({e.pid, e.tid}) : device_threads.end();
      if (it == device_threads.end() || (!use.autograd_thread.empty() && use.autograd_thread != it->second)) continue;
      if (use.autograd_thread.empty() || e.start_ns < t.events[use.first_autograd_op].start_ns) use.first_autograd_op = i;
      use.autograd_thread = it->second;
      ++use.autograd_ops;
    }
  // cuDNN's or MIOpen's: a CUDA or ROCm GPU. Triton's kernels run on Intel's XPU too, and autograd
  // has a device thread for MPS as well: the device type is not said for them.
  if (use.device.empty() && !use.op.empty() && !is_triton_kernel_range(use.op)) use.device_type = 1;
  return use;
}

// --- The profiler's own work ------------------------------------------------------------------

bool is_profiler_overhead(const Event& e) {
  if (e.category != Category::Other || e.dur_ns <= 0) return false;
  // libkineto's names for CUPTI's own overhead kinds (CUpti_ActivityOverheadKind: buffer flush,
  // buffer request, UVM activity set-up; CUDA's own costs among them are is_cuda_overhead_record's).
  for (std::string_view name : {"Activity Buffer Request", "Buffer Flush", "UVM Activity Init"})
    if (e.name == name) return true;
  // Names a user's could have; "Unrecognized" for a kind the Kineto that wrote the trace did not
  // know (before 2025 it named CUDA 12.4's lazy-loading kinds so).
  for (std::string_view name : {"Instrumentation", "Resource", "Unknown", "Unrecognized"})
    if (e.name == name) return e.pid == -1;
  return false;
}

const char* cuda_overhead_kind(const Event& e) {
  if (e.category != Category::Other || e.dur_ns <= 0) return nullptr;
  // libkineto's names for the kinds of CUPTI's overhead records that are CUDA's own work.
  if (e.name == "Runtime Triggered Module Loading" || e.name == "Lazy Function Loading") return "lazy loading";
  if (e.name == "Driver Compiler") return "the driver compiling";
  if (e.name == "Command Buffer Full") return "the launch queue full";
  return nullptr;
}

std::vector<CudaOverhead> cuda_overhead(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::vector<CudaOverhead> out;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    const char* kind = cuda_overhead_kind(e);
    if (!kind) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const CudaOverhead& o) { return o.name == e.name; });
    if (it == out.end()) it = out.insert(out.end(), CudaOverhead{e.name, kind, 0, 0, i});
    ++it->records;
    it->total_ns += e.dur_ns;
    if (e.dur_ns > t.events[it->longest].dur_ns) it->longest = i;
  }
  // The call (any thread) that paid for each name's longest record (the records carry no thread):
  // the shortest CUDA call that lasts through it, a synchronize or a blocking copy aside (they
  // wait for the GPU, and may span another thread's launch).
  for (CudaOverhead& o : out) {
    const Event& r = t.events[o.longest];
    for (size_t c : index.api_calls()) {
      const Event& call = t.events[c];
      if (!waits_for_gpu(call) && call.start_ns <= r.start_ns && call.end_ns() >= r.end_ns() &&
          (o.in_call == CudaOverhead::npos || call.dur_ns < t.events[o.in_call].dur_ns))
        o.in_call = c;
    }
  }
  // Each kind's names together, in the kinds' order: lazy loading, the driver compiling, the queue.
  auto rank = [](const char* kind) {
    return std::string_view(kind) == "lazy loading" ? 0 : std::string_view(kind) == "the driver compiling" ? 1 : 2;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const CudaOverhead& a, const CudaOverhead& b) { return rank(a.kind) < rank(b.kind); });
  return out;
}

std::string cuda_overhead_text(const TraceIndex& index, const std::vector<CudaOverhead>& overhead) {
  if (overhead.empty()) return "";
  const Trace& t = index.trace();
  auto meaning = [](std::string_view kind) -> const char* {
    if (kind == "lazy loading")
      return "a kernel's code loaded at its first launch, CUDA's default, CUDA_MODULE_LOADING=LAZY; once per "
             "kernel and process, so a warm-up before the recorded steps pays it";
    if (kind == "the driver compiling")
      return "PTX compiled for this GPU as it loads (no code for its architecture in the binary), once per kernel "
             "and process";
    return "a launch waited for room in the GPU's command buffer: the host far ahead of the GPU";
  };
  std::string s = "CUDA's own work in CUPTI's overhead records (the program's, with or without a profiler): ";
  for (size_t i = 0; i < overhead.size(); ++i) {
    const CudaOverhead& o = overhead[i];
    const bool first_of_kind = i == 0 || std::string_view(overhead[i - 1].kind) != o.kind;
    if (first_of_kind) s += std::string(i ? "; " : "") + o.kind + " (" + meaning(o.kind) + "): ";
    else s += ", ";
    const Event& r = t.events[o.longest];
    s += counted(o.records, std::string(o.name) + " record") + ", " + format_duration(o.total_ns);
    std::string longest = o.records > 1 ? "the longest " + format_duration(r.dur_ns) : std::string();
    if (o.in_call != CudaOverhead::npos) {
      const Event& call = t.events[o.in_call];
      std::string of;  // a launch's kernel
      if (const long k = index.first_kernel_of(o.in_call); k >= 0) {
        const std::string_view name = t.events[size_t(k)].name;
        of = " of " + std::string(name.substr(0, 60)) + (name.size() > 60 ? "..." : "");
      }
      const long step = index.step_at(call.start_ns);
      longest += (longest.empty() ? "" : ", ") + std::string("inside a ") + format_duration(call.dur_ns) + " " +
                 std::string(call.name) + of +
                 (step >= 0 ? " in " + std::string(t.events[index.steps[size_t(step)]].name) : "");
    }
    if (!longest.empty()) s += " (" + longest + ")";
  }
  return s;
}

std::vector<ProfilerOverhead> profiler_overhead(const TraceIndex& index) {
  const Trace& t = index.trace();
  std::vector<ProfilerOverhead> out;
  for (size_t i = 0; i < t.events.size(); ++i)
    if (is_profiler_overhead(t.events[i])) {
      ProfilerOverhead o;
      o.event = i;
      out.push_back(o);
    }
  if (out.empty()) return out;
  std::stable_sort(out.begin(), out.end(), [&](const ProfilerOverhead& a, const ProfilerOverhead& b) {
    return t.events[a.event].start_ns < t.events[b.event].start_ns;
  });
  int64_t longest_record = 0;
  for (ProfilerOverhead& o : out) {
    o.step = index.step_at(t.events[o.event].start_ns);
    longest_record = std::max(longest_record, t.events[o.event].dur_ns);
  }
  // Each call against the records that can overlap it: those starting from the call's start less
  // the longest record to the call's end (records in start order: a search, not a scan).
  for (size_t c : index.api_calls()) {
    const Event& call = t.events[c];
    const bool waits = waits_for_gpu(call);  // whatever the profiler does
    auto first = std::lower_bound(out.begin(), out.end(), call.start_ns - longest_record,
                                  [&](const ProfilerOverhead& o, int64_t ts) { return t.events[o.event].start_ns < ts; });
    for (auto it = first; it != out.end() && t.events[it->event].start_ns < call.end_ns(); ++it) {
      const Event& e = t.events[it->event];
      if (call.end_ns() <= e.start_ns || call.start_ns >= e.end_ns()) continue;
      if (it->longest_call == ProfilerOverhead::npos || call.dur_ns > t.events[it->longest_call].dur_ns)
        it->longest_call = c;
      if (call.start_ns <= e.start_ns && call.end_ns() >= e.end_ns() && !waits &&
          (it->spanning_call == ProfilerOverhead::npos || call.dur_ns > t.events[it->spanning_call].dur_ns))
        it->spanning_call = c;
    }
  }
  for (ProfilerOverhead& o : out)
    if (o.spanning_call != ProfilerOverhead::npos) o.spanning_step = index.step_at(t.events[o.spanning_call].start_ns);
  // Where no call spans a record: a thread with no CUDA call during it whose next one begins just
  // after it ends was most likely held by it (the record ends as that thread's call begins).
  if (std::all_of(out.begin(), out.end(), [](const ProfilerOverhead& o) { return o.spanning_call != ProfilerOverhead::npos; }))
    return out;
  // Per thread: its calls by start, and the latest end among the first k of them (whether one
  // that started before a time still ran at another, in a search).
  struct ThreadCalls {
    std::vector<size_t> calls;
    std::vector<int64_t> reach;
  };
  std::map<std::pair<int64_t, int64_t>, ThreadCalls> calls_of;
  std::vector<size_t> by_start;
  for (size_t c : index.api_calls()) {
    calls_of[{t.events[c].pid, t.events[c].tid}].calls.push_back(c);
    by_start.push_back(c);
  }
  auto earlier = [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; };
  for (auto& [thread, tc] : calls_of) {
    std::stable_sort(tc.calls.begin(), tc.calls.end(), earlier);
    int64_t reach = std::numeric_limits<int64_t>::min();
    for (size_t c : tc.calls) tc.reach.push_back(reach = std::max(reach, t.events[c].end_ns()));
  }
  std::stable_sort(by_start.begin(), by_start.end(), earlier);
  auto starts_before = [&](size_t c, int64_t ts) { return t.events[c].start_ns < ts; };
  std::map<std::pair<int64_t, int64_t>, std::vector<ProfilerOverhead*>> resumed_on;  // by thread
  for (ProfilerOverhead& o : out) {
    if (o.spanning_call != ProfilerOverhead::npos) continue;
    const Event& e = t.events[o.event];
    const int64_t until = e.end_ns() + std::min(kOverheadResumeNs, e.dur_ns / 10);
    for (auto it = std::lower_bound(by_start.begin(), by_start.end(), e.end_ns(), starts_before);
         it != by_start.end() && t.events[*it].start_ns <= until; ++it) {
      const Event& call = t.events[*it];
      // None of that thread's calls during the record: those starting before its end all ended
      // before it began.
      const ThreadCalls& mine = calls_of.at({call.pid, call.tid});
      const size_t before = size_t(std::lower_bound(mine.calls.begin(), mine.calls.end(), e.end_ns(), starts_before) -
                                   mine.calls.begin());
      if (before > 0 && mine.reach[before - 1] > e.start_ns) continue;
      o.resumed_call = *it;
      o.resumed_step = index.step_at(call.start_ns);
      resumed_on[{call.pid, call.tid}].push_back(&o);
      break;
    }
  }
  if (resumed_on.empty()) return out;
  // The operator or range each held thread was inside, innermost (one pass over the events,
  // looking only at the held threads', and at the records that start inside each: the records
  // are in start order).
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& x = t.events[i];
    if (!is_torch_scope(x.category) || is_step(x)) continue;
    const auto held = resumed_on.find({x.pid, x.tid});
    if (held == resumed_on.end()) continue;
    const std::vector<ProfilerOverhead*>& records = held->second;
    for (auto it = std::lower_bound(records.begin(), records.end(), x.start_ns,
                                    [&](const ProfilerOverhead* o, int64_t ts) { return t.events[o->event].start_ns < ts; });
         it != records.end() && t.events[(*it)->event].start_ns <= x.end_ns(); ++it) {
      ProfilerOverhead* o = *it;
      if (x.end_ns() < t.events[o->event].end_ns()) continue;
      if (o->held_op == ProfilerOverhead::npos || x.dur_ns < t.events[o->held_op].dur_ns) o->held_op = i;
    }
  }
  return out;
}

std::string profiler_overhead_text(const TraceIndex& index, const std::vector<ProfilerOverhead>& overhead) {
  if (overhead.empty()) return "";
  const Trace& t = index.trace();
  auto where = [&](long step) {
    if (step >= 0) return "in " + std::string(t.events[index.steps[size_t(step)]].name);
    return std::string(index.steps.empty() ? "" : "outside the steps");  // no steps: nothing to be outside
  };
  auto then = [](const std::string& text, const char* before) { return text.empty() ? text : before + text; };
  std::string s = "the profiler's own work (CUPTI's overhead records, on a lane of their own; not the program's): ";
  // The three longest, in time order (a list in time order alone hid three records of 5 ms behind
  // three of microseconds).
  std::vector<size_t> shown(overhead.size());
  for (size_t i = 0; i < shown.size(); ++i) shown[i] = i;
  std::stable_sort(shown.begin(), shown.end(), [&](size_t a, size_t b) {
    return t.events[overhead[a].event].dur_ns > t.events[overhead[b].event].dur_ns;
  });
  if (shown.size() > 3) shown.resize(3);
  std::sort(shown.begin(), shown.end());
  for (size_t k = 0; k < shown.size(); ++k) {
    const ProfilerOverhead& o = overhead[shown[k]];
    const Event& e = t.events[o.event];
    s += std::string(k ? ", " : "") + std::string(e.name) + " " + format_duration(e.dur_ns) + then(where(o.step), " ");
  }
  if (overhead.size() > 3) s += " and " + std::to_string(overhead.size() - 3) + " shorter";
  // The longest record a thread most likely waited for: a call spans it, or began just after it.
  auto waited = overhead.end();
  for (auto it = overhead.begin(); it != overhead.end(); ++it)
    if (it->waiting_call() != ProfilerOverhead::npos &&
        (waited == overhead.end() || t.events[it->event].dur_ns > t.events[waited->event].dur_ns))
      waited = it;
  if (waited != overhead.end() && waited->spanning_call != ProfilerOverhead::npos) {
    const Event& call = t.events[waited->spanning_call];
    return s + "; " + std::string(call.name) + " (" + format_duration(call.dur_ns) + then(where(waited->spanning_step), ", ") +
           ") spans " + std::string(t.events[waited->event].name) + " " + format_duration(t.events[waited->event].dur_ns) +
           ": its thread may have waited for the profiler" +
           (waited->spanning_step >= 0 ? ", and that step's time may hold the profiler's" : "");
  }
  if (waited != overhead.end()) {
    const Event &call = t.events[waited->resumed_call], &e = t.events[waited->event];
    std::string held;
    if (waited->held_op != ProfilerOverhead::npos) {
      const Event& op = t.events[waited->held_op];
      held = ", inside " + std::string(op.name) + " (" + format_duration(op.dur_ns) + ")";
    }
    const std::string in = where(waited->resumed_step);
    return s + "; " + std::string(call.name) + (in.empty() ? "" : " (" + in + ")") + " began " +
           format_duration(call.start_ns - e.end_ns()) + " after " + std::string(e.name) + " " +
           format_duration(e.dur_ns) + " ended, on a thread that made no CUDA call during it" + held +
           ": that thread most likely waited for the profiler" +
           (held.empty() ? std::string() : ", and " + std::string(t.events[waited->held_op].name) + "'s time holds the profiler's");
  }
  int64_t longest = -1;
  for (const ProfilerOverhead& o : overhead)
    if (o.longest_call != ProfilerOverhead::npos) longest = std::max(longest, t.events[o.longest_call].dur_ns);
  const bool one = overhead.size() == 1;
  return s + (longest < 0 ? std::string("; no CUDA call ran during ") + (one ? "it" : "them") +
                                ": the trace shows no thread waiting for the profiler"
                          : std::string("; no CUDA call lasts through ") + (one ? "it" : "any") +
                                ", synchronizes and blocking copies aside (the longest call during " + (one ? "it" : "them") + " took " +
                                format_duration(longest) + "): the trace shows no thread waiting for the profiler");
}

}  // namespace pil::trace
