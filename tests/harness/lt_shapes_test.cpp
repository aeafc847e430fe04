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

namespace pil {
namespace {

TEST(LtPlanKey, AlignmentIsTheLargestPowerOfTwoUpTo256) {
  EXPECT_EQ(pointer_alignment(0x7f0000000000), 256u);
  EXPECT_EQ(pointer_alignment(0x7f0000000200), 256u);
  EXPECT_EQ(pointer_alignment(0x7f0000000080), 128u);
  EXPECT_EQ(pointer_alignment(0x7f0000000010), 16u);
  EXPECT_EQ(pointer_alignment(0x7f0000000002), 2u);
  EXPECT_EQ(pointer_alignment(0x7f0000000001), 1u);
}

// Every field the heuristic sees must tell two plans apart: a key that forgot one would hand
// a call the algorithm chosen for another shape, dtype, epilogue or alignment.
TEST(LtPlanKey, EveryFieldTellsPlansApart) {
  LtPlanKey base;
  base.dtype = 14, base.compute = 68, base.epilogue = 4, base.a_rows = 64, base.a_cols = 32;
  base.b_rows = 64, base.b_cols = 16, base.m = 32, base.n = 16;
  base.align_a = base.align_b = base.align_c = base.align_d = base.align_bias = 256;
  const LtPlanKeyHash hash;
  std::vector<LtPlanKey> changed(19, base);
  changed[0].device = 1;
  changed[1].dtype = 0;
  changed[2].compute = 77;
  changed[3].epilogue = 1;
  changed[4].transpose_a = true;
  changed[5].transpose_b = true;
  changed[6].has_c = true;
  changed[7].has_bias = true;
  changed[8].a_rows = 65;
  changed[9].a_cols = 33;
  changed[10].b_rows = 65;
  changed[11].b_cols = 17;
  changed[12].m = 33;
  changed[13].n = 17;
  changed[14].align_a = 16;
  changed[15].align_b = 16;
  changed[16].align_c = 16;
  changed[17].align_d = 16;
  changed[18].align_bias = 16;
  LtPlanKey same = base;
  EXPECT_TRUE(same == base);
  EXPECT_EQ(hash(same), hash(base));
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_FALSE(changed[i] == base) << "field " << i;
    EXPECT_NE(hash(changed[i]), hash(base)) << "field " << i;
  }
}

}  // namespace
}  // namespace pil
