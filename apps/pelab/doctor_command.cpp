#include "doctor_command.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "command.h"
#include "pelab/host/blas_kernel.h"
#include "pelab/host/host_info.h"

namespace pelab::cli {
namespace {

// The product of the paper's model's MLP on one batch (2048 tokens of width 160 into 640): the
// same shape as the issue tracker's and the benchmarks' matrix rates.
constexpr std::int64_t kRows = 2048, kInner = 160, kColumns = 640;

// bf16 is worth its rounding for sweeps only where its products are clearly faster.
constexpr double kBf16AdviceRatio = 1.5;

// The median rate of repeated products, in GFLOP/s; a rate, not a test: the machine may be shared.
double matrix_rate(torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  const torch::Tensor a = torch::randn({kRows, kInner}).to(dtype);
  const torch::Tensor b = torch::randn({kInner, kColumns}).to(dtype);
  torch::Tensor c = torch::mm(a, b);  // warm-up: threads, oneDNN's kernel choice
  std::vector<double> seconds;
  for (int repeat = 0; repeat < 15; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i)
      torch::mm_out(c, a, b);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 10);
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return 2.0 * kRows * kInner * kColumns / seconds[seconds.size() / 2] / 1e9;
}

}  // namespace

DoctorCommand::DoctorCommand(CLI::App& app)
    : Command(
          app, "doctor",
          "What this machine computes with (CPU, BLAS kernel, ATen kernels, bf16), a check of the "
          "BLAS against a double-precision reference, and its matrix rate in fp32 and bf16") {
  command_->add_option("--threads", threads_, "Threads for the matrix rates")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
}

int DoctorCommand::execute() {
  torch::set_num_threads(threads_);
  const GemmCheck check = check_gemm_against_reference();
  const HostInfo host = host_info();
  fmt::print("{}\n{}", version_text(), host_report(host));
  fmt::print("check: sgemm against a double-precision reference: {} ({})\n",
             check.agrees ? "agrees" : "DISAGREES", check.detail);
  const double fp32 = matrix_rate(torch::kFloat32);
  const double bf16 = matrix_rate(torch::kBFloat16);
  fmt::print(
      "rate:  {}x{} by {}x{} at {} thread{}, median of 15: fp32 {:.0f} GFLOP/s, bf16 {:.0f} "
      "GFLOP/s ({})\n",
      kRows, kInner, kInner, kColumns, threads_, threads_ == 1 ? "" : "s", fp32, bf16,
      host.bf16_native ? "native" : "emulated");
  // Advice follows the measured rates, not the feature flags: AVX512-BF16 alone made bf16 products
  // 2.1x fp32's on an AMD EPYC but 0.6x on an Emerald Rapids Xeon. It holds only as far as
  // docs/performance.md's fp32-against-bf16 comparison reaches.
  if (host.bf16_native && bf16 >= kBf16AdviceRatio * fp32) {
    fmt::print(
        "advice: this CPU multiplies bf16 {:.1f}x as fast as fp32 ({}): train.precision = "
        "\"bf16\" trained the paper model 1.8x-2.2x faster on the hosts measured, and "
        "reached fp32's conclusions at 10 seeds on the network task and the Latin Square (a "
        "large-norm PE's single seed can end elsewhere, as another seed would). Use bf16 for "
        "sweeps, fp32 to confirm a claim about one run (docs/performance.md, \"Reduced "
        "precision\")\n",
        bf16 / fp32, cpu_features().amx_bf16 ? "AMX tiles" : "AVX512-BF16");
  }
  return check.agrees ? 0 : 1;
}

}  // namespace pelab::cli
