// One training step (forward, backward, AdamW) and one evaluation pass of pelab's encoder on the
// workloads of benchmarks/workloads/: the paper's model on the Latin Square task, the quick
// protocol's smaller one and a larger one, each also in bf16 autocast.
//
//   pelab_training_benchmark [--threads=N] [--device=D] [--gemms=WORKLOAD] [Google Benchmark flags]
//
// --threads sets LibTorch's intra-op threads (default: OMP_NUM_THREADS, else all cores).
// --device trains on "cpu" (default), "cuda" or "cuda:N" (a build against a CUDA LibTorch,
// docs/performance.md "Training on a GPU"): every workload runs with train.device set to it.
// --gemms=paper prints the workload's GEMMs and FLOPs per step as JSON and exits (used by
// speed_vs_pytorch.py to measure the machine's matrix throughput on the model's own shapes).
// --profile=paper:FILE runs 5 steps under LibTorch's autograd profiler and writes a Chrome trace
// (benchmarks/profile_summary.py prints the time per operator).

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "pelab/base/error.h"
#include "pelab/host/blas_kernel.h"
#include "pelab/host/host_info.h"
#include "pelab/plugins/registry.h"
#include "training_workload.h"

namespace pelab::bench {
namespace {

Registry& registry() {
  static Registry instance(Registry::default_search_path());
  return instance;
}

// `--set` overrides every workload is built with (--device).
std::vector<std::string>& workload_overrides() {
  static std::vector<std::string> overrides;
  return overrides;
}

// Built once per workload: building the Latin Square task reads and encodes its CSVs.
TrainingWorkload& workload(const std::string& name) {
  static std::map<std::string, std::unique_ptr<TrainingWorkload>> cache;
  auto& slot = cache[name];
  if (!slot) {
    slot = std::make_unique<TrainingWorkload>(workload_manifest(name), registry(),
                                              workload_overrides());
  }
  return *slot;
}

void BM_TrainStep(benchmark::State& state, const std::string& name) {
  TrainingWorkload& w = workload(name);
  const double flops = total_flops(w.gemms());
  w.step();  // warm-up: the allocator's caches and the optimizer's state
  for (auto _ : state) {
    benchmark::DoNotOptimize(w.step());
  }
  const auto steps = static_cast<double>(state.iterations());
  state.counters["steps_per_s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
  state.counters["GFLOP_per_s"] =
      benchmark::Counter(steps * flops / 1e9, benchmark::Counter::kIsRate);
  state.counters["threads"] = torch::get_num_threads();
}

void BM_Evaluate(benchmark::State& state, const std::string& name) {
  TrainingWorkload& w = workload(name);
  for (auto _ : state) {
    w.evaluate();
  }
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * w.evaluation_samples()),
                         benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_TrainStep, paper, std::string("paper"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, large, std::string("large"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(BM_TrainStep, paper_bf16, std::string("paper_bf16"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, quick, std::string("quick"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, quick_bf16, std::string("quick_bf16"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TrainStep, large_bf16, std::string("large_bf16"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);
BENCHMARK_CAPTURE(BM_Evaluate, paper, std::string("paper"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The learnable rotary PEs' cost (issue 55): one training step of the quick Latin Square model
// and of the quick network model with each PE in every block, side by side with rotary_nd (the
// axial RoPE they generalise) and learned (the paper's additive table).
const std::map<std::string, std::string>& rotary_contenders() {
  static const std::map<std::string, std::string> contenders = {
      {"a_rotary_nd", R"({ plugin = "rotary_nd", use_hidden_coordinates = true })"},
      {"b_learned", R"({ plugin = "learned", init = { plugin = "normal", std = 0.2 } })"},
      {"c_learned_rotary",
       R"({ plugin = "learned_rotary", init = { plugin = "normal", std = 0.2 } })"},
      {"d_rope_mixed", R"({ plugin = "rope_mixed", positions = "learned" })"},
      {"e_liere_b2", R"({ plugin = "liere", positions = "learned", block_size = 2 })"},
      {"f_liere_b8", R"({ plugin = "liere", positions = "learned", block_size = 8 })"},
      {"g_liere_full", R"({ plugin = "liere", positions = "learned" })"},
      {"h_string", R"({ plugin = "string", positions = "learned" })"},
  };
  return contenders;
}

void BM_PEStep(benchmark::State& state, const std::string& workload_name,
               const std::string& contender) {
  static std::map<std::string, std::unique_ptr<TrainingWorkload>> cache;
  auto& slot = cache[workload_name + "/" + contender];
  if (!slot) {
    std::vector<std::string> overrides = workload_overrides();
    overrides.push_back("pe=" + rotary_contenders().at(contender));
    slot =
        std::make_unique<TrainingWorkload>(workload_manifest(workload_name), registry(), overrides);
  }
  TrainingWorkload& w = *slot;
  w.step();
  for (auto _ : state) {
    benchmark::DoNotOptimize(w.step());
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

const bool pe_step_benchmarks = [] {
  for (const char* workload : {"quick", "network"}) {
    for (const auto& [contender, table] : rotary_contenders()) {
      benchmark::RegisterBenchmark(
          fmt::format("pe_step/{}/{}", workload, contender.substr(2)).c_str(),
          [workload, name = contender](benchmark::State& state) {
            BM_PEStep(state, workload, name);
          })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  return true;
}();

int print_gemms(const std::string& name) {
  TrainingWorkload& w = workload(name);
  nlohmann::json gemms = nlohmann::json::array();
  for (const auto& gemm : w.gemms()) {
    gemms.push_back({{"what", gemm.what},
                     {"m", gemm.m},
                     {"k", gemm.k},
                     {"n", gemm.n},
                     {"batch", gemm.batch},
                     {"repeat", gemm.repeat}});
  }
  const ModelConfig model = ModelConfig::from_params(w.config().model);
  std::cout << nlohmann::json{{"workload", name},
                              {"layers", model.layers},
                              {"d_model", model.d_model},
                              {"heads", model.heads},
                              {"batch", w.inputs().size(0)},
                              {"tokens", w.inputs().size(1)},
                              {"input_size", w.inputs().size(2)},
                              {"num_classes", w.task().objective().outputs},
                              {"flops_per_step", total_flops(w.gemms())},
                              {"gemms", gemms}}
                   .dump(2)
            << "\n";
  return 0;
}

int profile(const std::string& spec) {
  const auto colon = spec.find(':');
  PELAB_CHECK(colon != std::string::npos, "--profile takes WORKLOAD:FILE, e.g. paper:trace.json");
  TrainingWorkload& w = workload(spec.substr(0, colon));
  w.step();
  w.step();  // warm-up
  {
    torch::autograd::profiler::RecordProfile recording(spec.substr(colon + 1));
    for (int step = 0; step < 5; ++step)
      w.step();
  }
  std::cout << "wrote a trace of 5 steps to " << spec.substr(colon + 1) << "\n";
  return 0;
}

}  // namespace
}  // namespace pelab::bench

int main(int argc, char** argv) {
  // As pelab does, before Google Benchmark edits argv: the right BLAS kernel where OpenBLAS fell
  // back, and what computed the figures in the benchmark's context (JSON output included).
  pelab::use_best_blas_kernel(argv);
  benchmark::Initialize(&argc, argv);
  std::string gemms_of, profile_spec, device = "cpu";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--threads=", 0) == 0) {
      torch::set_num_threads(std::atoi(arg.c_str() + std::strlen("--threads=")));
    } else if (arg.rfind("--profile=", 0) == 0) {
      profile_spec = arg.substr(std::strlen("--profile="));
    } else if (arg.rfind("--device=", 0) == 0) {
      device = arg.substr(std::strlen("--device="));
      // As a manifest's train.device: the run's own check says what is wrong with it.
      pelab::bench::workload_overrides().push_back(fmt::format("train.device=\"{}\"", device));
    } else if (arg.rfind("--gemms=", 0) == 0) {
      gemms_of = arg.substr(std::strlen("--gemms="));
    } else {
      std::cerr
          << "error: unknown argument '" << arg
          << "'; use --threads=N, --device=D, --gemms=WORKLOAD, --profile=WORKLOAD:FILE or Google "
             "Benchmark's flags\n";
      return 2;
    }
  }
  // After --threads: the BLAS's thread count as the benchmarks run it.
  benchmark::AddCustomContext("pelab_host", pelab::host_line(pelab::host_info()));
  benchmark::AddCustomContext("pelab_device", device);
  try {
    if (!gemms_of.empty()) return pelab::bench::print_gemms(gemms_of);
    if (!profile_spec.empty()) return pelab::bench::profile(profile_spec);
    benchmark::RunSpecifiedBenchmarks();
  } catch (const pelab::Error& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
