#pragma once
/// \file
/// What a command-line tool says about a word it could not take: the name a typo was likely meant
/// to be, a flag it lacks, a value with no flag before it, a flag given more than once. The lessons
/// and pil-trace say these in the same words; each passes its own name and where its flags are
/// listed.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pil {

/// `word` as one word of a POSIX shell's command line: unchanged where it holds only letters,
/// digits and `_./+:=@,%-`; else in single quotes (a quote inside as '\''), "" as ''.
std::string shell_word(const std::string& word);

/// The edits (insert, delete or replace one character) that turn `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b);

/// `s` with its ASCII letters in lower case ("--SIZE" -> "--size").
std::string lowercase(std::string_view s);

/// The name among `names` nearest to `word` when it is a typo away (at most two edits, and fewer
/// than the word's length, so that "-s" suggests nothing; letters' case is no edit, so "--SIZE"
/// suggests "--size"); "" when none is.
std::string nearest_name(std::string_view word, const std::vector<std::string>& names);

/// The line for the first word a command line did not take (without the tool's "name: error: "):
/// a value with no flag before it ("'extra': a value with no flag before it; allowed: VALUES"), or a
/// flag `owner` lacks, with the one of `flags` a typo away ("--sizes: not a flag of OWNER (did you
/// mean --size?); allowed: FLAGS"). `allowed_flags` and `allowed_values` say where the allowed
/// words are listed.
std::string word_not_taken(const std::string& word, const std::vector<std::string>& flags,
                           std::string_view owner, std::string_view allowed_flags,
                           std::string_view allowed_values);

/// The line for a one-value flag given more than once, naming every value in the order given
/// (an empty one as ''): "--size: given 2 times (4, 8); allowed: once".
std::string given_more_than_once(std::string_view flag, const std::vector<std::string>& values);

/// What is wrong with `text` as one of `names` (letters' case aside: "CPU" is "cpu"), or "" (and
/// `index` set to the name's place) when nothing is: "no value given; allowed: a|b", "unknown value
/// 'x'; allowed: a|b", with the name a typo away where there is one ("unknown value 'eagr' (did you
/// mean eager?); allowed: ...").
std::string choice_problem(std::string_view text, const std::vector<std::string>& names, size_t& index);

/// The places in `words` (a command line's words after the command) of each flag of `value_flags`
/// written without its value: the last word, one followed by another flag ("--..." or "-h"), or
/// "--flag=". Parsers take the next flag for the value, or say "1 required TEXT missing"; a tool
/// gives such a flag an empty value instead, which its check refuses with what is allowed.
std::vector<size_t> flags_without_value(const std::vector<std::string>& words, const std::set<std::string>& value_flags);

/// What is wrong with `text` as a whole number from `min` to `max`, or "" (and `value` set) when
/// nothing is: "'x' is not a whole number; allowed: a whole number from 1 to 64", "0 is out of
/// range; allowed: ...", "no value given; allowed: ..." (with `max` INT64_MAX the range reads
/// "from MIN up").
std::string whole_number_problem(std::string_view text, int64_t min, int64_t max, int64_t& value);

/// Whether standard output took the whole report (a full disk or a closed descriptor stop it; a
/// closed pipe or a file-size limit end the process by signal, as for any tool), watched from
/// construction to destruction: it stands between std::cout and its buffer, so that the system's
/// reason is kept from the first write that failed (C's stdout forgets it; by the final flush
/// errno says nothing). A tool says the problem after its work
/// and exits 2 rather than 0: every line was "printed", yet the reader has not got them.
class StdoutCheck {
 public:
  StdoutCheck();
  ~StdoutCheck();
  StdoutCheck(const StdoutCheck&) = delete;
  StdoutCheck& operator=(const StdoutCheck&) = delete;

  /// Flushes std::cout and C's stdout, and says why they did not take everything, or "":
  /// "the report could not be written to standard output: No space left on device".
  std::string problem();

 private:
  class Watch;
  std::unique_ptr<Watch> watch_;
};

}  // namespace pil
