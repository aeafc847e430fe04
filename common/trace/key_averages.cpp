#include "trace/key_averages.h"

#include "trace/first_by_id.h"
#include "trace/name_ids.h"
#include "trace/nesting.h"
#include "trace/python_flops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <map>
#include <numeric>

namespace pil::trace {
namespace {

std::string percent(int64_t part, int64_t total) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", total > 0 ? 100.0 * double(part) / double(total) : 0.0);
  return buf;
}

/// A table's CPU rows by what groups a slice into them: its table name, and its input shapes
/// where the table is grouped by them (rows then carry their shapes). For the passes that add
/// to the rows of a finished table, slice by slice.
class CpuRows {
 public:
  explicit CpuRows(const KeyAverages& table) {
    for (size_t r = 0; r < table.rows.size(); ++r) {
      if (table.rows[r].device_work) continue;
      grouped_ = grouped_ || !table.rows[r].input_shapes.empty();
      row_.emplace(std::make_pair(std::string_view(table.rows[r].name), std::string_view(table.rows[r].input_shapes)), r);
    }
  }
  /// The row of CPU slice `e`, or -1.
  long of(const Trace& t, const Event& e) const {
    const std::string_view shapes =
        grouped_ && e.input_shapes < t.input_shapes.size() ? t.input_shapes[e.input_shapes] : std::string_view();
    const auto it = row_.find({table_name(e.name), shapes});
    return it == row_.end() ? -1 : long(it->second);
  }

 private:
  std::map<std::pair<std::string_view, std::string_view>, size_t> row_;
  bool grouped_ = false;
};

}  // namespace

KeyAverages key_averages(const Trace& trace, bool group_by_input_shape) {
  KeyAverages k = key_averages(trace.events, trace.memory, group_by_input_shape ? &trace.input_shapes : nullptr);
  if (!trace.with_flops) return k;
  // Each counted call's FLOPs to its row: torch's own count where the trace was made in process,
  // else the same count from the call's recorded inputs.
  const CpuRows rows(k);
  auto add = [&](const Event& e, uint64_t flops) {
    if (const long r = flops && e.category == Category::CpuOp ? rows.of(trace, e) : -1; r >= 0) {
      k.rows[size_t(r)].flops += flops;
      k.has_flops = true;
    }
  };
  if (!trace.counted_flops.empty()) {
    for (const Trace::CountedFlops& c : trace.counted_flops)
      if (c.event < trace.events.size()) add(trace.events[c.event], c.flops);
    return k;
  }
  for (const Event& e : trace.events) {
    if (e.category != Category::CpuOp || !counts_python_flops(e.name)) continue;
    const OpInputs* in = trace.inputs_of(e);
    add(e, in ? python_flops(e.name, *in) : 0);
  }
  return k;
}

void python_float_times(KeyAverages& table, const Trace& trace) {
  // The profiler's start: the span Kineto writes over the whole trace ("PyTorch Profiler (0)").
  // The autograd profiler's own format (prof.events().export_chrome_trace) has none: it writes
  // each slice's start in µs from the profiler's start already, and its duration as Python's
  // own end minus start, so from 0 the doubles are the same (an average exactly halfway printed
  // 6.183us for 6.182us).
  const auto span = std::find_if(trace.events.begin(), trace.events.end(), is_profiler_span);
  if (span == trace.events.end() && trace.autograd_profiler_slices == 0) return;
  const int64_t start = span == trace.events.end() ? 0 : span->start_ns;
  const CpuRows rows(table);
  for (KeyAverage& r : table.rows)
    if (!r.device_work) r.python_cpu_total_us = 0;
  std::vector<size_t> slices;
  for (size_t i = 0; i < trace.events.size(); ++i)
    if (is_cpu_slice(trace.events[i].category) &&
        !std::binary_search(table.dropped.begin(), table.dropped.end(), i))
      slices.push_back(i);
  // Python sorts its events by (start, -end) before it groups them; equal ones keep trace order.
  std::stable_sort(slices.begin(), slices.end(), [&](size_t a, size_t b) {
    const Event &x = trace.events[a], &y = trace.events[b];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns() > y.end_ns();
  });
  for (size_t i : slices) {
    const Event& e = trace.events[i];
    const long r = rows.of(trace, e);
    if (r < 0) continue;
    const double from = double(e.start_ns - start) / 1000, to = double(e.end_ns() - start) / 1000;
    table.rows[size_t(r)].python_cpu_total_us += to - from;
  }
}

const KeyAverage* KeyAverages::find(std::string_view name) const {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

KeyAverages key_averages(const std::vector<Event>& events, const std::vector<MemoryInfo>& memory,
                         const std::vector<std::string_view>* input_shapes) {
  const size_t n = events.size();
  auto memory_of = [&](const Event& e) -> const MemoryInfo* {
    return e.category == Category::Memory && e.memory_info < memory.size() ? &memory[e.memory_info]
                                                                           : nullptr;
  };

  // 1. The CPU slices and memory events of each thread, and the GPU work, each in event order.
  //    Counted first, so that every list is allocated once at its size (a trace of a few GB
  //    has millions of slices: a list grown by doubling copies itself into fresh pages).
  using Lane = std::pair<int64_t, int64_t>;  // (pid, tid)
  struct Thread {
    std::vector<size_t> idx;
    bool nested_order = true;  // idx is in nesting order already (traces mostly come in time order)
  };
  std::map<Lane, Thread> threads;
  std::vector<size_t> device;  // GPU work, in event order
  size_t slices = 0;
  uint64_t max_id = 0;  // the largest external id of an operator or range
  // GPU work that links to itself (links_to_itself: its External id is its correlation id) goes
  // to the operator or range that encloses its launch call on the launch's thread, which is what
  // the External id names in the traces that write it.
  bool self_linked = false;
  uint64_t max_correlation = 0;  // the largest correlation id of a launch call
  {
    std::map<Lane, size_t> counts;
    size_t n_device = 0;
    Lane last_key{0, 0};
    size_t* last = nullptr;  // most events follow one of the same thread
    for (const Event& e : events) {
      if (is_device_work(e.category)) {
        ++n_device;
        self_linked = self_linked || links_to_itself(e);
        continue;
      }
      if (!is_cpu_slice(e.category) && !memory_of(e)) continue;
      if (is_torch_scope(e.category)) max_id = std::max(max_id, e.external_id);
      if (is_launch_call(e.category)) max_correlation = std::max(max_correlation, e.correlation);
      slices += is_cpu_slice(e.category);
      if (!last || last_key.first != e.pid || last_key.second != e.tid) {
        last_key = {e.pid, e.tid};
        last = &counts[last_key];
      }
      ++*last;
    }
    for (const auto& [key, count] : counts) threads[key].idx.reserve(count);
    device.reserve(n_device);
    Thread* list = nullptr;
    for (size_t i = 0; i < n; ++i) {
      const Event& e = events[i];
      if (is_device_work(e.category)) {
        device.push_back(i);
        continue;
      }
      if (!is_cpu_slice(e.category) && !memory_of(e)) continue;
      if (!list || last_key.first != e.pid || last_key.second != e.tid) {
        last_key = {e.pid, e.tid};
        list = &threads[last_key];
      }
      if (list->nested_order && !list->idx.empty() && nests_before(e, events[list->idx.back()]))
        list->nested_order = false;
      list->idx.push_back(i);
    }
  }
  if (slices >= size_t(std::numeric_limits<int32_t>::max()))
    throw std::length_error("key_averages: more than 2 billion CPU slices");

  // The rows: grouped by name (all steps under one "ProfilerStep*", as Python does), and by
  // input shapes when asked; put in order of each group's first appearance in time at the end,
  // and where two first appear together, of their first events in the trace.
  // An event's name to its group's id: by the name's address (names are interned) to the id
  // of its own text, then to the id of the name it is grouped under (steps under one).
  NameIds names, groups;
  std::vector<uint32_t> group_of_name;
  auto group_of = [&](std::string_view name) {
    const uint32_t id = names(name);
    if (id >= group_of_name.size()) group_of_name.push_back(groups(table_name(name)));
    return group_of_name[id];
  };
  std::vector<uint32_t> row_of_id;
  std::map<std::pair<uint32_t, std::string_view>, uint32_t> row_of_shape;
  // Per row: its earliest start, and its first event in the trace (the order rows are made in
  // when events are read in trace order, which breaks ties of the earliest start).
  std::vector<std::pair<int64_t, size_t>> first_seen;
  std::vector<KeyAverage> rows;
  auto shapes_of = [&](const Event& e) -> std::string_view {
    return input_shapes && e.input_shapes < input_shapes->size() ? (*input_shapes)[e.input_shapes]
                                                                 : std::string_view();
  };
  // The row of event i (made on first use), its call counted.
  auto row_for = [&](size_t i, bool on_device) -> uint32_t {
    const Event& e = events[i];
    const uint32_t id = group_of(e.name);
    uint32_t* slot = nullptr;
    if (input_shapes) {
      slot = &row_of_shape.try_emplace({id, shapes_of(e)}, uint32_t(rows.size())).first->second;
    } else {
      if (id >= row_of_id.size()) row_of_id.push_back(uint32_t(rows.size()));
      slot = &row_of_id[id];
    }
    if (*slot == rows.size()) {
      rows.push_back({});
      rows.back().name = std::string(table_name(e.name));
      if (input_shapes) rows.back().input_shapes = std::string(shapes_of(e));
      rows.back().device_work = on_device;
      first_seen.push_back({e.start_ns, i});
    }
    KeyAverage& r = rows[*slot];
    first_seen[*slot].first = std::min(first_seen[*slot].first, e.start_ns);
    if (i < first_seen[*slot].second) {  // GPU work or not, as the row's first event in the trace
      first_seen[*slot].second = i;
      r.device_work = on_device;
    }
    r.calls += 1;
    return *slot;
  };

  // 2. Nest CPU slices per thread. Sorted by start, longer first on ties, so a parent always
  //    comes before its children; a stack holds the slices still open. Each slice gets a slot,
  //    its place in nesting order, and goes to its row at once: its time to the row's CPU
  //    total, its time less its direct children's to the row's self CPU (each child takes its
  //    time off its parent's row). What the GPU work adds needs every slot first (step 3):
  //    the per-slice figures kept for it are by slot (the CPU slices only, not every event).
  std::vector<int32_t> parent;     // slot -> the parent's slot, or -1
  std::vector<uint32_t> row_of;    // slot -> its row
  parent.reserve(slices);
  row_of.reserve(slices);
  // slot -> its event, kept where there are memory events (step 4 needs each slice's span).
  const bool has_memory = !memory.empty();
  std::vector<size_t> event_of_slot;
  if (has_memory) event_of_slot.reserve(slices);
  FirstById owner(max_id, n);      // external id -> the first slot with it (an operator or range)
  // For self-linked GPU work: a launch call's correlation id -> the slot of the innermost
  // operator or range around the call (built only when some GPU work needs it).
  FirstById launcher(self_linked ? max_correlation : 0, self_linked ? n : 0);
  std::vector<size_t> allocations;  // the memory events, met while nesting (step 4 places them)
  std::vector<int32_t> slot_at_depth;  // the open slices' slots, outermost first
  std::vector<size_t> event_at_depth;  // and their events
  // Python's EventList drops a slice whose parent has its name and no other child (an operator
  // calling another overload of itself: aten::sum in aten::sum) and gives its parent its
  // children, its time, and the GPU work and memory it had (_remove_dup_nodes). The candidates
  // (a slice named as its parent) are found while nesting; the rule is applied after, when each
  // parent's children are known.
  struct Dup {
    int32_t slot, parent;
    int64_t dur, children_dur = 0;  // its time, and its direct children's
    size_t event;
  };
  std::vector<Dup> dups;
  std::vector<int32_t> dup_of;  // slot -> its index in dups, or -1 (kept from the first one on)
  for (auto& [key, thread] : threads) {
    std::vector<size_t>& idx = thread.idx;
    if (!thread.nested_order)
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t a, size_t b) { return nests_before(events[a], events[b]); });
    nest(events, idx, [&](size_t i, long up, int depth) {
      const Event& e = events[i];
      const int32_t up_slot = up >= 0 ? slot_at_depth[size_t(depth) - 1] : -1;
      if (e.category == Category::Memory) {  // an instant, never a parent
        allocations.push_back(i);
        return false;
      }
      const int32_t slot = int32_t(parent.size());
      const uint32_t row = row_for(i, false);
      parent.push_back(up_slot);
      row_of.push_back(row);
      if (has_memory) event_of_slot.push_back(i);
      rows[row].self_cpu_ns += e.dur_ns;
      rows[row].cpu_total_ns += e.dur_ns;
      if (up_slot >= 0) rows[row_of[size_t(up_slot)]].self_cpu_ns -= e.dur_ns;
      if (is_torch_scope(e.category)) owner.add(e.external_id, long(slot));
      if (self_linked && is_launch_call(e.category)) {
        for (int d = depth - 1; d >= 0; --d)
          if (is_torch_scope(events[event_at_depth[size_t(d)]].category)) {
            launcher.add(e.correlation, long(slot_at_depth[size_t(d)]));
            break;
          }
      }
      if (!dup_of.empty()) {
        dup_of.push_back(-1);
        if (up_slot >= 0 && dup_of[size_t(up_slot)] >= 0) dups[size_t(dup_of[size_t(up_slot)])].children_dur += e.dur_ns;
      }
      if (up_slot >= 0) {
        const std::string_view up_name = events[event_at_depth[size_t(depth) - 1]].name;
        if (up_name.data() == e.name.data() || up_name == e.name) {
          if (dup_of.empty()) dup_of.assign(size_t(slot) + 1, -1);
          dup_of[size_t(slot)] = int32_t(dups.size());
          dups.push_back({slot, up_slot, e.dur_ns, 0, i});
        }
      }
      if (slot_at_depth.size() <= size_t(depth)) {
        slot_at_depth.resize(size_t(depth) + 1);
        event_at_depth.resize(size_t(depth) + 1);
      }
      slot_at_depth[size_t(depth)] = slot;
      event_at_depth[size_t(depth)] = i;
      return true;
    });
    std::vector<size_t>().swap(idx);  // done with this thread's list
  }
  const size_t slots = parent.size();

  // The dropped slices: each merged into its nearest kept ancestor (merged_into), its call, time
  // and self time moved there, in slot order (parents first, so a chain of them merges into its
  // top). Its GPU work and memory follow in steps 3 and 4 through eff().
  std::vector<int32_t> merged_into;  // slot -> the kept slot it became part of, or -1
  std::vector<size_t> dropped;       // their events
  if (!dups.empty()) {
    std::vector<int32_t> kids(slots, 0);
    for (size_t s = 0; s < slots; ++s)
      if (parent[s] >= 0) ++kids[size_t(parent[s])];
    merged_into.assign(slots, -1);
    for (const Dup& d : dups) {
      const int32_t top = merged_into[size_t(d.parent)] >= 0 ? merged_into[size_t(d.parent)] : d.parent;
      if (kids[size_t(top)] != 1) continue;
      merged_into[size_t(d.slot)] = top;
      kids[size_t(top)] = kids[size_t(d.slot)];
      dropped.push_back(d.event);
      KeyAverage &gone = rows[row_of[size_t(d.slot)]], &kept = rows[row_of[size_t(top)]];
      const int64_t self = d.dur - d.children_dur;
      gone.calls -= 1;
      gone.cpu_total_ns -= d.dur;
      gone.self_cpu_ns -= self;
      kept.self_cpu_ns += self;
    }
  }
  auto merged = [&](size_t s) { return !merged_into.empty() && merged_into[s] >= 0; };
  auto eff = [&](long s) { return s >= 0 && merged(size_t(s)) ? long(merged_into[size_t(s)]) : s; };

  // 3. GPU work: to its own row (a kernel's name), and to the operator or range that launched
  //    it (external id, or the slice around its launch call where the trace wrote the work's
  //    correlation id there) as that slice's self device time; then, children before parents (slots
  //    in reverse), each slice's device total (its own and its children's) to its row and up to
  //    its parent.
  {
    std::vector<int64_t> dev(slots, 0);
    for (size_t i : device) {
      const Event& e = events[i];
      KeyAverage& r = rows[row_for(i, true)];
      r.self_device_ns += e.dur_ns;
      r.device_total_ns += e.dur_ns;
      if (const long op = eff(links_to_itself(e) ? launcher[e.correlation] : owner[e.external_id]); op >= 0)
        dev[size_t(op)] += e.dur_ns;
    }
    for (size_t s = 0; s < slots; ++s) rows[row_of[s]].self_device_ns += dev[s];
    for (size_t s = slots; s-- > 0;) {
      if (!merged(s)) rows[row_of[s]].device_total_ns += dev[s];
      if (parent[s] >= 0) dev[size_t(parent[s])] += dev[s];
    }
  }

  // 4. Memory, by Python's rule (torch.autograd.profiler's _parse_kineto_results): a slice's
  //    memory is every allocation and free whose time is in its span, ends included, on any
  //    thread (Python matches them by time alone); its self memory is that less its children's
  //    (EventList's self_cpu_memory_usage, after _remove_dup_nodes). Memory no slice's span holds
  //    is the "[memory]" row, one call per event, as Python's table lists it. Prefix sums over
  //    the events in time order give each slice's sum in two searches. Python's thread is any of
  //    the one process it profiled: here, any of the slice's own process.
  bool host_memory = false, device_memory = false;
  if (!allocations.empty()) {
    // Per process (a trace is one process's; one merged from several keeps each to its own).
    struct Process {
      std::vector<size_t> order;  // its memory events, in time order
      std::vector<int64_t> at, host_sum, dev_sum;
      std::vector<int32_t> held;  // +1 where a span begins, -1 past where it ends
    };
    std::map<int64_t, Process> by_pid;
    for (size_t a : allocations) by_pid[events[a].pid].order.push_back(a);
    for (auto& [pid, p] : by_pid) {
      std::stable_sort(p.order.begin(), p.order.end(),
                       [&](size_t x, size_t y) { return events[x].start_ns < events[y].start_ns; });
      const size_t m = p.order.size();
      p.at.resize(m);
      p.host_sum.assign(m + 1, 0);
      p.dev_sum.assign(m + 1, 0);
      p.held.assign(m + 1, 0);
      for (size_t k = 0; k < m; ++k) {
        const MemoryInfo& info = *memory_of(events[p.order[k]]);
        const bool on_device = info.device_type != 0;  // a GPU's, or another device's (torch's device memory)
        (on_device ? device_memory : host_memory) = true;
        p.at[k] = events[p.order[k]].start_ns;
        p.host_sum[k + 1] = p.host_sum[k] + (on_device ? 0 : info.bytes);
        p.dev_sum[k + 1] = p.dev_sum[k] + (on_device ? info.bytes : 0);
      }
    }
    std::vector<int64_t> host_mem(slots, 0), dev_mem(slots, 0);
    for (size_t slot = 0; slot < slots; ++slot) {
      const Event& e = events[event_of_slot[slot]];
      const auto it = by_pid.find(e.pid);
      if (it == by_pid.end()) continue;
      Process& p = it->second;
      const size_t lo = size_t(std::lower_bound(p.at.begin(), p.at.end(), e.start_ns) - p.at.begin());
      const size_t hi = size_t(std::upper_bound(p.at.begin(), p.at.end(), e.end_ns()) - p.at.begin());
      if (lo >= hi) continue;
      host_mem[slot] = p.host_sum[hi] - p.host_sum[lo];
      dev_mem[slot] = p.dev_sum[hi] - p.dev_sum[lo];
      ++p.held[lo];
      --p.held[hi];
    }
    for (size_t slot = 0; slot < slots; ++slot) {
      if (merged(slot)) continue;  // its parent's span holds the same memory
      KeyAverage& r = rows[row_of[slot]];
      r.cpu_mem += host_mem[slot];
      r.self_cpu_mem += host_mem[slot];
      r.device_mem += dev_mem[slot];
      r.self_device_mem += dev_mem[slot];
      if (const long up = eff(parent[slot]); up >= 0) {
        KeyAverage& parent_row = rows[row_of[size_t(up)]];
        parent_row.self_cpu_mem -= host_mem[slot];
        parent_row.self_device_mem -= dev_mem[slot];
      }
    }
    for (const auto& [pid, p] : by_pid) {
      int32_t open = 0;
      for (size_t k = 0; k < p.order.size(); ++k) {
        open += p.held[k];
        if (open > 0) continue;
        const MemoryInfo& info = *memory_of(events[p.order[k]]);
        KeyAverage& r = rows[row_for(p.order[k], false)];
        (info.device_type != 0 ? r.device_mem : r.cpu_mem) += info.bytes;
        (info.device_type != 0 ? r.self_device_mem : r.self_cpu_mem) += info.bytes;
      }
    }
  }

  // 5. The rows in order of first appearance.
  std::vector<size_t> order_of_rows(rows.size());
  for (size_t k = 0; k < rows.size(); ++k) order_of_rows[k] = k;
  std::sort(order_of_rows.begin(), order_of_rows.end(),
            [&](size_t a, size_t b) { return first_seen[a] < first_seen[b]; });
  KeyAverages out;
  std::sort(dropped.begin(), dropped.end());
  out.dropped = std::move(dropped);
  out.has_cpu_memory = host_memory;
  out.has_device_memory = device_memory;
  for (size_t k : order_of_rows) {
    const KeyAverage& r = rows[k];
    if (r.calls == 0) continue;  // every call of it dropped into its parent (grouped by shapes)
    if (r.device_work)
      out.self_device_total_ns += r.self_device_ns;
    else
      out.self_cpu_total_ns += r.self_cpu_ns;
    out.rows.push_back(std::move(rows[k]));
  }
  return out;
}

namespace {
struct SortName {
  const char* name;
  SortKey key;
};
constexpr SortName kSortNames[] = {
    {"cpu_time_total", SortKey::CpuTotal},       {"self_cpu_time_total", SortKey::SelfCpu},
    {"device_time_total", SortKey::DeviceTotal}, {"self_device_time_total", SortKey::SelfDevice},
    {"cuda_time_total", SortKey::DeviceTotal},   {"self_cuda_time_total", SortKey::SelfDevice},
    {"xpu_time_total", SortKey::DeviceTotal},    {"self_xpu_time_total", SortKey::SelfDevice},
    // The memory columns' keys (torch's memory recipe sorts by self_cpu_memory_usage); Python maps
    // "cuda" and "xpu" in a key to "device", as here.
    {"cpu_memory_usage", SortKey::CpuMemory},    {"self_cpu_memory_usage", SortKey::SelfCpuMemory},
    {"device_memory_usage", SortKey::DeviceMemory}, {"self_device_memory_usage", SortKey::SelfDeviceMemory},
    {"cuda_memory_usage", SortKey::DeviceMemory}, {"self_cuda_memory_usage", SortKey::SelfDeviceMemory},
    {"xpu_memory_usage", SortKey::DeviceMemory},  {"self_xpu_memory_usage", SortKey::SelfDeviceMemory},
    {"count", SortKey::Count},
};

// A row's place under key `k`, larger first. Python sorts by its own floating-point CPU total,
// which a table of a trace Python wrote holds (python_float_times): two rows of the same whole ns
// can differ there (20.0 against 19.999999999999886 µs, both printed 20.000us, came in Python's
// order only by the doubles). One unit per key: the CPU total in µs, the double where known.
double sort_value(const KeyAverage& r, SortKey k) {
  switch (k) {
    case SortKey::CpuTotal:
      return r.python_cpu_total_us >= 0 ? r.python_cpu_total_us : double(r.cpu_total_ns) / 1000;
    case SortKey::SelfCpu: return double(r.self_cpu_ns);
    case SortKey::DeviceTotal: return double(r.device_total_ns);
    case SortKey::SelfDevice: return double(r.self_device_ns);
    case SortKey::CpuMemory: return double(r.cpu_mem);
    case SortKey::SelfCpuMemory: return double(r.self_cpu_mem);
    case SortKey::DeviceMemory: return double(r.device_mem);
    case SortKey::SelfDeviceMemory: return double(r.self_device_mem);
    case SortKey::Count: return double(r.calls);
    case SortKey::Unsorted: return 0;
  }
  return 0;
}
}  // namespace

std::optional<SortKey> parse_sort_key(std::string_view name) {
  for (const auto& s : kSortNames)
    if (name == s.name) return s.key;
  return std::nullopt;
}

std::string sort_key_names() {
  std::string out;
  for (const auto& s : kSortNames) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

std::string format_time_ns(int64_t ns) {
  const double us = double(ns) / 1e3;
  char buf[48];
  if (us >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3)
    std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

// Python's _format_time, on its float microseconds.
static std::string python_time_us(double us) {
  char buf[48];
  if (us >= 1000.0 * 1000.0)
    std::snprintf(buf, sizeof buf, "%.3fs", us / (1000.0 * 1000.0));
  else if (us >= 1000.0)
    std::snprintf(buf, sizeof buf, "%.3fms", us / 1000.0);
  else
    std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

std::string format_average_ns(int64_t total_ns, int64_t count) {
  if (count <= 0) count = 1;
  // The unit by the value, as format_time_ns picks it; then the exact quotient rounded to the
  // printed digit (1 ns in us, 1 us in ms, 1 ms in s), halves up.
  const double us = double(total_ns) / double(count) / 1e3;
  const char* unit = us >= 1e6 ? "s" : us >= 1e3 ? "ms" : "us";
  const __int128 step = us >= 1e6 ? 1'000'000 : us >= 1e3 ? 1'000 : 1;
  const bool negative = total_ns < 0;
  const __int128 total = negative ? -__int128(total_ns) : __int128(total_ns);
  const __int128 digits = (2 * total + __int128(count) * step) / (2 * __int128(count) * step);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%lld.%03lld%s", negative ? "-" : "",
                static_cast<long long>(digits / 1000), static_cast<long long>(digits % 1000), unit);
  return buf;
}

std::string format_bytes(int64_t bytes) {
  constexpr double kKB = 1024.0, kMB = kKB * 1024, kGB = kMB * 1024;
  const double b = double(bytes), a = b < 0 ? -b : b;
  char buf[48];
  if (a >= kGB)
    std::snprintf(buf, sizeof buf, "%.2f GB", b / kGB);
  else if (a >= kMB)
    std::snprintf(buf, sizeof buf, "%.2f MB", b / kMB);
  else if (a >= kKB)
    std::snprintf(buf, sizeof buf, "%.2f KB", b / kKB);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

std::string format_table(const KeyAverages& table, const TableOptions& options) {
  constexpr size_t kColumn = 12, kSpacing = 2, kMaxName = 55;
  std::vector<const KeyAverage*> rows;
  for (const auto& r : table.rows) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [&](const KeyAverage* a, const KeyAverage* b) {
    return sort_value(*a, options.sort) > sort_value(*b, options.sort);
  });
  // The name and shapes columns are as wide as the longest of every row, shown or not: Python's
  // _build_table measures them before its row_limit (a 15-row table's names column is 22 wide
  // where the longest name shown would make it 19).
  size_t name_width = 4;
  for (const auto* r : rows) name_width = std::max(name_width, r->name.size() + 4);
  name_width = std::min(name_width, kMaxName);
  size_t shapes_width = 0;
  for (const auto* r : rows)
    if (!r->input_shapes.empty()) shapes_width = std::max(shapes_width, r->input_shapes.size() + 4);
  shapes_width = std::min<size_t>(shapes_width, 80);
  if (options.row_limit > 0 && rows.size() > size_t(options.row_limit))
    rows.resize(size_t(options.row_limit));

  const bool device = table.has_device_time();
  const std::string& d = options.device_label;
  std::vector<std::string> headers = {"Name",        "Self CPU %", "Self CPU",
                                      "CPU total %", "CPU total",  "CPU time avg"};
  if (device)
    for (auto h : {"Self " + d, "Self " + d + " %", d + " total", d + " time avg"})
      headers.push_back(h);
  const bool host_mem = table.has_cpu_memory || table.has_device_memory;
  const bool device_mem = table.has_device_memory;
  if (host_mem) headers.insert(headers.end(), {"CPU Mem", "Self CPU Mem"});
  if (device_mem) headers.insert(headers.end(), {d + " Mem", "Self " + d + " Mem"});
  headers.push_back("# of Calls");
  // Grouped by input shapes: one more column, as wide as the longest (at most 80, as Python).
  if (shapes_width) headers.push_back("Input Shapes");
  // Recorded with_flops: Python's "Total <unit>" column, its unit from the least FLOPs of any
  // row (all rows, not only those shown), a power of 1000 from FLOPs to PFLOPs.
  double flops_scale = 1;
  if (table.has_flops) {
    uint64_t least = 0;
    for (const auto& r : table.rows)
      if (r.flops > 0 && (least == 0 || r.flops < least)) least = r.flops;
    static const char* kUnits[] = {"FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"};
    const double log = std::max(0.0, std::min(std::log10(double(least)) / 3, 5.0));
    flops_scale = std::pow(10.0, std::floor(log) * -3.0);
    headers.push_back(std::string("Total ") + kUnits[int(log)]);
  }

  // Right-aligned cells as Python prints them; only names are cut ("..."), a longer header
  // ("CUDA time avg") overflows its column as it does there.
  // A name of kMaxName - 3 characters or more is cut there and ends in "...", as Python's
  // _build_table does (whatever the column's width).
  auto cell = [&](std::string s, size_t width, bool trim) {
    if (trim && s.size() >= kMaxName - 3) s = s.substr(0, kMaxName - 3) + "...";
    const size_t pad = s.size() < width ? width - s.size() : 0;
    return std::string(pad, ' ') + s + std::string(kSpacing, ' ');
  };
  const size_t shapes_at = shapes_width ? headers.size() - (table.has_flops ? 2 : 1) : 0;
  auto width = [&](size_t i) { return i == 0 ? name_width : shapes_width && i == shapes_at ? shapes_width : kColumn; };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t i = 0; i < cells.size(); ++i)
      out += cell(cells[i], width(i), i == 0);
    return out + "\n";
  };
  std::string sep;
  for (size_t i = 0; i < headers.size(); ++i)
    sep += std::string(width(i), '-') + std::string(kSpacing, ' ');
  sep += "\n";

  std::string out = sep + line(headers) + sep;
  for (const auto* r : rows) {
    const int64_t calls = std::max<int64_t>(r->calls, 1);
    std::vector<std::string> c = {r->name,
                                  percent(r->self_cpu_ns, table.self_cpu_total_ns),
                                  format_time_ns(r->self_cpu_ns),
                                  percent(r->cpu_total_ns, table.self_cpu_total_ns),
                                  format_time_ns(r->cpu_total_ns),
                                  // averages rounded, not truncated, as Python prints them
                                  r->python_cpu_total_us >= 0
                                      ? python_time_us(1.0 * r->python_cpu_total_us / double(calls))
                                      : format_average_ns(r->cpu_total_ns, calls)};
    if (device) {
      c.push_back(format_time_ns(r->self_device_ns));
      c.push_back(percent(r->self_device_ns, table.self_device_total_ns));
      c.push_back(format_time_ns(r->device_total_ns));
      c.push_back(format_average_ns(r->device_total_ns, calls));
    }
    if (host_mem) {
      c.push_back(format_bytes(r->cpu_mem));
      c.push_back(format_bytes(r->self_cpu_mem));
    }
    if (device_mem) {
      c.push_back(format_bytes(r->device_mem));
      c.push_back(format_bytes(r->self_device_mem));
    }
    c.push_back(std::to_string(r->calls));
    if (shapes_width) c.push_back(r->input_shapes.substr(0, shapes_width));
    if (table.has_flops) {
      char buf[48] = "--";
      if (r->flops > 0) std::snprintf(buf, sizeof buf, "%8.3f", double(r->flops) * flops_scale);
      c.push_back(buf);
    }
    out += line(c);
  }
  out += sep;
  out += "Self CPU time total: " + format_time_ns(table.self_cpu_total_ns) + "\n";
  if (device) out += "Self " + d + " time total: " + format_time_ns(table.self_device_total_ns) + "\n";
  return out;
}

}  // namespace pil::trace
