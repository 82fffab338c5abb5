#pragma once

// The right OpenBLAS kernel by default. OpenBLAS picks its kernel when it is loaded, from its
// table of CPU models; a release that does not know a CPU falls back hard (Debian 12's 0.3.21
// runs its SSE3 "Prescott" kernel on Emerald Rapids, 3-10x slower than its AVX-512 one). It
// reads OPENBLAS_CORETYPE only at load time, so pelab re-executes itself once with it set: execve
// keeps the pid, so -j workers, ranks, Slurm tasks and torchrun see nothing of it.
//
// Never changes a value the user set; PELAB_BLAS_KERNEL=keep turns it off (docs/performance.md).

#include <optional>
#include <string>

#include "pelab/base/export.h"
#include "pelab/host/host_info.h"

namespace pelab {

/// The environment variable that turns the choice off ("keep": OpenBLAS's own kernel).
inline constexpr const char* kBlasKernelSwitch = "PELAB_BLAS_KERNEL";
/// Set by pelab beside OPENBLAS_CORETYPE when pelab chose the kernel: OpenBLAS's own choice, so
/// that the re-executed process (and its -j workers) know the value is pelab's and what it
/// replaced.
inline constexpr const char* kBlasReplacedVariable = "PELAB_BLAS_REPLACED";

/// The kernel to use instead of the one OpenBLAS chose, when its choice is a fallback below what
/// the CPU runs (an SSE kernel on an AVX2 or AVX-512 CPU, an AVX2 kernel on an Intel AVX-512 one);
/// nullopt when the choice is right, unknown, or OpenBLAS's deliberate choice for the CPU (its
/// Zen kernels on AMD). The result is a kernel of every OpenBLAS since 0.3.10.
PELAB_API std::optional<std::string> better_blas_kernel(const CpuFeatures& cpu,
                                                        const std::string& chosen_kernel);

/// How a small set of single-precision products through LibTorch (the BLAS path, edge tiles and
/// transposes included) compares with a double-precision reference computed without BLAS.
struct GemmCheck {
  bool agrees = false;
  double worst = 0;  ///< the largest error as a fraction of its bound (agrees when <= 1)
  std::string detail;
};
PELAB_API GemmCheck check_gemm_against_reference();

/// For a command that computes (run, probe, bench, doctor): when OpenBLAS fell back, re-execute
/// this process once with the better kernel and say so in one line on stderr; in the process that
/// was re-executed, check that the kernel took and that its products agree with the reference,
/// and otherwise go back to OpenBLAS's own choice with a warning. Returns only when no
/// re-execution is needed (or possible: it then warns).
PELAB_API void use_best_blas_kernel(char** argv);

}  // namespace pelab
