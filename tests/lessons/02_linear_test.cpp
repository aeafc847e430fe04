// End-to-end checks of lesson 02 on the CPU: nn::Linear's forward is t -> addmm with the bias
// inside the GEMM (the C++ frontend picks addmm itself: no aten::linear, unlike Python); its
// backward is AddmmBackward0's two matrix products and the bias sum; forward and gradients match
// float64; bad flags are refused.
#include <gtest/gtest.h>

#include <iostream>

#include <filesystem>
#include <set>

#include "support/lesson_run.h"

namespace fs = std::filesystem;
using pil::test::count_inside;
using pil::test::count_lines_starting_with;
using pil::test::named;
using pil::test::run_process;
using pil::test::TempDir;

namespace {

const std::string kExe = PIL_LESSON_EXE;

struct LinearRun : pil::test::LessonRun {
  explicit LinearRun(std::vector<std::string> args)
      : pil::test::LessonRun(kExe, std::move(args)) {}
};

TEST(Lesson02, InferenceIsTransposeViewThenAddmm) {
  LinearRun run({});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), 1);
  const auto slices = run.slices();
  const auto ranges = named(slices, "linear_fwd");
  ASSERT_EQ(ranges.size(), 3u) << "one linear_fwd per active step";
  for (const auto& r : ranges) {
    EXPECT_EQ(count_inside(slices, r, "aten::linear"), 0u) << "C++'s F::linear calls addmm itself";
    EXPECT_EQ(count_inside(slices, r, "aten::t"), 1u);
    EXPECT_EQ(count_inside(slices, r, "aten::addmm"), 1u) << "the bias lives in the GEMM";
    EXPECT_EQ(count_inside(slices, r, "aten::add"), 0u) << "no separate add";
  }
}

TEST(Lesson02, WithoutBiasThereIsNoAddmm) {
  LinearRun run({"--bias", "off"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto slices = run.slices();
  EXPECT_TRUE(named(slices, "aten::addmm").empty());
  EXPECT_EQ(named(slices, "aten::matmul").size(), 3u) << "x·Wᵀ through matmul";
  EXPECT_EQ(named(slices, "aten::mm").size(), 3u);
  // The files name the flag set away from its default, and the summary gives every flag.
  EXPECT_EQ(fs::path(run.trace).filename(), "inference_cpu_fp32_n1024_bias-off.pt.trace.json");
  EXPECT_EQ(run.summary()["flags"], nlohmann::json::parse(R"({"in-features": 32, "out-features": 64, "bias": "off", "tf32": "off"})"));
}

// Two runs that differ only by a lesson flag keep their own files.
TEST(Lesson02, RunsThatDifferOnlyByALessonFlagKeepTheirOwnFiles) {
  TempDir dir;
  for (const char* in : {"32", "48"}) {
    const auto r = run_process(kExe, {"--device", "cpu", "--in-features", in, "--active", "1", "--out", dir.path()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  std::set<std::string> traces;
  for (const auto& f : fs::directory_iterator(dir.path()))
    if (f.path().string().find(".pt.trace.json") != std::string::npos) traces.insert(f.path().filename().string());
  EXPECT_EQ(traces, (std::set<std::string>{"inference_cpu_fp32_n1024.pt.trace.json",
                                           "inference_cpu_fp32_n1024_in-features48.pt.trace.json"}));
}

TEST(Lesson02, TrainingBackwardIsTwoMatrixProductsAndTheBiasSum) {
  LinearRun run({"--variant", "training"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto slices = run.slices();
  const auto bwd = named(slices, "linear_bwd");
  ASSERT_EQ(bwd.size(), 3u);
  for (const auto& r : bwd) {
    const auto node = named(slices, "AddmmBackward0");
    size_t inside = 0;
    for (const auto& n : node)
      if (r.contains(n)) {
        ++inside;
        EXPECT_EQ(count_inside(slices, n, "aten::mm"), 2u) << "dx = g·W and dW = gᵀ·x";
      }
    EXPECT_EQ(inside, 1u);
    EXPECT_EQ(count_inside(slices, r, "aten::sum"), 1u) << "db = the sum of g over the batch";
  }
}

TEST(Lesson02, ShapesAndDtypesPass) {
  for (const char* dtype : {"fp32", "bf16", "fp16"}) {
    LinearRun run({"--dtype", dtype, "--size", "64", "--in-features", "48", "--out-features", "40",
             "--variant", "all", "--active", "1"});
    EXPECT_EQ(run.r.exit_code, 0) << dtype << "\n" << run.r.out << run.r.err;
    EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), 2) << dtype;
  }
}

TEST(Lesson02, Tf32OnTheCpuKeepsFp32sTolerance) {
  LinearRun run({"--tf32", "on", "--variant", "all", "--active", "1"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), 2);
  EXPECT_NE(run.r.out.find("tolerance |out - ref| <= 0.0001*|ref|"), std::string::npos)
      << "TF32 applies to CUDA products only\n" << run.r.out;
}

TEST(Lesson02, BadLessonFlagsExit2WithOneLine) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--in-features", "0"},
                                        {"--out-features", "x"}, {"--bias", "maybe"},
                                        {"--tf32", "yes"}})
    pil::test::expect_usage_error(kExe, args);
}

}  // namespace

// --- On a GPU (ctest 02_linear.gpu_checks; exits 77 where no GPU is usable) --------------------
// The lesson's claims about the GPU, written before a GPU was lent; passed on the H200, 2026-12-04
// (docs/gpu-runs/2026-12-04-h200).
namespace {

struct GpuLinearRun : pil::test::GpuLessonRun {
  GpuLinearRun(const std::string& variant, const std::string& dtype = "bf16")
      : GpuLessonRun(kExe, {"--dtype", dtype, "--variant", variant, "--active", "3"}) {}
  size_t kernels() const { return count("kernel"); }
};

TEST(Lesson02Gpu, Tf32ChangesTheFp32GemmKernel) {
  auto kernels = [](const std::string& tf32) {
    const pil::test::GpuLessonRun run(kExe, {"--dtype", "fp32", "--tf32", tf32, "--size", "1024",
                                             "--in-features", "1024", "--out-features", "1024",
                                             "--active", "1"});
    EXPECT_EQ(run.r.exit_code, 0) << tf32 << "\n" << run.r.out << run.r.err;
    std::set<std::string> names;
    for (const auto& s : run.slices)
      if (s.cat == "kernel") names.insert(s.name);
    return names;
  };
  const auto off = kernels("off"), on = kernels("on");
  // Kernel names are cuBLAS's to choose per GPU: what they say is advice printed for the reader
  // of the GPU check's log, not a failure, until a GPU run has shown what they are.
  bool tf32_named = false;
  for (const auto& n : on) tf32_named = tf32_named || n.find("tf32") != std::string::npos;
  std::cout << "advice: with --tf32 on the GEMM kernels " << (off == on ? "are the same as" : "differ from")
            << " those with --tf32 off, and " << (tf32_named ? "one" : "none") << " of them says tf32 in its name\n";
  for (const auto& n : on) std::cout << "advice:   --tf32 on kernel: " << n << "\n";
  for (const auto& n : off) std::cout << "advice:   --tf32 off kernel: " << n << "\n";
  EXPECT_FALSE(on.empty());
  EXPECT_FALSE(off.empty());
}

TEST(Lesson02Gpu, LtVariantsRefuseShapesCublasLtCannotTake) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--variant", "lt_linear", "--dtype", "bf16", "--in-features", "33"},
        {"--variant", "lt_linear", "--dtype", "fp32", "--out-features", "1"}}) {
    const pil::test::GpuLessonRun run(kExe, args);
    EXPECT_EQ(run.r.exit_code, 2) << run.r.out << run.r.err;
    EXPECT_NE(run.r.err.find("cuBLASLt variants"), std::string::npos) << run.r.err;
  }
}

TEST(Lesson02Gpu, ForwardIsOneGemmWithTheBiasInside) {
  GpuLinearRun run("inference");
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_GE(run.kernels_under("aten::addmm"), 3u) << "at least one GEMM kernel per step";
  EXPECT_EQ(run.kernels(), run.kernels_under("aten::addmm")) << "no add kernel: the bias is in the GEMM";
}

TEST(Lesson02Gpu, LtLinearIsOneKernelWithTheBiasEpilogue) {
  GpuLinearRun run("lt_linear");
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_GE(run.kernels(), 3u) << "the GEMM, at least one kernel per step";
  EXPECT_EQ(run.count_containing("kernel", "elementwise"), 0u) << "no separate bias kernel";
}

TEST(Lesson02Gpu, LtTrainingMatchesFloat64InEveryDtype) {
  for (const char* dtype : {"fp32", "bf16", "fp16"}) {
    GpuLinearRun run("lt_training", dtype);
    // cuBLASLt may offer no BGRADB algorithm for a dtype (fp32, say): then the variant is a skip
    // with cuBLASLt's reason, never a failure.
    if (run.r.exit_code == 77) {
      EXPECT_NE(run.r.out.find("cuBLASLt has no algorithm"), std::string::npos) << dtype << "\n" << run.r.out;
      std::cout << "advice: lt_training " << dtype << " is unavailable here: no BGRADB algorithm\n";
      continue;
    }
    EXPECT_EQ(run.r.exit_code, 0) << dtype << "\n" << run.r.out << run.r.err;
  }
}

}  // namespace
