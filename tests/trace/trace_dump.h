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
  for (const DeviceInfo& d : t.devices) o << "compute " << d.compute_capability() << "\n";
  for (const auto& d : t.devices)
    o << "device " << d.id << " " << d.name << " " << d.total_global_mem << " " << d.num_sms << " "
      << d.compute_major << "." << d.compute_minor << " " << d.warp_size << "\n";
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
    if (e.input_shapes < t.input_shapes.size()) o << "|s" << e.input_shapes << " " << t.input_shapes[e.input_shapes];
    if (const OpInputs* in = t.inputs_of(e)) {
      o << "|i " << in->dims_text;
      for (const InputArg& a : in->args) {
        o << " <" << a.type << (a.is_list ? " list" : "") << ":";
        for (int64_t d : a.dims) o << " " << d;
        for (const auto& l : a.list) {
          o << " (";
          for (int64_t d : l) o << " " << d;
          o << ")";
        }
        if (in->has_concrete) o << " =" << a.concrete;
        o << ">";
      }
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace pil::test
