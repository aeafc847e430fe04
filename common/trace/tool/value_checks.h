#pragma once
/// \file
/// pil-trace's checks of a flag's value, in the words the lessons use for theirs ("--step: -1 is
/// out of range; allowed: a whole number from 0 up"), in place of CLI11's own ("Could not
/// convert", a negative step wrapped round to 18446744073709551615, or a range that ends in a
/// 309-digit number).
#include <CLI/CLI.hpp>

#include <limits>
#include <string>
#include <vector>

namespace pil::trace::tool {

/// A whole number from `min` to `max` (no upper bound: the type's largest).
CLI::Validator whole_number(long long min, long long max = std::numeric_limits<long long>::max());

/// A finite number from `min` to `max` (no upper bound: infinity; no lower bound: -infinity).
CLI::Validator number(double min, double max = std::numeric_limits<double>::infinity());

/// A name that is not empty (`what` says what is allowed: "a slice's name").
CLI::Validator non_empty(const std::string& what);

/// One of `names`, in any case, taken as written in `names` ("HTA" is "hta").
CLI::Validator one_of(const std::vector<std::string>& names);

/// Why `out` (the file --out or --svg names) cannot be written, or "": what the file writer
/// refuses (pil::unwritable_reason: a folder, /dev/null, a missing folder...), or one of the
/// traces read (`inputs`: an svg written over its trace). Said before any trace is read, as
/// `flag` ("--out").
std::string output_problem(const std::string& flag, const std::string& out,
                           const std::vector<std::string>& inputs);

}  // namespace pil::trace::tool
