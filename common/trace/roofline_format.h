#pragma once
/// \file
/// The roofline report as text (`pil-trace ops --roofline`, and advise's evidence lines) and as
/// JSON (`--json`).
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

/// One line of evidence: "aten::mm [512, 512]x[512, 512] float: 4.0% of the CPU peak (12.1 of
/// 300 GFLOP/s)"; "aten::add [...] float: 38% of the A100 80GB SXM4's memory bandwidth (775 of
/// 2039 GB/s)"; "aten::mm [...] float: 12.1 GFLOP/s on the CPU, no peak to compare with";
/// "aten::matmul [...] float: counted in aten::mm".
std::string roofline_evidence(const RooflineRow& row);

}  // namespace pil::trace
