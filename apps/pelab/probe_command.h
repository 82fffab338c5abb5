#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"

namespace pelab::cli {

/// What `pelab probe` reads from its command line.
struct ProbeOptions {
  std::string run_dir;
  std::vector<std::string> probes;     // --probe NAME (repeatable); empty: the run's own probes
  std::vector<std::string> overrides;  // --set NAME.key=value
};

/// Runs probes on a finished run folder: rebuilds its task and model from config.toml and
/// checkpoint.pt, reads its PE snapshots from pe/, writes probes/<name>.json and .npy files as a
/// run does, and updates the `probes` entry of its summary.json. Returns 1 when a probe failed.
int probe(const Options& options, const ProbeOptions& probe_options);

/// The `probe` subcommand: registers itself on `app`; `execute()` runs it once parsed.
class ProbeCommand {
 public:
  ProbeCommand(CLI::App& app, const Options& options);
  bool parsed() const { return command_->parsed(); }
  int execute() const { return probe(options_, probe_options_); }

 private:
  const Options& options_;
  ProbeOptions probe_options_;
  CLI::App* command_ = nullptr;
};

}  // namespace pelab::cli
