// Numbers as a trace writes them: microseconds in text, to integer nanoseconds (never through
// a double, which rounds the 19 significant digits of old traces' epoch times to 0.25 µs).
#include <cstdint>
#include <limits>
#include <string_view>

#include "trace/parse.h"
#include "trace/parse/json_text.h"
#include "trace/parse/numbers.h"

namespace pil::trace {

using detail::is_space;
using detail::plain_microseconds;

bool microseconds_text_to_ns(std::string_view t, int64_t& ns) {
  if (plain_microseconds(t, ns)) return true;
  while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
  size_t i = 0;
  const bool negative = i < t.size() && t[i] == '-';
  if (negative) ++i;
  // Collect the significant digits into an integer and a power of ten.
  using u128 = unsigned __int128;
  u128 digits = 0;
  int exponent = 0, count = 0;
  bool any = false, seen_dot = false;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c >= '0' && c <= '9') {
      any = true;
      if (count < 36) {
        digits = digits * 10 + unsigned(c - '0');
        if (digits != 0) ++count;
        if (seen_dot) --exponent;
      } else if (!seen_dot) {
        ++exponent;  // beyond the precision kept: scale only
      }
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!any) return false;
  if (i < t.size()) {
    if (t[i] != 'e' && t[i] != 'E') return false;
    ++i;
    bool exp_negative = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) exp_negative = t[i++] == '-';
    if (i >= t.size()) return false;
    int e = 0;
    for (; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      if (e < 10000) e = e * 10 + (t[i] - '0');
    }
    exponent += exp_negative ? -e : e;
  }
  exponent += 3;  // microseconds -> nanoseconds
  // Scale to an integer, rounding half away from zero.
  constexpr u128 kLimit = static_cast<u128>(std::numeric_limits<int64_t>::max());
  if (digits == 0) {
    ns = 0;
    return true;
  }
  if (exponent >= 0) {
    for (int k = 0; k < exponent; ++k) {
      digits *= 10;
      if (digits > kLimit) return false;
    }
  } else {
    u128 divisor = 1;
    for (int k = 0; k < -exponent; ++k) {
      divisor *= 10;
      if (divisor > digits * 10) {
        digits = 0;
        divisor = 1;
        break;
      }
    }
    digits = (digits + divisor / 2) / divisor;
  }
  if (digits > kLimit) return false;
  ns = negative ? -int64_t(digits) : int64_t(digits);
  return true;
}

}  // namespace pil::trace
