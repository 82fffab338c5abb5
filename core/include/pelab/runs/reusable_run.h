#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pelab/base/export.h"
#include "pelab/runs/run_folder.h"

namespace pelab {

/// A finished run, in any experiment's folder, of the same configuration and seed as a run yet to
/// train: what `pelab run --reuse DIR` copies rather than training the run again. A sweep's
/// default point is often another sweep's too (heads 1, width 64, depth 2 of three sweeps). The
/// same resolved configuration and seed build the same data, weights and batches (build_run seeds
/// first), so the copy is the run this pelab would train, up to the rounding of another CPU or
/// BLAS kernel, which the copied summary's compute record names.
struct PELAB_API ReusableRun {
  std::string dir;
  RunSummary summary;
  /// The run was probed otherwise (other [[probe]] tables, or other versions of their plugins):
  /// the probes run on the trained model and change nothing of it, so the training is the same
  /// and the copy runs the wanted probes again (reuse_identical_run).
  bool probes_differ = false;

  /// The keys that name a run rather than define it, and the host execution keys
  /// (host_execution_keys(): the threads, flushing subnormals), which change how it is computed
  /// and not what: not compared.
  static const std::set<std::string>& ignored_keys();

  /// An Error naming the first of `roots` that is not a folder, and what to give instead.
  static void check_roots(const std::vector<std::string>& roots);

  /// The first finished run, in sorted order, among the run folders of `roots` (each an output
  /// root holding experiment folders, or an experiment folder), whose config.toml is `config` but
  /// for ignored_keys() and its [[probe]] tables, and whose summary names this build's LibTorch
  /// version and the `training_plugins` (the task's and the PE's, nested ones included: the same
  /// versions of the same plugins; RunSummary::plugins). `plugins` are all the run's, its probes'
  /// included: where they or the probe tables differ, probes_differ says so. `seed_folder`
  /// ("seed-3") narrows the folders read; `except` (the run's own folder) is never one. A folder
  /// written by an older pelab, whose file lacks keys added since, does not match: its numbers may
  /// not be this pelab's. A summary that records no plugins (pelab before 2026-12-03) is compared
  /// by its configuration alone. Where no run is found, `near_miss` (when given) names the first
  /// folder of the same training configuration and seed that was passed over, and why (another
  /// LibTorch, other plugin versions, not whole: an archive's records), or stays empty.
  static std::optional<ReusableRun> find(const StoredConfig& config,
                                         const std::map<std::string, std::string>& training_plugins,
                                         const std::map<std::string, std::string>& plugins,
                                         const std::string& seed_folder,
                                         const std::vector<std::string>& roots,
                                         const std::string& except,
                                         std::string* near_miss = nullptr);
};

}  // namespace pelab
