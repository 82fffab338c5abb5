// What pelab reports about the host: the CPU, the BLAS and its kernel, memory.

#include "pelab/host/host_info.h"

#include <cstdlib>

#include <ATen/Version.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pelab/base/error.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(CpuFeatures, AreConsistent) {
  const CpuFeatures& cpu = cpu_features();
  EXPECT_FALSE(cpu.vendor.empty());
  // Each class implies the one below it, as the kernels ranked by vector_rank assume.
  if (cpu.avx512_bf16) EXPECT_TRUE(cpu.avx512);
  if (cpu.avx2) EXPECT_TRUE(cpu.avx);
  if (cpu.fma) EXPECT_TRUE(cpu.avx);
  EXPECT_GE(cpu.vector_rank(), 1);
  EXPECT_LE(cpu.vector_rank(), 4);
  EXPECT_THAT(cpu.isa_text(), HasSubstr("AMX"));  // "AMX-BF16" or "no AMX": always said
}

TEST(CpuFeatures, IsaTextNamesEachClass) {
  CpuFeatures cpu;
  cpu.avx = cpu.avx2 = cpu.fma = cpu.avx512 = cpu.avx512_bf16 = true;
  EXPECT_EQ(cpu.isa_text(), "AVX2, FMA, AVX-512, AVX512-BF16, no AMX");
  EXPECT_EQ(cpu.vector_rank(), 4);
  cpu.avx512 = cpu.avx512_bf16 = false;
  EXPECT_EQ(cpu.vector_rank(), 3);
  EXPECT_EQ(CpuFeatures{}.isa_text(), "SSE only, no AMX");
}

// Which BLAS LibTorch was built with, as its build configuration says.
bool libtorch_has_mkl() {
  return at::show_config().find("BLAS_INFO=mkl") != std::string::npos;
}

// The suite's set-up installs Debian's OpenBLAS (libopenblas0-openmp): Debian's LibTorch runs on
// it. A PyTorch wheel's LibTorch has Intel's MKL linked in, and says so.
TEST(BlasInfo, ReadsTheLoadedOpenBlas) {
  const BlasInfo blas = blas_info();
  if (libtorch_has_mkl()) {
    EXPECT_FALSE(blas.is_openblas);
    EXPECT_EQ(blas.library, "MKL");
    EXPECT_THAT(blas.version, MatchesRegex("[0-9]+\\.[0-9]+.*"));
    EXPECT_THAT(blas.text(), HasSubstr("Intel MKL " + blas.version));
    EXPECT_TRUE(host_info().warnings.empty() ||
                host_info().warnings.front().find("BLAS") == std::string::npos);
    return;
  }
  ASSERT_TRUE(blas.is_openblas) << "LibTorch is not on OpenBLAS here";
  EXPECT_FALSE(blas.kernel.empty());
  EXPECT_THAT(blas.config, HasSubstr("OpenBLAS"));
  EXPECT_THAT(blas.version, MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+.*"));
  EXPECT_GE(blas.threads, 1);
  // A test process never re-executes itself: the kernel is OpenBLAS's, or the environment's.
  const bool from_environment = std::getenv("OPENBLAS_CORETYPE") != nullptr;
  EXPECT_EQ(blas.choice,
            from_environment ? BlasKernelChoice::kEnvironment : BlasKernelChoice::kDetected);
  EXPECT_THAT(blas.text(), HasSubstr("kernel " + blas.kernel));
}

TEST(HostReport, SaysEverySubject) {
  const HostInfo host = host_info();
  const std::string report = host_report(host);
  for (const char* subject : {"cpu:", "blas:", "aten:", "bf16:"})
    EXPECT_THAT(report, HasSubstr(subject));
  EXPECT_THAT(host_line(host), HasSubstr(libtorch_has_mkl() ? "blas Intel MKL" : "blas OpenBLAS"));
  EXPECT_EQ(host.bf16_native, cpu_has_native_bf16());
}

TEST(Memory, FormatsAndRefusesWhatCannotFit) {
  EXPECT_EQ(format_bytes(65.536e9), "65.5 GB");
  EXPECT_EQ(format_bytes(512e6), "512 MB");
  const double memory = physical_memory_bytes();
  ASSERT_GT(memory, 0.0);
  EXPECT_NO_THROW(check_fits_in_memory(memory / 4, "a task", "its data", "Use less."));
  try {
    check_fits_in_memory(memory * 4, "the network_simulation task", "1000000 windows", "Use less.");
    FAIL() << "four times the machine's memory fitted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the network_simulation task needs "));
    EXPECT_THAT(e.what(), HasSubstr("for 1000000 windows; this machine has "));
    EXPECT_THAT(e.what(), HasSubstr("Use less."));
  }
}

}  // namespace
}  // namespace pelab
