// A typo's nearest name, as the lessons and pil-trace suggest it for a flag or command they lack.
#include "base/spelling.h"

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

}  // namespace
}  // namespace pil
