#pragma once

#include <string>
#include <vector>

namespace pelab::cli {

/// Everything the subcommands read from the command line.
struct Options {
  std::vector<std::string> plugin_folders;
  std::string kind;
  std::string name;
  std::string manifest;
  std::vector<std::string> overrides;
  std::string output = "runs";
  bool force = false;
  bool quiet = false;
  int jobs = 1;
  int nproc_per_node = 1;      // ranks of each run started here (data-parallel)
  double rank_timeout = 1800;  // seconds a rank waits for the others (rendezvous, collectives)
  int only = -1;         // run only this run of the expansion (how `--jobs` starts its workers)
  int progress_fd = -1;  // a worker of --jobs: where it reports each epoch to its parent
  std::string shard;     // "K/N": only the K-th of N interleaved slices of the runs
  bool no_report = false;
  bool no_build = false;               // validate: schemas only
  std::vector<std::string> arguments;  // the command line as given, to start workers with
};

std::string version_text();

/// Each returns the process exit code; user errors are thrown as pelab::Error.
int list_plugins(const Options& options);
int describe(const Options& options);
int validate(const Options& options);
int run(const Options& options);

}  // namespace pelab::cli
