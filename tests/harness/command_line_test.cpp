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

}  // namespace
}  // namespace pil
