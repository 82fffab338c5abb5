#pragma once

// Another run's records, as a plugin reads them: the PE snapshots of a finished run (to transfer
// its PE, or to compare with it) and the arrays its probes saved. The SDK's view of a run folder:
// RunFolder owns the files, this names none of them to its reader.

#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/base/export.h"
#include "pelab/interfaces/probe.h"

namespace pelab {

class PELAB_API FinishedRun {
 public:
  /// `dir` is a run folder, `<out>/<experiment>/<point>/seed-<s>` (folder_layout()).
  explicit FinishedRun(std::string dir);

  const std::string& dir() const { return dir_; }

  /// Its PE snapshots (tables or kernels) in epoch order, the first the initial PE; empty when
  /// it holds none.
  std::vector<PESnapshot> snapshots() const;
  /// Where they lie, for a message: `<dir>/pe`.
  std::string snapshot_folder() const;

  /// Array `array` of the probe whose outputs are named `probe` (as `pelab probe` or a run wrote
  /// it), e.g. ("attention", "maps"); an Error that says how to make it when the run has none.
  torch::Tensor probe_array(const std::string& probe, const std::string& array) const;
  /// That array's file name in a run folder, for a message or a parameter's documentation.
  static std::string probe_array_file(const std::string& probe, const std::string& array);

  /// "<out>/<experiment>/<point>/seed-<s>": how a run folder's path is made.
  static std::string folder_layout();

 private:
  std::string dir_;
};

}  // namespace pelab
