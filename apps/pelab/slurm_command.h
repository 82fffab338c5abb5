#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "launch/slurm_launcher.h"

namespace pelab::cli {

/// `pelab slurm MANIFEST`: the sweep's unfinished runs as a Slurm job array (see
/// make_slurm_launcher), or with --resubmit-failed only the runs that failed or were interrupted.
class SlurmCommand {
 public:
  SlurmCommand(CLI::App& app, const Options& options);
  bool parsed() const { return command_->parsed(); }
  int execute();

 private:
  const Options& options_;
  std::string manifest_;
  std::vector<std::string> overrides_;
  std::string output_ = "runs";
  bool resubmit_failed_ = false;
  bool force_ = false;
  SlurmOptions slurm_;
  CLI::App* command_ = nullptr;
};

}  // namespace pelab::cli
