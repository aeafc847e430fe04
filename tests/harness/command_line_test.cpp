// What the lessons and pil-trace say of a word they could not take: a typo's nearest name, a flag
// they lack, a value with no flag before it, a flag given twice.
#include "base/command_line.h"

#include <gtest/gtest.h>

namespace pil {
namespace {

TEST(Spelling, EditDistanceCountsInsertsDeletesAndReplaces) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("--size", "--size"), 0u);
  EXPECT_EQ(edit_distance("--sizes", "--size"), 1u);
  EXPECT_EQ(edit_distance("--szie", "--size"), 2u);
  EXPECT_EQ(edit_distance("sumary", "summary"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Spelling, TheNearestNameIsATypoAwayOrNone) {
  const std::vector<std::string> flags{"--size", "--seed", "--seq", "--variant", "--out"};
  EXPECT_EQ(nearest_name("--sizes", flags), "--size");
  EXPECT_EQ(nearest_name("--varient", flags), "--variant");
  EXPECT_EQ(nearest_name("--bogus", flags), "");
  EXPECT_EQ(nearest_name("-s", flags), "") << "a short word is a typo of everything";
  EXPECT_EQ(nearest_name("--se", flags), "--seq") << "the first of the nearest, in the names' order";
  EXPECT_EQ(nearest_name("sumary", {"summary", "ops"}), "summary");
  EXPECT_EQ(nearest_name("x", {}), "");
  EXPECT_EQ(nearest_name("--SIZE", flags), "--size") << "caps lock is no typo";
  EXPECT_EQ(nearest_name("SUMARY", {"summary", "ops"}), "summary");
}

TEST(CommandLine, AWordNotTakenIsAFlagWithItsNearestOrAValueWithNoFlag) {
  const std::vector<std::string> flags{"--size", "--seq", "--out"};
  EXPECT_EQ(word_not_taken("--sizes", flags, "this lesson", "the flags", "the values"),
            "--sizes: not a flag of this lesson (did you mean --size?); allowed: the flags");
  EXPECT_EQ(word_not_taken("--sizes=4", flags, "this lesson", "the flags", "the values"),
            "--sizes: not a flag of this lesson (did you mean --size?); allowed: the flags")
      << "the flag before its '=' is named";
  EXPECT_EQ(word_not_taken("--bogus", flags, "pil-trace ops", "F", "V"), "--bogus: not a flag of pil-trace ops; allowed: F");
  EXPECT_EQ(word_not_taken("-x", flags, "X", "F", "V"), "-x: not a flag of X; allowed: F");
  EXPECT_EQ(word_not_taken("extra", flags, "X", "F", "V"), "'extra': a value with no flag before it; allowed: V");
  EXPECT_EQ(word_not_taken("-", flags, "X", "F", "V"), "'-': a value with no flag before it; allowed: V");
  EXPECT_EQ(word_not_taken("--", flags, "X", "F", "V"), "'--': a value with no flag before it; allowed: V");
}

TEST(CommandLine, AFlagGivenMoreThanOnceNamesEveryValueInOrder) {
  EXPECT_EQ(given_more_than_once("--size", {"4", "8"}), "--size: given 2 times (4, 8); allowed: once");
  EXPECT_EQ(given_more_than_once("--out", {"a", "", "b"}), "--out: given 3 times (a, '', b); allowed: once");
}

TEST(CommandLine, AChoiceIsTakenInAnyCaseOrItsProblemSaidWithTheNearestName) {
  const std::vector<std::string> names{"eager", "addmm", "all"};
  size_t i = 99;
  EXPECT_EQ(choice_problem("addmm", names, i), "");
  EXPECT_EQ(i, 1u);
  EXPECT_EQ(choice_problem("ALL", names, i), "");
  EXPECT_EQ(i, 2u);
  EXPECT_EQ(choice_problem("eagr", names, i), "unknown value 'eagr' (did you mean eager?); allowed: eager|addmm|all");
  EXPECT_EQ(choice_problem("nope", names, i), "unknown value 'nope'; allowed: eager|addmm|all");
  EXPECT_EQ(choice_problem("", names, i), "no value given; allowed: eager|addmm|all");
  EXPECT_EQ(i, 2u) << "left as it was on a problem";
}

TEST(CommandLine, AValueFlagWithoutItsValueIsFoundWhereverItIs) {
  const std::set<std::string> value_flags{"--size", "--out"};
  using Places = std::vector<size_t>;
  EXPECT_EQ(flags_without_value({"--size", "4", "--out", "x"}, value_flags), Places{});
  EXPECT_EQ(flags_without_value({"--size"}, value_flags), Places{0}) << "the last word";
  EXPECT_EQ(flags_without_value({"--size", "--out", "x"}, value_flags), Places{0}) << "a flag after it";
  EXPECT_EQ(flags_without_value({"--out", "-h"}, value_flags), Places{0});
  EXPECT_EQ(flags_without_value({"--size=", "--out="}, value_flags), (Places{0, 1})) << "'--flag=' has none either";
  EXPECT_EQ(flags_without_value({"--list", "--bogus="}, value_flags), Places{}) << "only value flags are looked at";
  EXPECT_EQ(flags_without_value({"--out", "-1"}, value_flags), Places{}) << "a negative number is a value";
  EXPECT_EQ(flags_without_value({}, value_flags), Places{});
}

TEST(CommandLine, AWholeNumberIsParsedOrItsProblemSaidWithTheRange) {
  int64_t v = -1;
  EXPECT_EQ(whole_number_problem("42", 1, 64, v), "");
  EXPECT_EQ(v, 42);
  EXPECT_EQ(whole_number_problem("x", 1, 64, v), "'x' is not a whole number; allowed: a whole number from 1 to 64");
  EXPECT_EQ(whole_number_problem("4.5", 1, 64, v), "'4.5' is not a whole number; allowed: a whole number from 1 to 64");
  EXPECT_EQ(whole_number_problem("0", 1, 64, v), "0 is out of range; allowed: a whole number from 1 to 64");
  EXPECT_EQ(whole_number_problem("-1", 0, INT64_MAX, v), "-1 is out of range; allowed: a whole number from 0 up");
  // Past int64's end, the end is said ("from 0 up" alone read as no end at all).
  EXPECT_EQ(whole_number_problem("9223372036854775808", 0, INT64_MAX, v),
            "9223372036854775808 is out of range; allowed: a whole number from 0 up to 9223372036854775807");
  EXPECT_EQ(whole_number_problem("99999999999999999999", 0, INT64_MAX, v),
            "99999999999999999999 is out of range; allowed: a whole number from 0 up to 9223372036854775807");
  EXPECT_EQ(whole_number_problem("", 1, 64, v), "no value given; allowed: a whole number from 1 to 64");
  EXPECT_EQ(v, 42) << "left as it was on a problem";
}

}  // namespace
}  // namespace pil
