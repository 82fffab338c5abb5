#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pelab/base/export.h"
#include "pelab/config/manifest.h"
#include "pelab/interfaces/layout.h"
#include "pelab/interfaces/probe.h"

namespace pelab {

class Registry;
class Task;
class TransformerEncoder;

/// A finished (or interrupted) run folder read back: its configuration, its task, its model with
/// the checkpoint's weights, and its PE snapshots.
struct PELAB_API LoadedRun {
  std::string dir;
  RunConfig config;
  std::shared_ptr<Task> task;
  Layout layout;
  std::shared_ptr<TransformerEncoder> model;  // null when the folder has no checkpoint
  std::int64_t checkpoint_epoch = -1;         // the epoch of the checkpoint's weights
  std::vector<PESnapshot> snapshots;          // pe/tables-* and pe/kernels-*, by epoch
};

/// Reads the run folder `dir` through RunFolder: its configuration (`config_text` instead of its
/// stored configuration when not empty: e.g. the run's configuration with other probes), the task
/// and the model rebuilt by build_run with the checkpoint's weights, and the PE snapshots. Throws
/// pelab::Error naming what is missing or unreadable.
PELAB_API LoadedRun load_run(const std::string& dir, Registry& registry,
                             const std::string& config_text = "",
                             const std::vector<std::string>& overrides = {});

}  // namespace pelab
