// CUPTI's names turned into Kineto's (common/cuda/names.h), checked without a GPU.
#include "cuda/names.h"

#include <gtest/gtest.h>

namespace pil::cuda {
namespace {

TEST(CudaNames, ApiNamesLoseCuptisVersionSuffix) {
  EXPECT_EQ(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(api_name("cudaGraphLaunch_v10000"), "cudaGraphLaunch");
  EXPECT_EQ(api_name("cudaLaunchKernelExC_v11060"), "cudaLaunchKernelExC");
  EXPECT_EQ(api_name("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel_ptsz");
  EXPECT_EQ(api_name("cudaMemcpyAsync_v3020"), "cudaMemcpyAsync");
  EXPECT_EQ(api_name("cuMemAlloc_v2"), "cuMemAlloc");
}

TEST(CudaNames, ApiNamesWithoutASuffixStayAsTheyAre) {
  EXPECT_EQ(api_name("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(api_name("cudaDeviceSynchronize"), "cudaDeviceSynchronize");
  EXPECT_EQ(api_name("cuLaunchKernelEx"), "cuLaunchKernelEx");
  EXPECT_EQ(api_name("my_v"), "my_v");
  EXPECT_EQ(api_name("my_v2x"), "my_v2x");
  EXPECT_EQ(api_name("_v7000"), "_v7000");
  EXPECT_EQ(api_name(""), "");
}

TEST(CudaNames, KernelNamesAreDemangledAsKinetoShowsThem) {
  EXPECT_EQ(kernel_name("_Z10add_kernelPfi"), "add_kernel(float*, int)");
  EXPECT_EQ(kernel_name("_ZN8lesson0115bias_add_kernelI6__halfEEvPT_PKS2_ii"),
            "void lesson01::bias_add_kernel<__half>(__half*, __half const*, int, int)");
}

TEST(CudaNames, NamesThatAreNotMangledStayAsTheyAre) {
  EXPECT_EQ(kernel_name("nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NNT"),
            "nvjet_sm90_tst_128x256_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(kernel_name("_Zgarbage"), "_Zgarbage");
  EXPECT_EQ(kernel_name(""), "");
}

}  // namespace
}  // namespace pil::cuda
