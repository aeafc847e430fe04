#pragma once
/// \file
/// Reports as JSON, for the tool's --json and the lessons' summary files (one shape for both).
#include <nlohmann/json.hpp>

#include "trace/key_averages.h"

namespace pil::trace {

/// The operator table's rows as a JSON array: name, calls, self/total CPU and device time (ns).
nlohmann::ordered_json operators_json(const KeyAverages& table);

}  // namespace pil::trace
