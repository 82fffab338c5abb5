#include "pelab/runs/run_loader.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/interfaces/task.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run.h"
#include "pelab/runs/run_folder.h"

namespace pelab {

namespace fs = boost::filesystem;

LoadedRun load_run(const std::string& dir, Registry& registry, const std::string& config_text,
                   const std::vector<std::string>& overrides) {
  const RunFolder folder(dir);
  if (const auto summary = folder.read_summary()) folder.check_config_unchanged(*summary);
  LoadedRun loaded;
  loaded.dir = dir;
  loaded.config = folder.read_config(registry, config_text, overrides);
  BuiltRun run = build_run(loaded.config, registry, WithTrainer::kNo);
  loaded.task = run.task;
  loaded.layout = run.layout;
  if (folder.has_checkpoint()) {
    const auto checkpoint = folder.load_checkpoint(*run.model, /*optimizer=*/nullptr);
    if (!checkpoint.warning.empty()) fmt::print(stderr, "warning: {}\n", checkpoint.warning);
    loaded.checkpoint_epoch = checkpoint.epoch;
    run.model->eval();
    loaded.model = run.model;
  }
  loaded.snapshots = folder.read_snapshots();
  // Training writes the PE's table or kernel at every checkpoint; none on disk means the files were
  // removed, and a probe would otherwise report "no PE" where there is one.
  const PESnapshot expected = run.model->snapshot(0);
  PELAB_CHECK(
      !loaded.snapshots.empty() || (!expected.tables.defined() && !expected.kernels.defined()),
      "{}: the run's PE snapshots are missing: {} holds no {} or {}, though its PE ('{}') has a "
      "{} that training writes at every checkpoint. Restore the folder from a copy, or train the "
      "run again (pelab run {} --force)",
      dir, folder.snapshot_folder(), RunFolder::snapshot_pattern("tables"),
      RunFolder::snapshot_pattern("kernels"), loaded.config.pe.name,
      expected.tables.defined() ? "table" : "kernel", folder.config_path());
  return loaded;
}

}  // namespace pelab
