#include "pelab/host/blas_kernel.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include "base/environment.h"
#include "pelab/base/error.h"

namespace pelab {
namespace {

constexpr const char* kCoreTypeVariable = "OPENBLAS_CORETYPE";

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The vector class of an x86 OpenBLAS kernel (the names openblas_get_corename returns), ranked as
// CpuFeatures::vector_rank; 0 for a name this table does not know, which is never replaced.
int kernel_rank(const std::string& kernel) {
  static const std::pair<const char*, int> kRanks[] = {
      {"katmai", 1},        {"coppermine", 1}, {"northwood", 1},   {"prescott", 1},
      {"banias", 1},        {"core2", 1},      {"penryn", 1},      {"dunnington", 1},
      {"nehalem", 1},       {"atom", 1},       {"opteron", 1},     {"opteron_sse3", 1},
      {"barcelona", 1},     {"bobcat", 1},     {"nano", 1},        {"sandybridge", 2},
      {"bulldozer", 2},     {"piledriver", 2}, {"steamroller", 2}, {"haswell", 3},
      {"zen", 3},           {"excavator", 3},  {"skylakex", 4},    {"cooperlake", 4},
      {"sapphirerapids", 4}};
  const std::string name = lowercase(kernel);
  for (const auto& [known, rank] : kRanks) {
    if (name == known) return rank;
  }
  return 0;
}

// Replaces this process by the same program with the same arguments and the environment as it
// now is. Returns only when that failed, with the reason.
std::string execute_again(char** argv) {
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  return std::strerror(errno);
}

// In the process pelab re-executed: keep the new kernel if it took and computes right, else go
// back to OpenBLAS's own choice (and keep it: the switch is set for this process's children).
void verify_chosen_kernel(const BlasInfo& blas, char** argv) {
  // Set by pelab before it re-executed; an empty name (never a null string) if a user cleared it.
  const char* chosen = environment_value(kCoreTypeVariable);
  const std::string wanted = chosen != nullptr ? chosen : "";
  std::string problem;
  if (lowercase(blas.kernel) != lowercase(wanted)) {
    problem = fmt::format("this OpenBLAS has no {} kernel (it loaded {})", wanted, blas.kernel);
  } else {
    const GemmCheck check = check_gemm_against_reference();
    if (!check.agrees)
      problem = fmt::format("its {} kernel computes wrong products: {}", wanted, check.detail);
  }
  if (problem.empty()) return;
  fmt::print(stderr, "warning: BLAS: {}; going back to OpenBLAS's own kernel, {}\n", problem,
             blas.replaced);
  unsetenv(kCoreTypeVariable);
  unsetenv(kBlasReplacedVariable);
  setenv(kBlasKernelSwitch, "keep", 1);
  const std::string failure = execute_again(argv);
  fmt::print(stderr, "warning: BLAS: could not re-execute pelab ({}); continuing with {}\n",
             failure, blas.kernel);
}

}  // namespace

std::optional<std::string> better_blas_kernel(const CpuFeatures& cpu,
                                              const std::string& chosen_kernel) {
  const int have = kernel_rank(chosen_kernel);
  const int can = cpu.vector_rank();
  if (have == 0 || have >= can) return std::nullopt;
  // OpenBLAS runs its Zen kernels (AVX2 class) on AMD CPUs by design, AVX-512 ones included: a
  // deliberate choice, and results on those hosts must not change.
  if (cpu.is_amd() && have >= 3) return std::nullopt;
  switch (can) {
    case 4:
      return std::string(cpu.avx512_bf16 ? "Cooperlake" : "SkylakeX");
    case 3:
      return std::string("Haswell");
    case 2:
      return std::string("Sandybridge");
    default:
      return std::nullopt;
  }
}

GemmCheck check_gemm_against_reference() {
  torch::NoGradGuard no_grad;
  auto generator = at::detail::createCPUGenerator(2406082272);
  struct Shape {
    std::int64_t m, k, n;
    bool transpose_a, transpose_b;
  };
  // Sizes off every kernel's tile multiples (the edge code is where kernels differ), both
  // transposes, and one product large enough to be split across threads.
  const Shape shapes[] = {{67, 45, 83, false, false},
                          {33, 160, 17, true, false},
                          {128, 96, 70, false, true},
                          {5, 7, 3, true, true},
                          {300, 160, 257, false, false}};
  GemmCheck result;
  result.agrees = true;
  for (const Shape& shape : shapes) {
    const torch::TensorOptions options = torch::dtype(torch::kFloat32);
    torch::Tensor a = shape.transpose_a ? torch::randn({shape.k, shape.m}, generator, options).t()
                                        : torch::randn({shape.m, shape.k}, generator, options);
    torch::Tensor b = shape.transpose_b ? torch::randn({shape.n, shape.k}, generator, options).t()
                                        : torch::randn({shape.k, shape.n}, generator, options);
    const torch::Tensor product = torch::mm(a, b);
    const auto pa = a.accessor<float, 2>();
    const auto pb = b.accessor<float, 2>();
    const auto pc = product.accessor<float, 2>();
    for (std::int64_t i = 0; i < shape.m; ++i) {
      for (std::int64_t j = 0; j < shape.n; ++j) {
        double exact = 0, magnitude = 0;
        for (std::int64_t p = 0; p < shape.k; ++p) {
          const double term = static_cast<double>(pa[i][p]) * pb[p][j];
          exact += term;
          magnitude += std::abs(term);
        }
        // The classic bound on a float dot product's rounding error, k * eps * sum |a b|, with
        // room for the accumulation orders kernels use; a wrong kernel is off by O(magnitude).
        const double bound = 2.0 * static_cast<double>(shape.k) * FLT_EPSILON * magnitude + 1e-30;
        const double error = std::abs(static_cast<double>(pc[i][j]) - exact);
        const double fraction = std::isfinite(error) ? error / bound : HUGE_VAL;
        if (fraction > result.worst) {
          result.worst = fraction;
          if (fraction > 1.0) {
            result.agrees = false;
            result.detail = fmt::format(
                "{}x{} by {}x{}{}{}: element ({}, {}) is {} where the double-precision reference "
                "gives {}",
                shape.m, shape.k, shape.k, shape.n, shape.transpose_a ? ", A transposed" : "",
                shape.transpose_b ? ", B transposed" : "", i, j, pc[i][j], exact);
          }
        }
      }
    }
  }
  if (result.agrees) {
    result.detail = fmt::format("the largest error is {:.2g} of its bound", result.worst);
  }
  return result;
}

void use_best_blas_kernel(char** argv) {
  if (const char* setting = environment_value(kBlasKernelSwitch)) {
    const std::string value = setting;
    if (value == "keep") return;
    PELAB_CHECK(value == "auto",
                "{}={}: use keep (OpenBLAS's own kernel choice) or auto (pelab's choice where "
                "OpenBLAS fell back below the CPU, the default)",
                kBlasKernelSwitch, value);
  }
  const BlasInfo blas = blas_info();
  if (!blas.is_openblas) return;
  if (blas.choice == BlasKernelChoice::kPelab) return verify_chosen_kernel(blas, argv);
  if (blas.choice == BlasKernelChoice::kEnvironment) return;  // a value someone set: never changed
  const auto better = better_blas_kernel(cpu_features(), blas.kernel);
  if (!better) return;
  fmt::print(stderr,
             "note: OpenBLAS chose its {} kernel, below this CPU ({}); pelab uses its {} kernel "
             "({}=keep keeps OpenBLAS's choice)\n",
             blas.kernel, cpu_features().isa_text(), *better, kBlasKernelSwitch);
  setenv(kCoreTypeVariable, better->c_str(), 1);
  setenv(kBlasReplacedVariable, blas.kernel.c_str(), 1);
  const std::string failure = execute_again(argv);
  unsetenv(kCoreTypeVariable);
  unsetenv(kBlasReplacedVariable);
  fmt::print(stderr, "warning: BLAS: could not re-execute pelab ({}); continuing with {}\n",
             failure, blas.kernel);
}

}  // namespace pelab
