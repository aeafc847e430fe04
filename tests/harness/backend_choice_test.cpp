// Lesson 05's backend choice as a function of plain inputs (flags, GPUs usable, ranks on this
// machine, the build), so it is tested here without a GPU; a GPU run only confirms it.
#include <gtest/gtest.h>

#include "harness/backend_choice.h"

namespace pil::dist {
namespace {

using Verdict = BackendDecision::Verdict;

TEST(BackendChoice, AutoPicksNcclOnlyWithAGpuPerRank) {
  const BackendDecision two = choose_backend(BackendChoice::Auto, DeviceChoice::Auto, 2, 2, true);
  EXPECT_EQ(two.verdict, Verdict::Run);
  EXPECT_EQ(two.backend, Backend::Nccl);
  EXPECT_EQ(two.device, DeviceChoice::Cuda);
  // One GPU, two ranks: NCCL cannot put two ranks on one GPU, so Gloo on the CPU, as --help says.
  const BackendDecision one = choose_backend(BackendChoice::Auto, DeviceChoice::Auto, 1, 2, true);
  EXPECT_EQ(one.verdict, Verdict::Run);
  EXPECT_EQ(one.backend, Backend::Gloo);
  EXPECT_EQ(one.device, DeviceChoice::Cpu);
  const BackendDecision none = choose_backend(BackendChoice::Auto, DeviceChoice::Auto, 0, 2, true);
  EXPECT_EQ(none.backend, Backend::Gloo);
  const BackendDecision no_build = choose_backend(BackendChoice::Auto, DeviceChoice::Auto, 4, 2, false);
  EXPECT_EQ(no_build.backend, Backend::Gloo) << "no NCCL in the build";
  const BackendDecision cpu = choose_backend(BackendChoice::Auto, DeviceChoice::Cpu, 4, 2, true);
  EXPECT_EQ(cpu.backend, Backend::Gloo) << "--device cpu";
}

TEST(BackendChoice, AskingForTheGpuWithoutAGpuPerRankIsASkip) {
  const BackendDecision auto_cuda = choose_backend(BackendChoice::Auto, DeviceChoice::Cuda, 1, 2, true);
  EXPECT_EQ(auto_cuda.verdict, Verdict::Skip);
  EXPECT_EQ(auto_cuda.why, "NCCL needs one CUDA GPU per rank: 2 ranks on this machine, 1 GPU(s) usable");
  const BackendDecision nccl = choose_backend(BackendChoice::Nccl, DeviceChoice::Auto, 0, 2, true);
  EXPECT_EQ(nccl.verdict, Verdict::Skip);
  const BackendDecision no_build = choose_backend(BackendChoice::Nccl, DeviceChoice::Cuda, 2, 2, false);
  EXPECT_EQ(no_build.verdict, Verdict::Skip);
  EXPECT_NE(no_build.why.find("NCCL is not in this build"), std::string::npos);
  const BackendDecision ok = choose_backend(BackendChoice::Nccl, DeviceChoice::Cuda, 8, 2, true);
  EXPECT_EQ(ok.verdict, Verdict::Run);
  EXPECT_EQ(ok.backend, Backend::Nccl);
}

TEST(BackendChoice, ContradictoryFlagsAreAUsageErrorWhateverTheMachine) {
  for (const int gpus : {0, 1, 8}) {
    const BackendDecision a = choose_backend(BackendChoice::Nccl, DeviceChoice::Cpu, gpus, 2, true);
    EXPECT_EQ(a.verdict, Verdict::Usage);
    EXPECT_EQ(a.why, backend_usage_error(BackendChoice::Nccl, DeviceChoice::Cpu));
    const BackendDecision b = choose_backend(BackendChoice::Gloo, DeviceChoice::Cuda, gpus, 2, true);
    EXPECT_EQ(b.verdict, Verdict::Usage);
  }
  EXPECT_EQ(backend_usage_error(BackendChoice::Nccl, DeviceChoice::Cpu),
            "--backend nccl runs on GPUs; allowed: --device cuda (or auto), or --backend gloo on the CPU");
  EXPECT_EQ(backend_usage_error(BackendChoice::Gloo, DeviceChoice::Cpu), "");
  EXPECT_EQ(backend_usage_error(BackendChoice::Auto, DeviceChoice::Cuda), "");
  const BackendDecision gloo = choose_backend(BackendChoice::Gloo, DeviceChoice::Auto, 8, 2, true);
  EXPECT_EQ(gloo.verdict, Verdict::Run);
  EXPECT_EQ(gloo.backend, Backend::Gloo);
}

}  // namespace
}  // namespace pil::dist
