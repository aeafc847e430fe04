#pragma once
/// \file
/// Small facts about JSON text that the reader's stages share: blanks, where strings are, and
/// keys compared in place. Internal to the trace kit's readers (the parser, slice, ranks).
#include <cstddef>
#include <cstring>
#include <string_view>

namespace pil::trace::detail {

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/// Follows JSON strings byte by byte, from a place outside any string: outside(c) is true for a
/// byte outside every string (a string's quotes count as inside).
struct StringTracker {
  bool in_string = false, escaped = false;
  bool outside(char c) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      return false;
    }
    if (c == '"') in_string = true;
    return !in_string;
  }
};

/// Where in `text` the bracket closes that is `depth` levels open before it (0: the one `text`
/// starts with), counting brackets outside strings; text.size() when it does not close there
/// (or a closing bracket has no opening one). At a file's end, one that does not close was cut
/// short.
inline size_t close_of(std::string_view text, int depth = 0) {
  StringTracker strings;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!strings.outside(c)) continue;
    if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth <= 0) {
      return depth == 0 ? i : text.size();
    }
  }
  return text.size();
}

/// Where the JSON object or array starting at text[at] ends (one past its closing bracket), or
/// npos when the text stops first (more may still come, or the file was cut short).
inline size_t value_end(std::string_view text, size_t at) {
  const size_t close = close_of(text.substr(at));
  return close < text.size() - at ? at + close + 1 : std::string_view::npos;
}

/// A raw (still escaped) key from simdjson equals `lit`: the text matches and the closing quote
/// follows. Quicker than a general comparison, for the few keys a trace event has.
template <size_t N>
inline bool is_key(const char* raw, const char (&lit)[N]) {
  return std::memcmp(raw, lit, N - 1) == 0 && raw[N - 1] == '"';
}

}  // namespace pil::trace::detail
