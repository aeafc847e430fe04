#pragma once
/// \file
/// Reports as JSON, for the tool's --json and the lessons' summary files (one shape for both).
#include <nlohmann/json.hpp>

#include <vector>

#include "trace/key_averages.h"
#include "trace/reports.h"

namespace pil::trace {

/// The operator table's rows as a JSON array: name, calls, self/total CPU and device time (ns).
nlohmann::ordered_json operators_json(const KeyAverages& table);

/// The memory rows as a JSON array: device, allocations, frees, the peak and where it came in.
nlohmann::ordered_json memory_json(const std::vector<MemoryRow>& rows);

}  // namespace pil::trace
