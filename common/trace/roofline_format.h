#pragma once
/// \file
/// The roofline report as text (`pil-trace ops --roofline`) and as JSON (`--json`).
#include <nlohmann/json.hpp>

#include <string>

#include "trace/roofline.h"

namespace pil::trace {

/// A table of the rows (the first `row_limit`), then a line per GPU on its peaks and one on the
/// CPU's.
std::string format_roofline(const RooflineReport& report, const RooflineOptions& options, int row_limit);

/// Every row with its figures, the GPUs' peak lines, the CPU's peaks as given.
nlohmann::ordered_json roofline_json(const RooflineReport& report, const RooflineOptions& options);

/// Numbers with an SI prefix, three significant figures: "268M", "3.15k", "989T", "12".
std::string si(double value);

}  // namespace pil::trace
