// The BLAS kernel pelab chooses where OpenBLAS fell back, and the check it runs before trusting
// one.

#include "pelab/host/blas_kernel.h"

#include <gtest/gtest.h>

namespace pelab {
namespace {

CpuFeatures intel(int rank, bool bf16 = false) {
  CpuFeatures cpu;
  cpu.vendor = "GenuineIntel";
  cpu.avx = rank >= 2;
  cpu.avx2 = cpu.fma = rank >= 3;
  cpu.avx512 = rank >= 4;
  cpu.avx512_bf16 = rank >= 4 && bf16;
  return cpu;
}

CpuFeatures amd(int rank) {
  CpuFeatures cpu = intel(rank);
  cpu.vendor = "AuthenticAMD";
  return cpu;
}

TEST(BetterBlasKernel, ReplacesAHardFallbackWithTheBestKernelForTheCpu) {
  // Debian 12's OpenBLAS 0.3.21 on Emerald Rapids (AVX-512 with BF16): Prescott.
  EXPECT_EQ(better_blas_kernel(intel(4, true), "Prescott"), "Cooperlake");
  EXPECT_EQ(better_blas_kernel(intel(4), "Prescott"), "SkylakeX");
  EXPECT_EQ(better_blas_kernel(intel(4), "Haswell"), "SkylakeX");
  EXPECT_EQ(better_blas_kernel(intel(3), "Nehalem"), "Haswell");
  EXPECT_EQ(better_blas_kernel(intel(2), "Core2"), "Sandybridge");
  EXPECT_EQ(better_blas_kernel(amd(3), "Prescott"), "Haswell");
  EXPECT_EQ(better_blas_kernel(intel(4, true), "PRESCOTT"), "Cooperlake");  // any case
}

TEST(BetterBlasKernel, KeepsAKernelThatFitsTheCpu) {
  EXPECT_EQ(better_blas_kernel(intel(4, true), "Cooperlake"), std::nullopt);
  EXPECT_EQ(better_blas_kernel(intel(4), "SkylakeX"), std::nullopt);
  EXPECT_EQ(better_blas_kernel(intel(3), "Haswell"), std::nullopt);
  EXPECT_EQ(better_blas_kernel(intel(1), "Prescott"), std::nullopt);
  // A kernel above the CPU is OpenBLAS's business (it would not run): never "upgraded" down.
  EXPECT_EQ(better_blas_kernel(intel(3), "SkylakeX"), std::nullopt);
}

TEST(BetterBlasKernel, KeepsOpenBlasDeliberateZenChoiceOnAmd) {
  // OpenBLAS runs its Zen kernels on AMD CPUs with AVX-512 too: results there must not change.
  EXPECT_EQ(better_blas_kernel(amd(4), "Zen"), std::nullopt);
  EXPECT_EQ(better_blas_kernel(amd(4), "Excavator"), std::nullopt);
}

TEST(BetterBlasKernel, LeavesAKernelItDoesNotKnowAlone) {
  EXPECT_EQ(better_blas_kernel(intel(4, true), "ARMV8"), std::nullopt);
  EXPECT_EQ(better_blas_kernel(intel(4, true), ""), std::nullopt);
}

// Whatever kernel this host runs, its products agree with the double-precision reference: the
// check pelab runs before trusting a kernel it chose passes on a right one.
TEST(GemmCheck, AgreesOnThisHostsKernel) {
  const GemmCheck check = check_gemm_against_reference();
  EXPECT_TRUE(check.agrees) << check.detail;
  EXPECT_GT(check.worst, 0.0);  // it compared something
  EXPECT_LE(check.worst, 1.0);
}

}  // namespace
}  // namespace pelab
