#pragma once

#include <string>
#include <vector>

#include "command.h"
#include "launch/slurm_launcher.h"

namespace pelab::cli {

/// `pelab slurm MANIFEST`: the sweep's unfinished runs as a Slurm job array (see
/// make_slurm_launcher), or with --resubmit-failed only the runs that failed or were interrupted.
class SlurmCommand : public Command {
 public:
  SlurmCommand(CLI::App& app, const GlobalOptions& global);
  int execute() override;

 private:
  const GlobalOptions& global_;
  std::string manifest_;
  std::vector<std::string> overrides_;
  std::string output_ = "runs";
  bool resubmit_failed_ = false;
  bool force_ = false;
  std::vector<std::string> reuse_;  // folders to copy identical finished runs from
  SlurmOptions slurm_;
};

}  // namespace pelab::cli
