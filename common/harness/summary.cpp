#include "harness/summary.h"

#include <nlohmann/json.hpp>

#include "trace/report_json.h"

namespace pil {

std::string to_json(const RunSummary& s) {
  nlohmann::ordered_json j;
  j["lesson"] = s.lesson;
  j["variant"] = s.variant;
  j["libtorch_version"] = s.libtorch_version;
  j["device"] = {{"type", s.device}, {"name", s.device_name}};
  j["dtype"] = s.dtype;
  j["size"] = s.size;
  j["seed"] = s.seed;
  j["flags"] = nlohmann::ordered_json::object();
  for (const auto& f : s.flags) {
    if (f.word.empty()) j["flags"][f.name] = f.value;
    else j["flags"][f.name] = f.word;
  }
  if (s.world_size > 0)
    j["distributed"] = {{"rank", s.rank}, {"world_size", s.world_size}, {"backend", s.backend}};
  j["schedule"] = {{"wait", s.wait},
                   {"warmup", s.warmup},
                   {"active", s.active},
                   {"warmup_calls", s.warmup_calls}};
  j["verification"] = {{"result", s.result},
                       {"max_abs_err", s.max_abs_err},
                       {"max_rel_err", s.max_rel_err},
                       {"mismatches", s.mismatches}};
  j["files"] = {{"trace", s.trace_path}, {"table", s.table_path}};
  j["steps"] = nlohmann::ordered_json::array();
  for (const auto& st : s.steps) j["steps"].push_back({{"name", st.name}, {"cpu_ns", st.cpu_ns}});
  j["totals"] = {{"self_cpu_ns", s.operators.self_cpu_total_ns},
                 {"self_device_ns", s.operators.self_device_total_ns}};
  j["operators"] = trace::operators_json(s.operators);
  j["memory"] = trace::memory_json(s.memory);
  if (s.cuda_peak_allocated >= 0) j["cuda_peak_allocated_bytes"] = s.cuda_peak_allocated;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";  // a path not UTF-8: replaced
}

}  // namespace pil
