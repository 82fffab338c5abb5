#pragma once

// main() for a benchmark program whose only flag beside Google Benchmark's is --threads=N.

#include <cstdlib>
#include <cstring>
#include <iostream>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "pelab/host/blas_kernel.h"
#include "pelab/host/host_info.h"
#include "pelab/training/trainer.h"

namespace pelab::bench {

inline int run_benchmarks_with_threads_flag(int argc, char** argv) {
  // As pelab does, before Google Benchmark edits argv: the right BLAS kernel where OpenBLAS fell
  // back, and what computed the figures in the benchmark's context (JSON output included).
  use_best_blas_kernel(argv);
  benchmark::Initialize(&argc, argv);
  keep_freed_memory_for_reuse();  // as in training: no page faults from fresh mmaps
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      torch::set_num_threads(std::atoi(argv[i] + 10));
    } else {
      std::cerr << "unknown flag '" << argv[i] << "'; use --threads=N or Google Benchmark's\n";
      return 2;
    }
  }
  benchmark::AddCustomContext("pelab_host", host_line(host_info()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace pelab::bench
