#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "command.h"

namespace pelab::cli {

/// `pelab bench`: Google Benchmark timings of plugins through their interface, so that any
/// plugin on the plugin path, a third party's too, has a benchmark without writing one.
struct BenchOptions {
  std::vector<std::string> plugins;    // names or inline tables; empty = every plugin on the path
  std::vector<std::string> overrides;  // --set key=value, relative to each plugin's table
  std::string kind;                    // when a name exists in several kinds
  std::vector<std::int64_t> tokens{16, 64, 256, 1024, 4096};
  std::vector<std::int64_t> probe_tokens{16, 64, 256};
  std::vector<std::int64_t> d_model{64, 256};
  std::int64_t batch = 8;
  std::int64_t heads = 4;
  std::string layout = "sequence";  // sequence | grid2d | grid3d
  int threads = 1;
  std::vector<std::string> benchmark_flags;  // passed to Google Benchmark (--benchmark_*)
};

int bench(const BenchOptions& bench_options, const std::vector<std::string>& plugin_folders);

/// The `bench` subcommand; the --benchmark_* options it does not know go to Google Benchmark.
class BenchCommand : public Command {
 public:
  BenchCommand(CLI::App& app, const GlobalOptions& global);
  bool computes() const override { return true; }
  int execute() override;

 private:
  const GlobalOptions& global_;
  BenchOptions options_;
};

}  // namespace pelab::cli
