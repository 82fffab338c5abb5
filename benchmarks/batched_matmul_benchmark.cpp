// pelab::batched_matmul against torch::matmul on attention's two products (q·kᵀ, then p·v),
// forward and backward, side by side in one process:
//
//   pelab_batched_matmul_benchmark [--threads=N] [Google Benchmark flags]
//
// Arguments: batch, heads, tokens, head_dim. The first two shapes are the quick protocol's and the
// paper's attention; the last is above kSmallMatmulMaxWork, where both are torch::matmul.

#include <vector>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "benchmark_main.h"
#include "pelab/model/batched_matmul.h"

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
  return pelab::bench::run_benchmarks_with_threads_flag(argc, argv);
}
