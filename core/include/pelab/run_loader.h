#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pelab/export.h"
#include "pelab/layout.h"
#include "pelab/manifest.h"
#include "pelab/params.h"
#include "pelab/probe.h"

namespace pelab {

class Registry;
class Task;
class TransformerEncoder;

/// What one probe produced, as written to `probes/<name>.json`.
struct PELAB_API ProbeOutcome {
  std::string name;
  std::map<std::string, double> scalars;
  std::vector<std::string> arrays;  // the .npy files, relative to the run folder
  std::vector<Headline> headlines;  // the probe's headline scalars
  std::string note;                 // the probe's note, if any
  std::string error;                // the error that stopped it, if any (then no scalars)
};

/// Runs each probe on `context` and writes, in `run_dir`, `probes/<name>.json` (probe, epoch,
/// scalars, headlines, arrays, note or error) and `probes/<name>-<array>.npy`. A probe that throws
/// pelab::Error is recorded with its error, and the others still run.
PELAB_API std::vector<ProbeOutcome> run_probes(const std::vector<PluginSpec>& probes,
                                               const ProbeContext& context, Registry& registry,
                                               const std::string& run_dir);

/// The name of a probe's outputs (probes/<name>.json, its scalars' "probe/<name>/..." keys): the
/// plugin's name for the first time a manifest lists it, then "<plugin>_2", "<plugin>_3", ...
PELAB_API std::string probe_output_name(const std::string& plugin, int occurrence);

/// "higher", "lower" or "neither", as probes/<name>.json writes a headline's direction.
PELAB_API std::string to_string(Better better);

/// A finished (or interrupted) run folder read back: its configuration, its task, its model with
/// the checkpoint's weights, and its PE snapshots.
struct PELAB_API LoadedRun {
  std::string dir;
  RunConfig config;
  std::shared_ptr<Task> task;
  Layout layout;
  std::shared_ptr<TransformerEncoder> model;  // null when the folder has no checkpoint.pt
  std::int64_t checkpoint_epoch = -1;         // the epoch of the checkpoint's weights
  std::vector<PESnapshot> snapshots;          // pe/tables-* and pe/kernels-*, by epoch
};

/// Reads the run folder `dir` through RunFolder: its configuration (`config_text` instead of its
/// config.toml when not empty: e.g. the run's configuration with other probes), the task and the
/// model rebuilt by build_run with the checkpoint's weights, and the PE snapshots. Throws
/// pelab::Error naming what is missing or unreadable.
PELAB_API LoadedRun load_run(const std::string& dir, Registry& registry,
                             const std::string& config_text = "",
                             const std::vector<std::string>& overrides = {});

}  // namespace pelab
