// A matrix product whose input holds subnormal floats, with them flushed to zero (pelab's
// default, train.flush_subnormals) and with IEEE gradual underflow (LibTorch's default), side by
// side in one process:
//
//   pelab_subnormals_benchmark [--threads=N] [Google Benchmark flags]
//
// Arguments: the matrices' size n (n x n times n x n) and the percentage of the right operand's
// entries that are subnormal. A softmax that underflows, or a gradient that does, makes such
// entries in training; on Intel CPUs each costs a microcode assist.

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "benchmark_main.h"
#include "pelab/host/subnormals.h"

namespace {

void BM_MatmulWithSubnormals(benchmark::State& state, bool flush) {
  const std::int64_t n = state.range(0);
  const double subnormal_fraction = static_cast<double>(state.range(1)) / 100.0;
  torch::manual_seed(0);
  const torch::Tensor left = torch::randn({n, n});
  torch::Tensor right = torch::randn({n, n});
  // The chosen entries scaled into the subnormal range (|x| < 1.2e-38), the rest left as they are.
  const torch::Tensor chosen = torch::rand({n, n}) < subnormal_fraction;
  right = torch::where(chosen, right * 1e-39, right);
  if (!pelab::set_flush_subnormals(flush)) {
    state.SkipWithError("this CPU has no flush-to-zero mode");
    return;
  }
  for (auto _ : state) {
    torch::Tensor product = torch::mm(left, right);
    benchmark::DoNotOptimize(product.data_ptr());
  }
  pelab::set_flush_subnormals(false);
  state.counters["threads"] = torch::get_num_threads();
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "subnormal_pct"});
  for (std::int64_t n : {64, 160}) {  // the quick protocol's d_model, the paper's
    for (std::int64_t percent : {0, 1, 100})
      b->Args({n, percent});
  }
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_MatmulWithSubnormals, flushed, true)->Apply(shapes);
BENCHMARK_CAPTURE(BM_MatmulWithSubnormals, gradual_underflow, false)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  return pelab::bench::run_benchmarks_with_threads_flag(argc, argv);
}
