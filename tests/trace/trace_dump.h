#pragma once
// Everything a trace holds, as text, so two reads of one file compare in one equality (the
// parallel reader's tests and the fuzzer).
#include <sstream>
#include <string>

#include "trace/trace.h"

namespace pil::test {

inline std::string dump(const trace::Trace& t) {
  using namespace pil::trace;
  std::ostringstream o;
  o << "base " << t.base_time_ns << " flows " << t.flows.starts << "/" << t.flows.finishes << "\n";
  for (const auto& d : t.device_names) o << "device " << d << "\n";
  for (const int32_t cc : t.device_compute) o << "compute " << cc << "\n";
  for (const int64_t m : t.device_memory) o << "memory " << m << "\n";
  for (const auto& [k, v] : t.lane_names) o << "lane " << k.first << "," << k.second << " " << v << "\n";
  for (const auto n : t.names->in_order()) o << "name " << n << "\n";
  for (const Event& e : t.events) {
    o << e.name << "|" << int(e.category) << "|" << e.start_ns << "|" << e.dur_ns << "|" << e.pid
      << "|" << e.tid << "|" << e.external_id << "|" << e.correlation;
    if (const KernelInfo* k = t.kernel_info(e))
      o << "|k " << k->grid[0] << "," << k->grid[1] << "," << k->grid[2] << " " << k->block[0]
        << " " << k->registers << " " << k->shared_memory << " " << k->est_occupancy_pct << " "
        << k->blocks_per_sm;
    if (const MemoryInfo* m = t.memory_info(e))
      o << "|m " << m->bytes << " " << m->total_allocated << " " << m->cuda << " " << m->device;
    if (const int64_t b = t.copy_bytes_of(e); b >= 0) o << "|bytes " << b;
    o << "\n";
  }
  return o.str();
}

}  // namespace pil::test
