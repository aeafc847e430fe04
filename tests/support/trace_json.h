#pragma once
// Reads a Chrome trace with an independent JSON parser (nlohmann), so the checks of our traces
// do not rest on the project's own parser.
#include <cstdint>
#include <string>
#include <vector>

namespace pil::test {

struct TraceSlice {
  std::string name, cat;
  int64_t pid = 0, tid = 0;
  double ts = 0, dur = 0;  // microseconds, as written
  int64_t external_id = -1;  // args["External id"]: joins GPU work to the operator that launched it
  bool contains(const TraceSlice& other) const {
    return pid == other.pid && tid == other.tid && other.ts >= ts && other.ts + other.dur <= ts + dur;
  }
};

/// The complete ("ph": "X") slices of a trace file. Fails the current test (and returns an
/// empty list) when the file is missing or is not valid JSON with a traceEvents array.
std::vector<TraceSlice> read_trace_slices(const std::string& path);

}  // namespace pil::test
