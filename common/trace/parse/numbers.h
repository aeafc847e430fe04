#pragma once
/// \file
/// Times as a trace writes them, microseconds in text, to integer nanoseconds: the common case
/// here, inline for the event loop (two per event); microseconds_text_to_ns (trace/parse.h,
/// numbers.cpp) for the rest. Internal to the trace parser.
#include <cstdint>
#include <string_view>

#include "trace/parse.h"
#include "trace/parse/json_text.h"

namespace pil::trace::detail {

/// The common case, fast: [-]digits[.digits] with at most 15 integer digits. False to let the
/// general path decide (exponents, long numbers, anything unusual).
inline bool plain_microseconds(std::string_view t, int64_t& ns) {
  size_t i = 0;
  const bool negative = !t.empty() && t[0] == '-';
  if (negative) ++i;
  uint64_t whole = 0;
  const size_t int_start = i;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') whole = whole * 10 + uint64_t(t[i++] - '0');
  if (i == int_start || i - int_start > 15) return false;
  uint64_t frac = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    const size_t frac_start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (frac_digits < 3) {
        frac = frac * 10 + uint64_t(t[i] - '0');
        ++frac_digits;
      } else if (i == frac_start + 3) {
        round_up = t[i] >= '5';
      }
      ++i;
    }
    if (i == frac_start) return false;
  }
  while (i < t.size() && is_space(t[i])) ++i;
  if (i != t.size()) return false;
  for (; frac_digits < 3; ++frac_digits) frac *= 10;
  const uint64_t v = whole * 1000 + frac + (round_up ? 1 : 0);
  ns = negative ? -int64_t(v) : int64_t(v);
  return true;
}

/// microseconds_text_to_ns, with the common case inline.
inline bool text_to_ns(std::string_view t, int64_t& ns) {
  return plain_microseconds(t, ns) || microseconds_text_to_ns(t, ns);
}

}  // namespace pil::trace::detail
