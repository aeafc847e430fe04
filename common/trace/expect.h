#pragma once
/// \file
/// A learner's prediction checked against a trace: "kernels=5", "calls:aten::mm=3",
/// "peak-range=attn". Each answer is yes or no with the figure measured, so an exercise ("guess
/// first, then look") can be checked by the tool rather than by eye.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trace/reports.h"

namespace pil::trace {

/// One prediction, parsed.
struct Expectation {
  std::string text;   ///< as given: "calls:aten::mm=3"
  std::string key;    ///< "calls"
  std::string arg;    ///< "aten::mm" (for calls), else empty
  std::string value;  ///< "3"
  int64_t count = 0;  ///< the value as a number, for steps, kernels and calls
};

/// What can be predicted, for --help and messages.
std::string expectation_keys();

/// Parses KEY=VALUE. Throws std::invalid_argument with one line saying what is wrong and what
/// is allowed.
Expectation parse_expectation(std::string_view text);

struct ExpectAnswer {
  bool yes = false;
  std::string measured;  ///< "5 per step (median of 3 steps)"
  /// "expect kernels=5: yes (measured 5 per step, median of 3 steps)"
  std::string line() const;
  std::string text;      ///< the expectation as given
};

/// Checks one prediction against the trace.
ExpectAnswer check_expectation(const TraceIndex& index, const Expectation& e);

}  // namespace pil::trace
