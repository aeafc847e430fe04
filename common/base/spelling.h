#pragma once
/// \file
/// A typo's nearest name: what a command-line tool suggests for a flag or command it does not have.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pil {

/// The edits (insert, delete or replace one character) that turn `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b);

/// The name among `names` nearest to `word` when it is a typo away (at most two edits, and fewer
/// than the word's length, so that "-s" suggests nothing); "" when none is.
std::string nearest_name(std::string_view word, const std::vector<std::string>& names);

}  // namespace pil
