#pragma once

// What this machine computes with: the CPU's instruction sets, the BLAS that LibTorch's matrix
// products run on and the kernel it chose, ATen's vector kernels, and whether bf16 is native.
// `pelab --version` and `pelab doctor` print it; every run records it (its log and summary).

#include <string>
#include <vector>

#include "pelab/base/export.h"

namespace pelab {

/// The instruction sets of this CPU that the operating system lets a process use: CPUID says what
/// the core has, XGETBV whether the OS saves the registers (AVX, AVX-512) and, for AMX, whether
/// it grants a process the tile state.
struct CpuFeatures {
  std::string vendor;      ///< "GenuineIntel", "AuthenticAMD", ...
  std::string model_name;  ///< the brand string, e.g. "Intel(R) Xeon(R) Platinum 8592+"
  int family = 0;
  int model = 0;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512 = false;  ///< F, BW, DQ and VL: what the AVX-512 kernels of OpenBLAS and ATen need
  bool avx512_bf16 = false;
  bool amx_bf16 = false;  ///< AMX tiles with bf16 products

  /// "AVX2, FMA, AVX-512, AVX512-BF16, no AMX"
  std::string isa_text() const;
  /// The widest vector class, as a rank: 1 SSE, 2 AVX, 3 AVX2 with FMA, 4 AVX-512.
  int vector_rank() const;
  bool is_amd() const { return vendor == "AuthenticAMD"; }
};

/// This CPU, read once per process.
PELAB_API const CpuFeatures& cpu_features();

/// Who chose the BLAS kernel in use.
enum class BlasKernelChoice {
  kDetected,     ///< OpenBLAS's own detection
  kEnvironment,  ///< OPENBLAS_CORETYPE, set by the user or the machine's administrator
  kPelab,        ///< pelab, because OpenBLAS's detection fell back below the CPU (blas_kernel.h)
};

/// The BLAS of this process, read through the symbols that the loaded OpenBLAS exports; else
/// LibTorch's own build configuration says which BLAS it was built with: the PyTorch wheels link
/// Intel's MKL statically (it picks its kernels itself, and exports nothing to ask); any other is
/// reported by that name, with no kernel to speak of.
struct BlasInfo {
  bool is_openblas = false;
  /// "OpenBLAS", "MKL", or LibTorch's BLAS_INFO for another ("generic", ...); "" when unknown.
  std::string library;
  std::string config;   ///< openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  std::string version;  ///< "0.3.21"; MKL's "2024.2"
  std::string kernel;   ///< openblas_get_corename(): "Prescott", "SkylakeX", "Zen", ...
  int threads = 0;      ///< openblas_get_num_threads()
  BlasKernelChoice choice = BlasKernelChoice::kDetected;
  std::string replaced;  ///< with kPelab: the kernel OpenBLAS had chosen itself

  /// "OpenBLAS 0.3.21, kernel SkylakeX (pelab's choice: OpenBLAS chose Prescott)"
  std::string text() const;
};

/// The BLAS as it is now (its thread count changes with torch::set_num_threads).
PELAB_API BlasInfo blas_info();

/// Everything a result depends on beside the code and the data.
struct HostInfo {
  CpuFeatures cpu;
  BlasInfo blas;
  /// The vector kernels ATen dispatches to: "AVX512", "AVX2" or "DEFAULT", chosen by the rule
  /// ATen uses (ATEN_CPU_CAPABILITY when set, else the CPU).
  std::string aten_kernels;
  /// oneDNN multiplies bf16 in hardware (AVX512-BF16 or AMX); elsewhere bf16 is emulated.
  bool bf16_native = false;
  /// What a user should know: a slow BLAS kernel, an emulated bf16. Empty when all is well.
  std::vector<std::string> warnings;
};

PELAB_API HostInfo host_info();

/// A few lines, one a subject (cpu, blas, aten, bf16), then one per warning: for `pelab --version`
/// and `pelab doctor`.
PELAB_API std::string host_report(const HostInfo& host);

/// One line, for a run's log: "cpu ...; blas ...; aten AVX512; bf16 native".
PELAB_API std::string host_line(const HostInfo& host);

/// The machine's physical memory, in bytes (0 when the system does not say).
PELAB_API double physical_memory_bytes();

/// "65.5 GB", "512 MB": decimal units, as memory is usually quoted.
PELAB_API std::string format_bytes(double bytes);

/// Refuses data that cannot fit in this machine's memory, before anything is allocated: throws
/// pelab::Error "<what> needs <bytes> for <detail>; this machine has <memory>. <remedy>" when
/// `bytes` exceeds the physical memory (a bad_alloc or the OOM killer would say it later, worse).
PELAB_API void check_fits_in_memory(double bytes, const std::string& what,
                                    const std::string& detail, const std::string& remedy);

/// Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX-BF16). Elsewhere bf16
/// autocast runs, but emulated and slower than fp32.
PELAB_API bool cpu_has_native_bf16();

}  // namespace pelab
