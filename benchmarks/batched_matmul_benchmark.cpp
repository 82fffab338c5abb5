// pelab::batched_matmul against torch::matmul on attention's two products (q·kᵀ, then p·v),
// forward and backward, side by side in one process:
//
//   pelab_batched_matmul_benchmark [--threads=N] [Google Benchmark flags]
//
// Arguments: batch, heads, tokens, head_dim. The first two shapes are the quick protocol's and the
// paper's attention; the last is above kSmallMatmulMaxWork, where both are torch::matmul.

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "pelab/host/blas_kernel.h"
#include "pelab/host/host_info.h"
#include "pelab/model/batched_matmul.h"
#include "pelab/training/trainer.h"

namespace {

template <typename Multiply>
void BM_AttentionProducts(benchmark::State& state, Multiply multiply) {
  const std::int64_t batch = state.range(0), heads = state.range(1), tokens = state.range(2),
                     head_dim = state.range(3);
  torch::manual_seed(0);
  // q, k and v as attention sees them: permuted slices of one fused projection.
  const torch::Tensor projection =
      torch::randn({batch, tokens, 3, heads, head_dim}).requires_grad_();
  const torch::Tensor grad = torch::randn({batch, heads, tokens, head_dim});
  for (auto _ : state) {
    const std::vector<torch::Tensor> qkv = projection.permute({2, 0, 3, 1, 4}).unbind(0);
    const torch::Tensor logits = multiply(qkv[0], qkv[1].transpose(-2, -1));
    multiply(torch::softmax(logits, -1), qkv[2]).backward(grad);
    benchmark::DoNotOptimize(projection.grad().data_ptr());
    projection.mutable_grad().reset();
  }
  state.counters["threads"] = torch::get_num_threads();
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "heads", "tokens", "head_dim"});
  b->Args({128, 1, 16, 64});   // quick.toml
  b->Args({128, 1, 16, 160});  // the paper's model
  b->Args({32, 8, 64, 32});
  b->Args({8, 8, 256, 64});  // above the direct kernel's limit
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_AttentionProducts, pelab, &pelab::batched_matmul)->Apply(shapes);
BENCHMARK_CAPTURE(BM_AttentionProducts, torch_matmul,
                  [](const torch::Tensor& a, const torch::Tensor& b) {
                    return torch::matmul(a, b);
                  })
    ->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  // As pelab does, before Google Benchmark edits argv: the right BLAS kernel where OpenBLAS fell
  // back, and what computed the figures in the benchmark's context (JSON output included).
  pelab::use_best_blas_kernel(argv);
  benchmark::Initialize(&argc, argv);
  pelab::keep_freed_memory_for_reuse();  // as in training: no page faults from fresh mmaps
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      torch::set_num_threads(std::atoi(argv[i] + 10));
    } else {
      std::cerr << "unknown flag '" << argv[i] << "'; use --threads=N or Google Benchmark's\n";
      return 2;
    }
  }
  benchmark::AddCustomContext("pelab_host", pelab::host_line(pelab::host_info()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
