#include "support/trace_json.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace pil::test {

std::vector<TraceSlice> read_trace_slices(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot open trace " << path;
    return {};
  }
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    ADD_FAILURE() << path << " is not valid JSON";
    return {};
  }
  if (!doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    ADD_FAILURE() << path << " has no traceEvents array";
    return {};
  }
  std::vector<TraceSlice> slices;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    TraceSlice s;
    s.name = e.value("name", "");
    s.cat = e.value("cat", "");
    auto number = [](const nlohmann::json& v) -> int64_t {
      return v.is_number() ? v.get<int64_t>() : 0;  // Kineto writes pid/tid as numbers
    };
    s.pid = e.contains("pid") ? number(e["pid"]) : 0;
    s.tid = e.contains("tid") ? number(e["tid"]) : 0;
    s.ts = e.value("ts", 0.0);
    s.dur = e.value("dur", 0.0);
    if (e.contains("args") && e["args"].contains("External id")) s.external_id = number(e["args"]["External id"]);
    slices.push_back(std::move(s));
  }
  return slices;
}

}  // namespace pil::test
