#include "trace/report_json.h"

namespace pil::trace {

nlohmann::ordered_json operators_json(const KeyAverages& table) {
  auto rows = nlohmann::ordered_json::array();
  for (const auto& r : table.rows) {
    rows.push_back({{"name", r.name},
                    {"calls", r.calls},
                    {"self_cpu_ns", r.self_cpu_ns},
                    {"cpu_total_ns", r.cpu_total_ns},
                    {"self_device_ns", r.self_device_ns},
                    {"device_total_ns", r.device_total_ns},
                    {"device_work", r.device_work}});
    if (!r.input_shapes.empty()) rows.back()["input_shapes"] = r.input_shapes;
    if (table.has_flops) rows.back()["flops"] = r.flops;  // recorded with_flops: Python's count
    if (table.has_cpu_memory || table.has_device_memory) {
      auto& row = rows.back();
      row["cpu_mem_bytes"] = r.cpu_mem;
      row["self_cpu_mem_bytes"] = r.self_cpu_mem;
      row["device_mem_bytes"] = r.device_mem;
      row["self_device_mem_bytes"] = r.self_device_mem;
    }
  }
  return rows;
}

nlohmann::ordered_json memory_json(const std::vector<MemoryRow>& rows) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& r : rows)
    out.push_back({{"device", device_label(r)},
                   {"allocations", r.allocations},
                   {"frees", r.frees},
                   {"allocated_bytes", r.allocated_bytes},
                   {"peak_growth_bytes", r.peak_growth},
                   {"end_growth_bytes", r.end_growth},
                   {"peak_total_bytes", r.peak_total},
                   {"peak_at_ns", r.peak_at_ns},
                   {"peak_range", r.peak_range},
                   {"peak_op", r.peak_op}});
  return out;
}

}  // namespace pil::trace
