#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace pelab::cli {

/// What `pelab probe` reads from its command line.
struct ProbeOptions {
  std::string run_dir;
  std::vector<std::string> probes;     // --probe NAME (repeatable); empty: the run's own probes
  std::vector<std::string> overrides;  // --set NAME.key=value
};

/// Runs probes on a finished run folder: rebuilds its task and model from its configuration
/// and checkpoint, reads its PE snapshots, writes the probes' records and arrays as a run does,
/// and updates the `probes` entry of its summary (all through RunFolder). Returns 1 when a probe failed.
int probe(const GlobalOptions& global, const ProbeOptions& probe_options);

/// The `probe` subcommand.
class ProbeCommand : public Command {
 public:
  ProbeCommand(CLI::App& app, const GlobalOptions& global);
  bool computes() const override { return true; }
  int execute() override { return probe(global_, probe_options_); }

 private:
  const GlobalOptions& global_;
  ProbeOptions probe_options_;
};

}  // namespace pelab::cli
