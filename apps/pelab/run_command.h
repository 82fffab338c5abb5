#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace pelab {
class Manifest;
class Registry;
}  // namespace pelab

namespace pelab::cli {

struct LaunchPlan;

/// `pelab run MANIFEST`: trains every point and seed of the manifest that has not finished, one
/// after the other, in a pool of worker processes (-j), or each run with data-parallel ranks
/// (--nproc-per-node, torchrun, srun), then writes the experiment's report.
class RunCommand : public Command {
 public:
  RunCommand(CLI::App& app, const GlobalOptions& global);
  bool computes() const override { return true; }
  int execute() override;

 private:
  int start_local_ranks() const;
  LaunchPlan make_plan(const Manifest& manifest) const;
  int train_one_run(const Manifest& manifest, Registry& registry, const LaunchPlan& plan) const;

  const GlobalOptions& global_;
  std::string manifest_;
  std::vector<std::string> overrides_;
  std::string output_ = "runs";
  bool force_ = false;
  std::vector<std::string> reuse_;  // folders to copy identical finished runs from
  bool quiet_ = false;
  int jobs_ = 1;
  int nproc_per_node_ = 1;      // ranks of each run started here (data-parallel)
  double rank_timeout_ = 1800;  // seconds a rank waits for the others (rendezvous, collectives)
  int only_ = -1;               // run only this run of the expansion (how -j starts its workers)
  int progress_fd_ = -1;        // a worker of -j: where it reports each epoch to its parent
  int core_share_ = 0;          // a worker of -j: the cores its parent gave it (0: its own)
  std::string shard_;           // "K/N": only the K-th of N interleaved slices of the runs
  bool no_report_ = false;
};

}  // namespace pelab::cli
