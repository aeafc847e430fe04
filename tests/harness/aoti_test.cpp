// The AOTInductor adapter (common/harness/aoti.h) refuses what it cannot run with one line and
// never aborts: a file that is not a package, a package made for another lesson or shape, and
// inputs of another shape or dtype. Uses the packages the build compiled for lessons 01 and 04.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/version.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/aoti.h"

namespace {

using pil::aoti::Expected;
using pil::aoti::Package;
using pil::aoti::PackageRefused;

const std::string kDir = PIL_AOTI_PACKAGES;  // <build>/aoti
const std::string kLesson01 = kDir + "/01_matmul_add/cpu_fp32.pt2";
const std::string kLesson04 = kDir + "/04_transformer/cpu_fp32_heads4_head-dim32.pt2";
const Expected kMatmulAdd{"01_matmul_add", "cpu", "fp32", ""};

/// A file of this test (the test support's TempDir and run_process are not used here: in a
/// process that links LibTorch, their std::filesystem::remove_all resolved to libtorch.so's copy
/// and crashed).
struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() /
              ("pil_aoti_test_" + std::to_string(::getpid()) + "_" + name)).string()) {}
  ~ScratchFile() { std::remove(path.c_str()); }
};

/// The one-line reason `open` is refused with; fails the test when it is not refused.
std::string refused_with(const std::string& path, const Expected& expected) {
  try {
    Package p(path, expected);
  } catch (const PackageRefused& e) {
    const std::string why = e.what();
    EXPECT_EQ(why.find('\n'), std::string::npos) << "one line: " << why;
    return why;
  }
  ADD_FAILURE() << path << " was not refused";
  return {};
}

void need(const std::string& path) {
  if (std::string(PIL_AOTI_COMPILE).empty()) GTEST_SKIP() << "no package built: " << PIL_AOTI_NO_COMPILER;
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " (the build compiles it; see its .status)";
}

TEST(Aoti, ACorruptFileIsRefusedNotLoaded) {
  const ScratchFile bad("cpu_fp32.pt2");
  std::ofstream(bad.path) << "not a zip archive";
  EXPECT_NE(refused_with(bad.path, kMatmulAdd).find("cpu_fp32.pt2: not a readable AOTInductor package (not a zip archive"),
            std::string::npos);
  EXPECT_NE(refused_with(bad.path + ".missing", kMatmulAdd).find("not a readable AOTInductor package (no such file)"),
            std::string::npos);
}

TEST(Aoti, APackageOfAnotherLessonOrShapeIsRefused) {
  need(kLesson04);
  EXPECT_NE(refused_with(kLesson04, kMatmulAdd).find("made for lesson '04_transformer', this run needs '01_matmul_add'"),
            std::string::npos);
  const Expected other_heads{"04_transformer", "cpu", "fp32", "--head-dim 32 --heads 8"};
  EXPECT_NE(refused_with(kLesson04, other_heads).find("made for flags '--head-dim 32 --heads 4', this run needs "
                                                 "'--head-dim 32 --heads 8'"), std::string::npos);
  const Expected bf16{"01_matmul_add", "cpu", "bf16", ""};
  need(kLesson01);
  EXPECT_NE(refused_with(kLesson01, bf16).find("made for dtype 'fp32', this run needs 'bf16'"), std::string::npos);
}

TEST(Aoti, AStalePackageOfAnotherTorchIsRefused) {
  need(kLesson01);
  const ScratchFile stale("stale.pt2");
  const std::string make = std::string(PIL_PYTHON) + " " + PIL_STALE_SCRIPT + " " + kLesson01 + " " +
                           stale.path + " 2.10.0";
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  EXPECT_NE(refused_with(stale.path, kMatmulAdd).find(std::string("made for torch '2.10.0', this run needs '") +
                                            TORCH_VERSION + "'"), std::string::npos);
}

TEST(Aoti, InputsOfAnotherShapeOrDtypeAreRefusedBeforeTheRun) {
  need(kLesson01);
  Package p(kLesson01, kMatmulAdd);
  const auto t = [](int64_t n, at::ScalarType dtype = at::kFloat) { return at::randn({n, n}).to(dtype); };
  EXPECT_EQ(p.check_inputs({t(8), t(8), t(8)}), "");
  EXPECT_NE(p.check_inputs({t(8), t(4), t(8)}).find("package input w: has shape [4,4]; the package takes w[n,n]"),
            std::string::npos) << p.check_inputs({t(8), t(4), t(8)});
  EXPECT_NE(p.check_inputs({t(8), t(8)}).find("takes 3 inputs, given 2"), std::string::npos);
  EXPECT_NE(p.check_inputs({t(8), t(8), t(8, at::kBFloat16)}).find("is bf16 on cpu, not fp32 on cpu"),
            std::string::npos);
  EXPECT_NE(p.check_inputs({at::randn({8}), t(8), t(8)}).find("has shape [8]"), std::string::npos);
  // And what it accepts, it computes: x·w + b.
  const at::Tensor x = t(16), w = t(16), b = t(16);
  EXPECT_TRUE(at::allclose(p.run({x, w, b}), at::addmm(b, x, w), 1e-4, 1e-4));
}

}  // namespace
