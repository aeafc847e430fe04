// The decisions that depend on the GPU, made from plain inputs and tested here on the CPU (a
// torch::Device("cuda:0") is built without a GPU): which variants run where and what --list says
// of them, whether a package takes a tensor's device, file names, AdamW's epsilon per dtype, the
// `compiled` variant's availability, why no GPU is usable, the runner going on past a variant that throws, and what a
// variant holds freed before main() returns (not at exit, after the CUDA runtime's shutdown).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "cuda/runtime.h"
#include "harness/aoti.h"
#include "harness/lesson.h"

namespace {

using pil::Lesson;
using pil::Options;
using pil::Problem;
using pil::Tensors;
using pil::Variant;
using pil::VariantChoice;
using Status = pil::VariantChoice::Status;

const c10::Device kCuda("cuda:0");
const c10::Device kCpu("cpu");

/// A lesson of five variants, one of each kind of decision.
Lesson decisions_lesson() {
  Lesson l;
  l.name = "99_decisions";
  l.description = "test lesson";
  auto add = [&](const char* name, const char* summary) -> Variant& {
    l.variants.emplace_back(name, summary, [](const Tensors& in) { return in.at(0) + 1; });
    return l.variants.back();
  };
  add("plain", "runs anywhere");
  add("gpu_only", "runs on CUDA only").needs_cuda = true;
  l.variants.back().agrees_with = "plain";
  add("sized", "refuses odd sizes").check = [](const Problem& p) {
    return p.options.size % 2 ? "--size " + std::to_string(p.options.size) + ": must be even" : "";
  };
  add("no_fp16", "the library lacks fp16").unavailable = [](const Problem& p) -> std::string {
    return p.dtype == at::kHalf ? "no fp16 kernel here" : "";
  };
  l.variants.back().agrees_with = "plain";
  // Asks the device, as LibTorch's attention backends do: throws where the device is not usable.
  add("asks_device", "asks the device").unavailable = [](const Problem& p) -> std::string {
    if (p.device.is_cuda()) throw std::runtime_error("Found no NVIDIA driver on your system.");
    return {};
  };
  return l;
}

std::vector<std::string> names(const Lesson& l) {
  std::vector<std::string> n;
  for (const auto& v : l.variants) n.push_back(v.name);
  return n;
}

std::vector<Status> statuses(const std::vector<VariantChoice>& choices) {
  std::vector<Status> s;
  for (const auto& c : choices) s.push_back(c.status);
  return s;
}

// Why no GPU is usable, from what cudaGetDeviceCount answered: CUDA's "driver version is
// insufficient" (35) on a machine with no driver at all says so, not "update your driver".
TEST(GpuDecisions, NoUsableGpuIsSaidPlainly) {
  using pil::cuda::describe_device_count;
  EXPECT_EQ(describe_device_count(0, "", 1, true), "");
  EXPECT_EQ(describe_device_count(0, "", 0, true), "no CUDA device found");
  const std::string insufficient = "CUDA driver version is insufficient for CUDA runtime version";
  EXPECT_EQ(describe_device_count(35, insufficient, 0, false),
            "no NVIDIA driver on this machine (cudaGetDeviceCount: 35, " + insufficient + ")");
  EXPECT_EQ(describe_device_count(35, insufficient, 0, true),
            "the NVIDIA driver is older than this build's CUDA runtime needs (cudaGetDeviceCount: 35, " +
                insufficient + ")");
  EXPECT_EQ(describe_device_count(100, "no CUDA-capable device is detected", 0, true),
            "no CUDA device found (cudaGetDeviceCount: 100, no CUDA-capable device is detected)");
  EXPECT_EQ(describe_device_count(999, "unknown error", 0, true), "unknown error (cudaGetDeviceCount: 999)");
}

TEST(GpuDecisions, VariantsForTheCpu) {
  const Lesson l = decisions_lesson();
  Options o;
  o.size = 64;
  const Problem p{o, kCpu, at::kFloat};
  EXPECT_EQ(statuses(pil::choose_variants(l, p, names(l), true)),
            (std::vector<Status>{Status::Runs, Status::CudaOnly, Status::Runs, Status::Runs, Status::Runs}));
}

TEST(GpuDecisions, VariantsForCudaDecidedWithoutAGpu) {
  const Lesson l = decisions_lesson();
  Options o;
  o.size = 63;
  const Problem p{o, kCuda, at::kHalf};
  const auto c = pil::choose_variants(l, p, names(l), /*device_usable=*/false);
  EXPECT_EQ(statuses(c), (std::vector<Status>{Status::Runs, Status::Runs, Status::Refused, Status::Unavailable,
                                              Status::DecidedOnDevice}));
  EXPECT_EQ(c[2].why, "--size 63: must be even");
  EXPECT_EQ(c[3].why, "no fp16 kernel here");
  // Where the device is usable, a check that throws is an error, not a guess.
  EXPECT_THROW(pil::choose_variants(l, p, {"asks_device"}, /*device_usable=*/true), std::runtime_error);
}

TEST(GpuDecisions, ListSaysWhatRunsAndWhatIsComparedAgainstWhat) {
  const Lesson l = decisions_lesson();
  EXPECT_EQ(pil::list_variants(l, nullptr, false),
            "plain\truns anywhere\n"
            "gpu_only\truns on CUDA only [CUDA only] [agrees with plain]\n"
            "sized\trefuses odd sizes\n"
            "no_fp16\tthe library lacks fp16 [agrees with plain]\n"
            "asks_device\tasks the device\n");
  Options o;
  o.size = 8;
  const Problem cuda_bf16{o, kCuda, at::kBFloat16};
  EXPECT_EQ(pil::list_variants(l, &cuda_bf16, false),
            "plain\truns anywhere\n"
            "gpu_only\truns on CUDA only [agrees with plain]\n"
            "sized\trefuses odd sizes\n"
            "no_fp16\tthe library lacks fp16 [agrees with plain]\n"
            "# asks_device: not known here: LibTorch asks the device whether it has this kernel, and no "
            "cuda:0 is usable here\n");
  const Problem cpu_fp16{o, kCpu, at::kHalf};
  EXPECT_EQ(pil::list_variants(l, &cpu_fp16, true),
            "plain\truns anywhere\n"
            "sized\trefuses odd sizes\n"
            "asks_device\tasks the device\n"
            "# gpu_only: left out: runs on CUDA only\n"
            "# no_fp16: left out: no fp16 kernel here\n");
}

TEST(GpuDecisions, APackageTakesATensorOnAnyDeviceOfItsType) {
  EXPECT_TRUE(pil::aoti::device_matches(c10::Device("cuda:0"), "cuda"));
  EXPECT_TRUE(pil::aoti::device_matches(c10::Device("cuda:1"), "cuda"));
  EXPECT_TRUE(pil::aoti::device_matches(c10::Device("cuda"), "cuda"));
  EXPECT_TRUE(pil::aoti::device_matches(c10::Device("cpu"), "cpu"));
  EXPECT_FALSE(pil::aoti::device_matches(c10::Device("cuda:0"), "cpu"));
  EXPECT_FALSE(pil::aoti::device_matches(c10::Device("cpu"), "cuda"));
  EXPECT_FALSE(pil::aoti::device_matches(c10::Device("cuda:0"), "cuda:0")) << "packages name a type";
}

TEST(GpuDecisions, FileNamesHaveNoColon) {
  EXPECT_EQ(pil::file_device_name(c10::Device("cpu")), "cpu");
  EXPECT_EQ(pil::file_device_name(c10::Device("cuda:0")), "cuda");
  EXPECT_EQ(pil::file_device_name(c10::Device("cuda:3")), "cuda") << "ranks on GPUs 0 and 3 name files alike";
  EXPECT_EQ(pil::file_device_name(c10::Device("cuda")), "cuda");
}

TEST(GpuDecisions, AdamWEpsilonExistsInTheDtype) {
  EXPECT_EQ(pil::adamw_eps(at::kFloat), 1e-8);
  EXPECT_EQ(pil::adamw_eps(at::kBFloat16), 1e-8);
  for (const auto dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    const double eps = pil::adamw_eps(dtype);
    const double held = at::scalar_tensor(eps, at::TensorOptions().dtype(dtype)).item<double>();
    EXPECT_GT(held, 0) << c10::toString(dtype) << ": eps " << eps << " is 0 in the dtype";
    EXPECT_NEAR(held, eps, eps * 1e-2) << c10::toString(dtype) << ": eps rounds in the dtype";
  }
  EXPECT_EQ(at::scalar_tensor(1e-8, at::TensorOptions().dtype(at::kHalf)).item<double>(), 0.0)
      << "LibTorch's default, 1e-8, is 0 in fp16";
}

/// Three AdamW steps on fp16 weights with small gradients (their squares underflow in fp16):
/// whether the weights stay finite with epsilon `eps`.
bool fp16_adamw_stays_finite(double eps) {
  at::manual_seed(0);
  at::Tensor w = at::randn({64, 64}).to(at::kHalf).requires_grad_(true);
  torch::optim::AdamW opt({w}, torch::optim::AdamWOptions(1e-4).eps(eps));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    (at::matmul(at::randn({8, 64}).to(at::kHalf), w) * 1e-3).sum().backward();
    opt.step();
  }
  return at::isfinite(w).all().item<bool>();
}

TEST(GpuDecisions, Fp16TrainingStaysFiniteWithTheDtypesEpsilon) {
  EXPECT_FALSE(fp16_adamw_stays_finite(1e-8)) << "the failure adamw_eps prevents";
  EXPECT_TRUE(fp16_adamw_stays_finite(pil::adamw_eps(at::kHalf)));
}

/// A folder of this test's own (removed with rm: in a process that links LibTorch,
/// std::filesystem::remove_all resolved to libtorch.so's copy and crashed; see aoti_test).
struct PackageDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("pil_gpu_decisions_" + std::to_string(::getpid()));
  PackageDir() { std::filesystem::create_directories(path); }
  ~PackageDir() { (void)std::system(("rm -rf '" + path.string() + "'").c_str()); }
};

TEST(GpuDecisions, CompiledIsAvailableOnAGpuWithoutItsPackageAndOnTheCpuOnlyWithIt) {
  const PackageDir dir;
  const pil::aoti::Spec spec{"range", {}, [](const Tensors& in) { return in; }};
  const pil::aoti::Build build{"99_decisions", dir.path.string(), "python3 compile.py", "", "cpu_fp32.pt2",
                               "cmake --build B --target 99_decisions_aoti"};
  const Variant v = pil::aoti::compiled_variant(spec, build);
  Options o;
  EXPECT_EQ(v.unavailable(Problem{o, kCuda, at::kBFloat16}), "") << "prepare() compiles it on the GPU";
  EXPECT_NE(v.unavailable(Problem{o, kCpu, at::kBFloat16}).find("no AOTInductor package cpu_bf16.pt2 (the build makes the ones the tests and docs use: cpu_fp32.pt2); compile it with: python3 compile.py"),
            std::string::npos);
  // A compile that failed at build time is said, with the command that reruns it; on a GPU,
  // prepare() tries again.
  std::ofstream(dir.path / "cpu_bf16.status") << "failed export: an error\n";
  EXPECT_EQ(v.unavailable(Problem{o, kCpu, at::kBFloat16}),
            "the build's AOTInductor compile failed at export: an error; rerun it: python3 compile.py --device cpu "
            "--dtype bf16 --out " + (dir.path / "cpu_bf16.pt2").string());
  std::ofstream(dir.path / "cuda_bf16.status") << "failed compile: an earlier try\n";
  EXPECT_EQ(v.unavailable(Problem{o, kCuda, at::kBFloat16}), "");
  // A package the build makes but has not made yet: the command that builds it, not a shape.
  EXPECT_EQ(v.unavailable(Problem{o, kCpu, at::kFloat}),
            "its package cpu_fp32.pt2 is one the build makes, and it has not been built yet; build it with: "
            "cmake --build B --target 99_decisions_aoti");
  // A file that is not a package: refused without loading anything.
  std::ofstream(dir.path / "cpu_fp32.pt2") << "not a zip archive";
  EXPECT_NE(v.unavailable(Problem{o, kCpu, at::kFloat}).find("cpu_fp32.pt2: not a readable AOTInductor package"),
            std::string::npos);
  // Without a Python torch nothing can be compiled anywhere.
  const Variant none = pil::aoti::compiled_variant(spec, {"99_decisions", dir.path.string(), "", "no python3", "", ""});
  EXPECT_EQ(none.unavailable(Problem{o, kCuda, at::kBFloat16}), "no AOTInductor package: no python3");
}

// prepare(): a GPU package that does not compile, and a CPU file that is no package, are skips
// (VariantUnavailable) with the reason; nothing is loaded blind.
TEST(GpuDecisions, CompiledPrepareTurnsAFailedCompileOrABadPackageIntoASkip) {
  const PackageDir dir;
  const pil::aoti::Spec spec{"range", {}, [](const Tensors& in) { return in; }};
  const Variant v = pil::aoti::compiled_variant(spec, {"99_decisions", dir.path.string(), "false", "", "", ""});
  Options o;
  try {
    v.prepare(Problem{o, kCuda, at::kBFloat16});
    ADD_FAILURE() << "a compile that fails must not pass";
  } catch (const pil::VariantUnavailable& e) {
    EXPECT_EQ(std::string(e.what()), "the AOTInductor compile for cuda:0 failed (command: false --device cuda "
                                     "--dtype bf16 --out " + (dir.path / "cuda_bf16.pt2").string() + ")");
  }
  std::ofstream(dir.path / "cpu_fp32.pt2") << "not a zip archive";
  try {
    v.prepare(Problem{o, kCpu, at::kFloat});
    ADD_FAILURE() << "a file that is no package must not load";
  } catch (const pil::VariantUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("cpu_fp32.pt2: not a readable AOTInductor package"), std::string::npos)
        << e.what();
  }
}

/// The command line of a `--variant all` run on the CPU: one warm-up call, one recorded step,
/// its files in `out`.
struct AllOnTheCpu {
  std::string dir;
  std::vector<const char*> argv;
  explicit AllOnTheCpu(const PackageDir& out) : dir(out.path.string()) {
    argv = {"99_decisions", "--device", "cpu", "--variant", "all", "--active", "1",
            "--warmup-calls", "1", "--out", dir.c_str()};
  }
  AllOnTheCpu(const AllOnTheCpu&) = delete;  // argv points into dir
};

// --variant all goes on past a variant that throws: its own FAILED line, the others still run,
// and the exit code says failed.
TEST(GpuDecisions, AVariantThatThrowsIsItsOwnFailure) {
  const PackageDir out;
  Lesson l = decisions_lesson();
  l.variants.erase(l.variants.begin() + 1, l.variants.end());
  l.variants.emplace_back("throws", "throws at its first call",
                          [](const Tensors&) -> at::Tensor { throw std::runtime_error("the library said no"); });
  l.variants.emplace_back("last", "runs after it", [](const Tensors& in) { return in.at(0) + 1; });
  l.variants.emplace_back("unprepared", "its preparation finds the machine lacking",
                          [](const Tensors& in) { return in.at(0) + 1; });
  l.variants.back().prepare = [](const Problem&) { throw pil::VariantUnavailable("no package here"); };
  l.make_inputs = [](const Problem&) { return Tensors{at::zeros({4, 4})}; };
  l.reference = [](const Tensors& in) { return in.at(0).to(at::kDouble) + 1; };
  l.memory_need = [](const Problem&) { return pil::MemoryNeed{}; };
  const AllOnTheCpu args(out);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int code = pil::run_lesson(l, int(args.argv.size()), args.argv.data());
  const std::string stdout_text = testing::internal::GetCapturedStdout();
  const std::string stderr_text = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 1);
  EXPECT_NE(stderr_text.find("99_decisions: variant throws: error: the library said no"), std::string::npos)
      << stderr_text;
  EXPECT_NE(stdout_text.find("| variant last |"), std::string::npos) << "the variant after it ran\n" << stdout_text;
  size_t passed = 0, failed = 0;
  for (size_t at = 0; (at = stdout_text.find("RESULT: ", at)) != std::string::npos; ++at)
    (stdout_text.compare(at, 14, "RESULT: PASSED") == 0 ? passed : failed) += 1;
  EXPECT_EQ(passed, 2u) << stdout_text;
  EXPECT_EQ(failed, 1u) << stdout_text;
  EXPECT_NE(stdout_text.find("99_decisions: variant unprepared left out: no package here"), std::string::npos)
      << stdout_text;
  // The failed variant recorded no step: no time in the comparison.
  EXPECT_NE(stdout_text.find("-  FAILED  throws"), std::string::npos) << stdout_text;

  // Asked for alone, a variant whose preparation fails is a skip (exit 77), not a failure.
  const char* one[] = {"99_decisions", "--device", "cpu", "--variant", "unprepared", "--out", args.dir.c_str()};
  testing::internal::CaptureStdout();
  const int skipped = pil::run_lesson(l, int(std::size(one)), one);
  const std::string skip_text = testing::internal::GetCapturedStdout();
  EXPECT_EQ(skipped, 77);
  EXPECT_NE(skip_text.find("--variant unprepared: no package here\nRESULT: SKIPPED"), std::string::npos) << skip_text;
}

// What a variant holds is freed when its run is over (after_variant: before the next variant
// starts), and what lives across variants (before_exit: a loaded package) when lesson_main
// returns, not in the destructors of globals at exit, which run after the CUDA runtime has shut
// down: a cudaFree or cudaEventRecord there fails, and a destructor that throws aborts.
TEST(GpuDecisions, WhatAVariantHoldsIsFreedBeforeMainReturns) {
  const PackageDir out;
  Lesson l = decisions_lesson();
  l.variants.erase(l.variants.begin() + 1, l.variants.end());
  l.variants.emplace_back("second", "runs after plain", [](const Tensors& in) { return in.at(0) + 1; });
  std::vector<std::string> events;
  l.make_inputs = [&events](const Problem&) {
    events.push_back("inputs");
    pil::after_variant([&events] { events.push_back("variant's state freed"); });
    return Tensors{at::zeros({4, 4})};
  };
  l.variants.back().prepare = [&events](const Problem&) {
    events.push_back("package loaded");
    pil::before_exit([&events] { events.push_back("package freed"); });
  };
  l.reference = [](const Tensors& in) { return in.at(0).to(at::kDouble) + 1; };
  l.memory_need = [](const Problem&) { return pil::MemoryNeed{}; };
  const AllOnTheCpu args(out);
  testing::internal::CaptureStdout();
  const int code = pil::lesson_main(l, int(args.argv.size()), const_cast<char**>(args.argv.data()));
  testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  const std::vector<std::string> expected = {"inputs",         "variant's state freed", "package loaded",
                                             "inputs",         "variant's state freed", "package freed"};
  EXPECT_EQ(events, expected);
  // Run once: nothing is left to run again.
  pil::release_before_exit();
  EXPECT_EQ(events.size(), expected.size());
}

}  // namespace
