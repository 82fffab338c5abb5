#pragma once

#include <string>
#include <vector>

#include "pelab/base/export.h"
#include "pelab/interfaces/params.h"
#include "pelab/interfaces/probe.h"
#include "pelab/runs/run_folder.h"

namespace pelab {

class Registry;
struct LoadedRun;

/// Runs each probe on `context` and records it in `folder` (RunFolder::write_probe_record, its
/// arrays beside it). A probe that throws is recorded with its error, and the others still run: a
/// probe's failure must not lose the run it probes.
PELAB_API std::vector<ProbeOutcome> run_probes(const std::vector<PluginSpec>& probes,
                                               const ProbeContext& context, Registry& registry,
                                               const RunFolder& folder);

/// The probes of `run.config` on a run read back from its folder (load_run): on its model, when
/// it has a checkpoint, and its PE snapshots; recorded in `folder` as run_probes does.
PELAB_API std::vector<ProbeOutcome> run_probes(const LoadedRun& run, Registry& registry,
                                               const RunFolder& folder);

/// The name of a probe's outputs (its record, its scalars' "probe/<name>/..." keys): the plugin's
/// name for the first time a manifest lists it, then "<plugin>_2", "<plugin>_3", ...
PELAB_API std::string probe_output_name(const std::string& plugin, int occurrence);

}  // namespace pelab
