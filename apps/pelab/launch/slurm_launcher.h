#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launch/launcher.h"

namespace pelab::cli {

/// How `pelab slurm` asks Slurm for resources.
struct SlurmOptions {
  std::string partition;
  std::string time;  // sbatch --time, e.g. "12:00:00"
  std::string mem;   // sbatch --mem, e.g. "8G"
  std::string account;
  int cpus_per_task = 1;                    // also each run's intra-op threads
  int max_parallel = 0;                     // array tasks at once; 0: as many as Slurm allows
  std::vector<std::string> sbatch_options;  // more #SBATCH lines, e.g. "--qos=long"
  std::vector<std::string> plugin_folders;  // --plugin-path of the runs
  bool dry_run = false;  // print the scripts and the commands; write and submit nothing
};

/// Refuses any value that the scripts would write into a line of shell (--partition, --time,
/// --mem, --account, --sbatch-option, --plugin-path, the output folder and the manifest) when it
/// holds a control character: a newline there would end the #SBATCH or command line and start a
/// line of shell of its own. The error names the option and shows the value escaped.
void check_script_values(const SlurmOptions& options, const std::string& output,
                         const std::string& manifest_path);

/// Submits the plan's runs as one Slurm job array, a task per run, each task `pelab run MANIFEST
/// --shard I/N` with I the run's index + 1 and N the sweep's runs; and a job that writes the
/// report when the array ends (afterany). Writes into `<experiment>/slurm/`: a copy of the
/// manifest, `sweep.sbatch` and `report.sbatch` (readable, editable, re-submittable with `sbatch
/// --array=LIST sweep.sbatch`), and `logs/`. The results are kSubmitted, detail "JOB_TASK".
std::unique_ptr<Launcher> make_slurm_launcher(SlurmOptions options);

/// "1-4,7,9-10": Slurm's --array list of the 1-based task ids of `runs` (0-based run indices).
std::string slurm_array_list(const std::vector<std::size_t>& runs);

}  // namespace pelab::cli
