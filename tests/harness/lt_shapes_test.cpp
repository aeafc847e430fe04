// The shapes the cuBLASLt variants accept, checked on the CPU (the variants themselves need a GPU).
#include "harness/lt_shapes.h"

#include <gtest/gtest.h>

namespace pil {
namespace {

TEST(LtShapes, TakesAlignedShapesOfTwoOrMore) {
  EXPECT_EQ(lt_shape_problem("lt_bias", true, {{"--size", 64}}, {{"--size", 64}}), "");
  EXPECT_EQ(lt_shape_problem("lt_bias", false, {{"--size", 33}}, {{"--size", 33}}), "") << "fp32 rows need no 8";
}

TEST(LtShapes, RefusesADimensionOfOneNamingTheFlags) {
  const std::string why = lt_shape_problem("the cuBLASLt variants", false,
                                           {{"--size", 4}, {"--in-features", 1}}, {{"--in-features", 1}});
  EXPECT_EQ(why, "--size 4 --in-features 1: for the cuBLASLt variants, each of them must be at least 2 "
                 "(cuBLASLt refuses single-row matrices); allowed: 2 or more");
}

TEST(LtShapes, Refuses16BitRowsNotAMultipleOf8) {
  const std::string why = lt_shape_problem("lt_bias", true, {{"--size", 100}}, {{"--size", 100}});
  EXPECT_EQ(why, "--size 100: for lt_bias with a 16-bit dtype, it must be a multiple of 8 (rows of 16 "
                 "bytes); allowed: 8, 16, 24, ... or --dtype fp32");
}

}  // namespace
}  // namespace pil
