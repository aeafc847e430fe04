// End-to-end checks of lesson 03 on the CPU (small shapes): the forward is three matrix products
// and two pointwise operators; a training step adds the backward's four products and an AdamW
// step, each in its range; forward and gradients match float64; bad flags are refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/lesson_run.h"

namespace fs = std::filesystem;
using pil::test::count_inside;
using pil::test::count_lines_starting_with;
using pil::test::named;
using pil::test::run_process;
using pil::test::TempDir;

namespace {

const std::string kExe = PIL_LESSON_EXE;
// The compiled variant runs (fp32, on the CPU) where the build found a Python torch to compile
// its package with; otherwise it is left out with that reason.
const bool kCompiled = !std::string(PIL_AOTI_COMPILE).empty();

struct MlpRun : pil::test::LessonRun {
  explicit MlpRun(std::vector<std::string> args)
      : pil::test::LessonRun(kExe, std::move(args),
                             {"--size", "4", "--seq", "16", "--model", "64", "--hidden", "160"}) {}
};

TEST(Lesson03, ForwardIsThreeProductsAndTwoPointwiseOps) {
  MlpRun run({});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), 1);
  const auto slices = run.slices();
  const auto fwd = named(slices, "mlp_fwd");
  ASSERT_EQ(fwd.size(), 3u);
  for (const auto& r : fwd) {
    EXPECT_EQ(count_inside(slices, r, "aten::mm"), 3u) << "gate, up, down";
    EXPECT_EQ(count_inside(slices, r, "aten::gelu"), 1u);
    EXPECT_EQ(count_inside(slices, r, "aten::mul"), 1u);
  }
}

TEST(Lesson03, TrainingStepHasForwardBackwardAndOptimizerRanges) {
  MlpRun run({"--variant", "training"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto slices = run.slices();
  for (const char* range : {"mlp_fwd", "mlp_bwd", "optimizer_step"})
    EXPECT_EQ(named(slices, range).size(), 3u) << range;
  for (const auto& r : named(slices, "mlp_bwd")) {
    // dW for gate, up and down, and d(hidden) for down's input; x needs no gradient.
    EXPECT_EQ(count_inside(slices, r, "aten::mm"), 4u);
    EXPECT_EQ(count_inside(slices, r, "aten::gelu_backward"), 1u);
  }
  for (const auto& r : named(slices, "optimizer_step"))
    EXPECT_EQ(count_inside(slices, r, "aten::mm"), 0u) << "the optimizer multiplies no matrices";
}

TEST(Lesson03, DtypesPass) {
  for (const char* dtype : {"fp32", "bf16"}) {
    MlpRun run({"--dtype", dtype, "--variant", "all", "--active", "1"});
    EXPECT_EQ(run.r.exit_code, 0) << dtype << "\n" << run.r.out << run.r.err;
    const int compiled = kCompiled && std::string(dtype) == "fp32" ? 1 : 0;  // the build's package
    EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), 2 + compiled) << dtype;
  }
}

// torch.compile's C++ route: Inductor fuses gelu and mul into one loop, named in the trace
// (cpp.enable_kernel_profile); no separate gelu or mul operator is left.
TEST(Lesson03, CompiledFusesGeluAndMulIntoOneKernel) {
  MlpRun run({"--variant", "compiled"});
  if (!pil::test::compiled_run_passed(run, "eager", kCompiled)) return;
  const auto slices = run.slices();
  const auto fwd = named(slices, "mlp_fwd");
  ASSERT_EQ(fwd.size(), 3u);
  for (const auto& r : fwd) {
    EXPECT_EQ(count_inside(slices, r, "aten::gelu"), 0u);
    EXPECT_EQ(count_inside(slices, r, "aten::mul"), 0u);
    size_t fused = 0;
    for (const auto& s : slices)
      fused += r.contains(s) && s.name.find("gelu") != std::string::npos &&
               s.name.find("mul") != std::string::npos && s.name.rfind("aten::", 0) != 0;
    EXPECT_EQ(fused, 1u) << "one fused gelu·mul kernel per forward";
  }
  // The table holds no aten::gelu or aten::mul row either.
  const std::string table = run.r.out.substr(0, run.r.out.find("RESULT:"));
  EXPECT_EQ(table.find("aten::gelu "), std::string::npos) << table;
  EXPECT_EQ(table.find("aten::mul "), std::string::npos) << table;
}

TEST(Lesson03, CompiledWithoutAPackageForTheDtypeIsASkipNamingTheCommand) {
  if (!kCompiled) GTEST_SKIP() << "built without a Python torch: " << PIL_AOTI_NO_COMPILER;
  MlpRun run({"--variant", "compiled", "--dtype", "bf16"});
  EXPECT_EQ(run.r.exit_code, 77) << run.r.out << run.r.err;
  EXPECT_NE(run.r.out.find("compile it with: "), std::string::npos) << run.r.out;
  EXPECT_NE(run.r.out.find("--device cpu --dtype bf16 --out "), std::string::npos) << run.r.out;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: SKIPPED"), 1);
}

TEST(Lesson03, BadShapeFlagsExit2) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--hidden", "0"},
                                        {"--seq", "-1"}, {"--model", "big"}})
    pil::test::expect_usage_error(kExe, args);
}

}  // namespace

// --- On a GPU (ctest 03_mlp.gpu_checks; exits 77 where no GPU is usable) -----------------------
// The lesson's claims about the GPU, written before a GPU was lent; passed on the H200, 2026-12-04
// (docs/gpu-runs/2026-12-04-h200).
namespace {

struct GpuMlpRun : pil::test::GpuLessonRun {
  GpuMlpRun(const std::string& variant, const std::string& dtype = "bf16")
      : GpuLessonRun(kExe, {"--dtype", dtype, "--variant", variant, "--size", "8", "--active", "3"}) {}
  size_t kernels() const { return count("kernel"); }
};

TEST(Lesson03Gpu, EagerForwardIsFiveKernels) {
  GpuMlpRun run("eager");
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(run.kernels_under("aten::gelu"), 3u) << "one gelu kernel per step";
  EXPECT_EQ(run.kernels_under("aten::mul"), 3u) << "one mul kernel per step";
  EXPECT_GE(run.kernels_under("aten::mm"), 9u) << "at least one GEMM kernel per product, 3 per step";
  EXPECT_EQ(run.kernels(), run.kernels_under("aten::mm") + 6) << "nothing else";
}

TEST(Lesson03Gpu, FusedForwardIsFourKernels) {
  GpuMlpRun run("fused_geglu");
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(run.count_containing("kernel", "lesson03::"), 3u) << "one fused gelu·mul kernel per step";
  EXPECT_EQ(run.kernels_under("aten::gelu") + run.kernels_under("aten::mul"), 0u);
  EXPECT_GE(run.kernels_under("aten::mm"), 9u) << "at least one GEMM kernel per product";
  EXPECT_EQ(run.kernels(), run.kernels_under("aten::mm") + 3) << "nothing else";
}

TEST(Lesson03Gpu, LtEpilogueForwardIsFourKernelsWithNoGelu) {
  GpuMlpRun run("lt_epilogue");
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  // Gate GEMM with its GELU epilogue, up GEMM, mul, down GEMM per step.
  EXPECT_EQ(run.kernels_under("aten::mul"), 3u) << "one mul kernel per step";
  EXPECT_EQ(run.kernels_under("aten::gelu"), 0u) << "the gelu is in the gate GEMM's epilogue";
  EXPECT_GE(run.kernels(), 3u + 9u) << "at least one GEMM kernel per product";
  EXPECT_NE(run.r.out.find("agrees with eager:"), std::string::npos) << run.r.out;
}

TEST(Lesson03Gpu, GraphIsOneLaunchPerStepOfFiveKernels) {
  GpuMlpRun run("graph");
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto launches = run.pil_trace({"launches"});
  EXPECT_EQ(launches["graph_launches"].get<int64_t>(), 3) << launches.dump();
  EXPECT_GE(launches["graph_kernels"].get<int64_t>(), 15) << "gelu, mul and at least 3 GEMM kernels per step\n"
                                                          << launches.dump();
}

TEST(Lesson03Gpu, LtEpilogueRefusesUnaligned16BitShapes) {
  const pil::test::GpuLessonRun run(kExe, {"--dtype", "bf16", "--model", "100", "--variant", "lt_epilogue"});
  EXPECT_EQ(run.r.exit_code, 2) << run.r.out << run.r.err;
  EXPECT_NE(run.r.err.find("multiple of 8"), std::string::npos) << run.r.err;
}

TEST(Lesson03Gpu, EveryVariantMatchesFloat64AndEagerInEveryDtype) {
  for (const char* dtype : {"fp32", "bf16", "fp16"}) {
    const pil::test::GpuLessonRun run(kExe, {"--dtype", dtype, "--size", "8", "--variant", "all",
                                             "--active", "1"});
    // As many as the lesson says it runs there (`compiled` too where the build has its packages).
    const pil::test::Listed will = pil::test::listed_variants(kExe, {"--device", "cuda", "--dtype", dtype,
                                                                     "--size", "8"});
    EXPECT_GE(will.variants.size(), 6u) << "eager, training, fused_geglu, fused_training, lt_epilogue, graph";
    EXPECT_EQ(run.r.exit_code, 0) << dtype << "\n" << run.r.out << run.r.err;
    EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), will.variants.size()) << dtype;
    EXPECT_EQ(count_lines_starting_with(run.r.out, "agrees with "), will.agreeing) << dtype;
  }
}

TEST(Lesson03Gpu, FusedTrainingMatchesFloat64InEveryDtype) {
  for (const char* dtype : {"fp32", "bf16", "fp16"}) {
    GpuMlpRun run("fused_training", dtype);
    EXPECT_EQ(run.r.exit_code, 0) << dtype << "\n" << run.r.out << run.r.err;
  }
}

}  // namespace
