#pragma once

// Launchers: where and how the runs of a sweep are trained. `pelab run` picks the sequential
// launcher, the local process pool (-j) or the local data-parallel ranks (--nproc-per-node,
// rank_launcher.h); `pelab slurm` the Slurm launcher. Whichever trains a
// run, it goes through execute_run, which claims the run folder first: launchers never need to
// coordinate with each other.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "pelab/runs/run.h"

namespace pelab {
class Manifest;
class Registry;
}  // namespace pelab

namespace pelab::cli {

/// The runs to launch and how.
struct LaunchPlan {
  const Manifest* manifest = nullptr;
  std::string manifest_path;  // as given on the command line
  std::vector<std::string> overrides;
  std::string output;             // runs go to <output>/<experiment>/...
  std::vector<std::size_t> runs;  // indices into manifest->runs()
  /// With `cores`, this process's share of the cores: the launchers split it, the run resolves
  /// its threads from it (HostExecution).
  RunOptions run_options;
};

enum class LaunchState {
  kDone,              // trained here
  kSkipped,           // already finished
  kClaimedElsewhere,  // another process trains it
  kFailed,
  kSubmitted,  // handed to a scheduler
};

struct LaunchResult {
  std::size_t index = 0;  // into the manifest's runs
  LaunchState state = LaunchState::kFailed;
  std::string detail;   // who holds it, why it failed, the job it was submitted as
  int exit_status = 0;  // of the process that trained it, where another process did
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  /// Launches the plan's runs; returns what became of each, in the plan's order.
  virtual std::vector<LaunchResult> launch(const LaunchPlan& plan) = 0;
};

/// Trains the runs one after the other in this process.
std::unique_ptr<Launcher> make_sequential_launcher(Registry& registry);

/// Trains up to `jobs` runs at once, each in a `pelab run --only I` worker process with an equal
/// share of the cores. `command_line` is this process's, to start the workers with.
std::unique_ptr<Launcher> make_process_pool_launcher(int jobs,
                                                     std::vector<std::string> command_line);

/// The exit status of a `pelab run --only I` worker whose run another process holds.
constexpr int kExitClaimedElsewhere = 75;  // EX_TEMPFAIL
/// The exit status of a `pelab run --only I` worker that copied its run from an identical one
/// (--reuse) rather than training it.
constexpr int kExitReused = 76;

}  // namespace pelab::cli
