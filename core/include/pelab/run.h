#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "pelab/export.h"
#include "pelab/manifest.h"

namespace pelab {

class Registry;

struct PELAB_API RunOptions {
  /// Print a progress line (epoch, loss, ETA) on stderr.
  bool progress = false;
  /// Run again even when the folder already holds a finished run.
  bool force = false;
};

/// What one run produced.
struct PELAB_API RunOutcome {
  std::string dir;
  bool skipped = false;  // already finished: nothing was recomputed
  double seconds = 0.0;
  /// The final evaluation: "<split>/<group>/<metric>" -> value, e.g. "test/all/accuracy".
  std::map<std::string, double> final_metrics;
};

/// Trains one resolved run into `<output_root>/<config.relative_dir()>`: config.toml, metrics.csv,
/// pe/*.npy snapshots, probes/*.json, checkpoint.pt, summary.json, run.log; all written atomically.
PELAB_API RunOutcome execute_run(const RunConfig& config, Registry& registry,
                                 const std::string& output_root, const RunOptions& options = {});

}  // namespace pelab
