// End-to-end checks of lesson 04 on the CPU (small shapes): every part of the block has its range
// in every step; the naive attention's hidden copy is in the trace and the in-place one's is
// not; each SDPA backend runs its own operator or is a skip with LibTorch's reason; the training
// step has its three ranges; memory is in the table and the summary, and the naive attention's
// seq x seq scores show in its peak; bad flags are refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "support/lesson_run.h"

namespace fs = std::filesystem;
using pil::test::count_inside;
using pil::test::count_lines_starting_with;
using pil::test::line_value;
using pil::test::named;
using pil::test::run_process;
using pil::test::TempDir;

namespace {

const std::string kExe = PIL_LESSON_EXE;
// The compiled variant runs (fp32, on the CPU, 4 heads of 32) where the
// build found a Python torch to compile its packages with; otherwise it is left out with that
// reason.
const bool kCompiled = !std::string(PIL_AOTI_COMPILE).empty();

// Batch 1, sequence 128, 4 heads of 32 (model 128), unless the arguments say otherwise.
struct BlockRun : pil::test::LessonRun {
  explicit BlockRun(std::vector<std::string> args,
                    const std::vector<std::string>& shape = {"--size", "1", "--seq", "128", "--heads", "4",
                                                             "--head-dim", "32"})
      : pil::test::LessonRun(kExe, std::move(args), shape) {}
};

TEST(Lesson04, EveryPartHasItsRangeInEveryStep) {
  BlockRun run({"--variant", "sdpa_math"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto slices = run.slices();
  const auto blocks = named(slices, "block_fwd");
  ASSERT_EQ(blocks.size(), 3u);
  for (const auto& b : blocks)
    for (const char* part : {"norm1", "attn", "norm2", "mlp"})
      EXPECT_EQ(count_inside(slices, b, part), 1u) << part;
  ASSERT_EQ(named(slices, "attn").size(), 3u);
  ASSERT_EQ(named(slices, "norm1").size(), 3u);
  for (const auto& a : named(slices, "attn")) {
    EXPECT_EQ(count_inside(slices, a, "aten::_scaled_dot_product_attention_math"), 1u);
    // C++'s nn::Linear on a 3-D input: aten::t, aten::matmul -> aten::mm, then the bias by
    // aten::add_ (no aten::linear row, no addmm).
    EXPECT_EQ(count_inside(slices, a, "aten::mm"), 2u) << "qkv and the output projection";
  }
  for (const auto& n : named(slices, "norm1")) EXPECT_EQ(count_inside(slices, n, "aten::layer_norm"), 1u);
}

TEST(Lesson04, NaiveMaskedFillCopiesTheScoresInPlaceDoesNot) {
  BlockRun naive({"--variant", "naive"});
  ASSERT_EQ(naive.r.exit_code, 0) << naive.r.out << naive.r.err;
  const auto s = naive.slices();
  ASSERT_EQ(named(s, "attn").size(), 3u);
  for (const auto& a : named(s, "attn")) {
    EXPECT_EQ(count_inside(s, a, "aten::masked_fill"), 1u);
    EXPECT_EQ(count_inside(s, a, "aten::masked_fill_"), 1u) << "called by aten::masked_fill on its copy";
    EXPECT_EQ(count_inside(s, a, "aten::softmax"), 1u);
  }
  for (const auto& m : named(s, "aten::masked_fill"))
    if (m.name == "aten::masked_fill") {
      EXPECT_EQ(count_inside(s, m, "aten::clone"), 1u) << "the hidden copy of the scores";
    }
  BlockRun inplace({"--variant", "naive_inplace"});
  ASSERT_EQ(inplace.r.exit_code, 0) << inplace.r.out << inplace.r.err;
  const auto t = inplace.slices();
  ASSERT_EQ(named(t, "attn").size(), 3u);
  for (const auto& a : named(t, "attn")) {
    EXPECT_EQ(count_inside(t, a, "aten::masked_fill_"), 1u);
    EXPECT_EQ(count_inside(t, a, "aten::masked_fill"), 0u) << "no out-of-place fill, so no copy";
  }
  // Both keep one other copy: the heads' output, transposed back to [batch, seq, model], is not
  // contiguous, and reshape copies it (aten::clone under aten::reshape).
  EXPECT_EQ(named(s, "aten::clone").size(), named(t, "aten::clone").size() + 3);
}

TEST(Lesson04, FlashBackendRunsLibTorchsCpuFlashKernel) {
  BlockRun run({"--variant", "sdpa_flash"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto s = run.slices();
  ASSERT_EQ(named(s, "attn").size(), 3u);
  for (const auto& a : named(s, "attn")) {
    EXPECT_EQ(count_inside(s, a, "aten::_scaled_dot_product_flash_attention_for_cpu"), 1u);
    EXPECT_EQ(count_inside(s, a, "aten::softmax"), 0u) << "no separate softmax";
  }
}

TEST(Lesson04, LinearThroughTheModuleIsTwoOperatorsThroughAtenLinearOne) {
  // nn::Linear (functional::linear) on a 3-D input: aten::matmul, then aten::add_ for the bias;
  // torch::linear (--linear aten): aten::linear -> aten::addmm, the bias inside the product.
  BlockRun module({"--variant", "sdpa_flash"});
  ASSERT_EQ(module.r.exit_code, 0) << module.r.out << module.r.err;
  BlockRun aten({"--variant", "sdpa_flash", "--linear", "aten"});
  ASSERT_EQ(aten.r.exit_code, 0) << aten.r.out << aten.r.err;
  const auto m = module.slices(), a = aten.slices();
  ASSERT_EQ(named(m, "block_fwd").size(), 3u);
  ASSERT_EQ(named(a, "block_fwd").size(), 3u);
  for (const auto& b : named(m, "block_fwd")) {
    EXPECT_EQ(count_inside(m, b, "aten::matmul"), 4u) << "qkv, proj, fc1, fc2";
    EXPECT_EQ(count_inside(m, b, "aten::add_"), 4u) << "each bias a separate operator";
    EXPECT_EQ(count_inside(m, b, "aten::linear"), 0u);
    EXPECT_EQ(count_inside(m, b, "aten::addmm"), 0u);
  }
  for (const auto& b : named(a, "block_fwd")) {
    EXPECT_EQ(count_inside(a, b, "aten::linear"), 4u);
    EXPECT_EQ(count_inside(a, b, "aten::addmm"), 4u);
    EXPECT_EQ(count_inside(a, b, "aten::matmul"), 0u);
    EXPECT_EQ(count_inside(a, b, "aten::add_"), 0u);
  }
}

TEST(Lesson04, BackendWithoutACpuKernelIsASkipWithLibTorchsReason) {
  for (const char* v : {"sdpa_mem_efficient", "sdpa_cudnn"}) {
    TempDir dir;
    const auto r = run_process(kExe, {"--device", "cpu", "--variant", v, "--size", "1", "--seq", "64",
                                      "--heads", "2", "--head-dim", "16", "--out", dir.path() + "/o"});
    EXPECT_EQ(r.exit_code, 77) << v << "\n" << r.out << r.err;
    EXPECT_EQ(count_lines_starting_with(r.out, "RESULT: SKIPPED"), 1) << r.out;
    EXPECT_NE(r.out.find("attention kernel for cpu"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir.path() + "/o")) << "a skip writes nothing";
  }
}

TEST(Lesson04, AllOnTheCpuRunsEveryCpuVariantAndNamesTheOthers) {
  BlockRun run({"--variant", "all", "--active", "1"}, {"--size", "1", "--seq", "64", "--heads", "2", "--head-dim", "16"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), 5)
      << "naive, naive_inplace, sdpa_math, sdpa_flash, training";
  EXPECT_NE(run.r.out.find("variant sdpa_mem_efficient left out"), std::string::npos) << run.r.out;
  EXPECT_NE(run.r.out.find("variant sdpa_cudnn left out"), std::string::npos) << run.r.out;
  // No package for 2 heads of 16: left out, naming the command that compiles one.
  EXPECT_NE(run.r.out.find("variant compiled left out: "), std::string::npos) << run.r.out;
  if (kCompiled) {
    EXPECT_NE(run.r.out.find("--flag heads=2 --flag head-dim=16 --out "), std::string::npos) << run.r.out;
  }
  // The comparison at the end: one row per variant run, with its memory peak.
  const size_t at = run.r.out.find("== the variants side by side");
  ASSERT_NE(at, std::string::npos) << run.r.out;
  const std::string table = run.r.out.substr(at);
  for (const char* v : {"naive", "naive_inplace", "sdpa_math", "sdpa_flash", "training"})
    EXPECT_NE(table.find(std::string("PASSED  ") + v + "\n"), std::string::npos) << v << "\n" << table;
  EXPECT_NE(table.find("Peak (trace)"), std::string::npos) << table;
}

// torch.compile's C++ route: the whole forward in one block_fwd range, verified against the
// float64 forward and the naive attention's forward.
TEST(Lesson04, CompiledRunsTheForwardInOneRangeAndAgreesWithNaive) {
  BlockRun run({"--variant", "compiled"});
  if (!pil::test::compiled_run_passed(run, "naive", kCompiled)) return;
  const auto slices = run.slices();
  const auto fwd = named(slices, "block_fwd");
  ASSERT_EQ(fwd.size(), 3u);
  for (const auto& r : fwd) {
    // The eager block's parts are gone as operators: no LayerNorm, no Linear, no GELU operator.
    for (const char* op : {"aten::layer_norm", "aten::linear", "aten::gelu", "norm1", "mlp"})
      EXPECT_EQ(count_inside(slices, r, op), 0u) << op;
  }
}

// One training run answers both: its three ranges, and memory in the table and the summary.
TEST(Lesson04, TrainingStepHasItsThreeRangesAndMemoryIsInTheTableAndTheSummary) {
  BlockRun run({"--variant", "training"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto s = run.slices();
  for (const char* range : {"block_fwd", "block_bwd", "optimizer_step"})
    EXPECT_EQ(named(s, range).size(), 3u) << range;
  for (const auto& b : named(s, "block_bwd"))
    EXPECT_GE(count_inside(s, b, "aten::mm"), 8u) << "two products per projection: qkv, proj, fc1, fc2";

  EXPECT_NE(run.r.out.find("Self CPU Mem"), std::string::npos) << run.r.out;
  EXPECT_NE(run.r.out.find("host memory: peak"), std::string::npos) << run.r.out;
  const auto j = run.summary();
  ASSERT_EQ(j["memory"].size(), 1u) << j.dump();
  EXPECT_EQ(j["memory"][0]["device"], "cpu");
  EXPECT_GT(j["memory"][0]["peak_growth_bytes"].get<int64_t>(), 0);

  BlockRun off({"--variant", "sdpa_math", "--profile-memory", "off"});
  ASSERT_EQ(off.r.exit_code, 0) << off.r.out << off.r.err;
  EXPECT_EQ(off.r.out.find("CPU Mem"), std::string::npos) << off.r.out;
  EXPECT_TRUE(off.summary()["memory"].empty());
}

TEST(Lesson04, NaiveScoresRaiseThePeakFlashDoesNot) {
  // 8 heads x 512 x 512 fp32 scores: 8 MiB that the naive attention holds (twice, at times)
  // and flash attention never makes.
  const std::vector<std::string> shape = {"--size", "1", "--seq", "512", "--heads", "8", "--head-dim", "32"};
  const int64_t scores = int64_t(8) * 512 * 512 * 4;
  BlockRun naive({"--variant", "naive", "--active", "1"}, shape);
  BlockRun flash({"--variant", "sdpa_flash", "--active", "1"}, shape);
  ASSERT_EQ(naive.r.exit_code, 0) << naive.r.out << naive.r.err;
  ASSERT_EQ(flash.r.exit_code, 0) << flash.r.out << flash.r.err;
  const auto n = naive.summary()["memory"][0], f = flash.summary()["memory"][0];
  EXPECT_EQ(n["peak_range"], "attn") << n.dump();
  EXPECT_GE(n["peak_growth_bytes"].get<int64_t>() - f["peak_growth_bytes"].get<int64_t>(), scores)
      << n.dump() << "\n" << f.dump();
}

TEST(Lesson04, BadShapeFlagsExit2) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--heads", "0"}, {"--seq", "0"},
                                        {"--head-dim", "abc"}, {"--profile-memory", "maybe"},
                                        {"--expect", "kernels=five"}})
    pil::test::expect_usage_error(kExe, args);
}

// Too large for memory at --size 1: the line names the flags that set the size and offers only
// those that can still shrink (it said "a smaller --size" to a --size already 1).
TEST(Lesson04, TooLargeForMemoryNamesTheFlagsThatCanShrink) {
  const auto r = pil::test::expect_usage_error(kExe, {"--size", "1", "--seq", "131072", "--heads", "256"});
  EXPECT_NE(r.err.find("--size 1 --seq 131072 --heads 256: needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; allowed: a smaller --seq, --heads or --head-dim"), std::string::npos) << r.err;
}

}  // namespace

// --- On a GPU (ctest 04_transformer.gpu_checks; exits 77 where no GPU is usable) ---------------
// The lesson's claims about the GPU, written before a GPU was lent; passed on the H200, 2026-12-04
// (docs/gpu-runs/2026-12-04-h200).
namespace {

struct GpuBlockRun : pil::test::GpuLessonRun {
  explicit GpuBlockRun(const std::string& variant, const std::string& dtype = "bf16", const std::string& seq = "256")
      : GpuLessonRun(kExe, {"--dtype", dtype, "--variant", variant, "--size", "2", "--seq", seq,
                            "--active", "3"}) {}
};

TEST(Lesson04Gpu, EveryVariantMatchesTheFloat64MathBlock) {
  for (const char* dtype : {"bf16", "fp16", "fp32"}) {
    const pil::test::GpuLessonRun run(kExe, {"--dtype", dtype, "--size", "2", "--seq", "256",
                                             "--variant", "all", "--active", "1"});
    EXPECT_EQ(run.r.exit_code, 0) << dtype << "\n" << run.r.out << run.r.err;
    // naive, naive_inplace, sdpa_math, graph, training at least; the fused backends where
    // LibTorch has them for the dtype (flash has no fp32 kernel on a GPU): as many as the lesson
    // says it runs there, which LibTorch decides by asking the GPU.
    const pil::test::Listed will = pil::test::listed_variants(
        kExe, {"--device", "cuda", "--dtype", dtype, "--size", "2", "--seq", "256"});
    EXPECT_GE(will.variants.size(), 5u) << dtype;
    EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED"), will.variants.size()) << dtype << "\n" << run.r.out;
    EXPECT_EQ(count_lines_starting_with(run.r.out, "agrees with "), will.agreeing) << dtype << "\n" << run.r.out;
    EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: FAILED"), 0) << dtype << "\n" << run.r.out;
  }
}

// The out-of-place masked_fill clones the scores first: a contiguous clone is a device-to-device
// cudaMemcpyAsync (gpu_memcpy), not a kernel, as lesson 01's addmm bias copy is.
TEST(Lesson04Gpu, TheHiddenCopyIsOneDeviceCopyPerForward) {
  GpuBlockRun naive("naive"), inplace("naive_inplace");
  ASSERT_EQ(naive.r.exit_code, 0) << naive.r.out << naive.r.err;
  ASSERT_EQ(inplace.r.exit_code, 0) << inplace.r.out << inplace.r.err;
  EXPECT_EQ(naive.count("gpu_memcpy"), inplace.count("gpu_memcpy") + 3) << "masked_fill's copy, three steps";
  EXPECT_EQ(naive.kernels_under("aten::masked_fill_"), inplace.kernels_under("aten::masked_fill_"))
      << "the fill itself is the same kernel in both";
}

// One pair of runs answers all three: flash's own kernel, fewer kernels, a lower peak. The peak
// is the allocator's over the whole step, the MLP's too: at sequence 256 (512 tokens of model
// 1024) the MLP's bf16 temporaries, 4 MiB each, are as large as a scores tensor and set flash's
// peak about 2 MiB under naive's. At sequence 1024 the scores are 64 MiB and the MLP's about 16:
// the scores decide. (Flash's forward is one kernel there too: 2 x 16 heads x 16 blocks of rows
// fill the H200's SMs, so FlashAttention-2 splits no key range.)
TEST(Lesson04Gpu, FlashRunsAFlashKernelFewerKernelsAndALowerPeakThanNaive) {
  GpuBlockRun flash("sdpa_flash", "bf16", "1024"), naive("naive", "bf16", "1024");
  ASSERT_EQ(flash.r.exit_code, 0) << flash.r.out << flash.r.err;
  ASSERT_EQ(naive.r.exit_code, 0) << naive.r.out << naive.r.err;
  size_t flash_kernels = 0;
  for (const auto& s : flash.slices)
    if (s.cat == "kernel" && s.name.find("flash") != std::string::npos) ++flash_kernels;
  EXPECT_EQ(flash_kernels, 3u) << "one attention kernel per forward";
  EXPECT_LT(flash.count("kernel"), naive.count("kernel"));
  auto peak = [](const GpuBlockRun& run) { return run.summary()["cuda_peak_allocated_bytes"].get<int64_t>(); };
  // 2 x 16 heads x 1024 x 1024 bf16 scores: 64 MiB each, which flash never holds.
  EXPECT_GE(peak(naive) - peak(flash), int64_t(2) * 16 * 1024 * 1024 * 2);
}

TEST(Lesson04Gpu, MathBackendComputesInFp32) {
  GpuBlockRun math("sdpa_math");
  ASSERT_EQ(math.r.exit_code, 0) << math.r.out << math.r.err;
  ASSERT_EQ(named(math.slices, "aten::_scaled_dot_product_attention_math").size(), 3u);
  for (const auto& s : named(math.slices, "aten::_scaled_dot_product_attention_math"))
    EXPECT_GE(count_inside(math.slices, s, "aten::_to_copy"), 3u) << "q, k and v cast up to fp32";
}

// The page's "On a GPU" expectation for --linear: the module path's bias is a separate add_
// kernel per linear (4 per forward), and the aten path's addmm takes the 1-D bias into the GEMM
// (cuBLASLt's bias epilogue): no add_ at all, and no bias copied into the output first (lesson
// 01's addmm, whose bias is a matrix, copies it). The GEMM kernels themselves are not counted
// exactly (cuBLAS picks them per GPU and shape, a split-K reduce kernel at times): the kernel
// totals are printed for the page.
TEST(Lesson04Gpu, AtenLinearRunsNoBiasKernelAndNoBiasCopy) {
  const std::vector<std::string> shape{"--dtype", "bf16", "--variant", "sdpa_flash", "--size", "2",
                                       "--seq", "256", "--active", "3"};
  std::vector<std::string> aten_args = shape;
  aten_args.insert(aten_args.end(), {"--linear", "aten"});
  const pil::test::GpuLessonRun module(kExe, shape), aten(kExe, aten_args);
  ASSERT_EQ(module.r.exit_code, 0) << module.r.out << module.r.err;
  ASSERT_EQ(aten.r.exit_code, 0) << aten.r.out << aten.r.err;
  EXPECT_EQ(module.kernels_under("aten::add_"), 12u) << "qkv, proj, fc1 and fc2's biases, 3 steps";
  EXPECT_EQ(named(aten.slices, "aten::add_").size(), 0u);
  EXPECT_EQ(named(aten.slices, "aten::addmm").size(), 12u);
  EXPECT_GE(aten.kernels_under("aten::addmm"), 12u) << "at least one GEMM kernel per linear";
  // A bias addmm copies into its output first is a device copy (a whole matrix, as in lesson 01)
  // or, broadcast from 1-D, a copy kernel with addmm's External id (at::native::copy_ is called
  // directly, so no aten::copy_ row).
  EXPECT_EQ(aten.count("gpu_memcpy"), module.count("gpu_memcpy")) << "no bias copied before a GEMM";
  for (const auto& k : aten.kernels_of("aten::addmm"))
    EXPECT_EQ(k.name.find("copy"), std::string::npos) << "a copy kernel under aten::addmm: " << k.name;
  std::cout << "measured: kernels in 3 steps: --linear module " << module.count("kernel") << " (aten::mm "
            << module.kernels_under("aten::mm") << ", aten::add_ " << module.kernels_under("aten::add_")
            << "), --linear aten " << aten.count("kernel") << " (aten::addmm " << aten.kernels_under("aten::addmm")
            << ")\n";
}

TEST(Lesson04Gpu, GraphIsOneLaunchPerStep) {
  GpuBlockRun run("graph");
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  const auto launches = run.pil_trace({"launches"});
  EXPECT_EQ(launches["graph_launches"].get<int64_t>(), 3) << launches.dump();
}

}  // namespace
