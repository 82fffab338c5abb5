#pragma once

// The splits of a masked-token regression task with one set of held-out data (the
// network_simulation task's test recording, the brain task's held-out subjects), and the two
// parameters that set how much of each is masked: written once for every such task, so that
// their splits, parameters and errors agree.

#include <functional>
#include <string>
#include <vector>

#include <pelab/sdk.h>

namespace pelab::tasks {

/// "train" (the training data, masked afresh per batch at mask_ratio), "test" (the held-out data
/// at mask_ratio) and "test_high_mask" (the same held-out data at high_mask_ratio); evaluation
/// masks are fixed per split (the Trainer's).
class MaskedSplits {
 public:
  /// Declares mask_ratio (0.5) and high_mask_ratio (0.9); `tokens` says what the tokens are in
  /// their descriptions ("nodes", "parcels").
  static void declare(ParamSchema& schema, const std::string& tokens);

  /// The three split names, the training split first.
  static std::vector<std::string> names();

  /// Reads the ratios that declare() declared; `task` names the task in errors.
  MaskedSplits(const Params& params, std::string task);

  /// The split's data with its mask ratio: `train()` for "train", `test()` for the two test
  /// splits (each called only for the split that needs it). Throws pelab::Error, naming the
  /// splits, for another name.
  Dataset load(const std::string& split, const std::function<Dataset()>& train,
               const std::function<Dataset()>& test) const;

 private:
  std::string task_;
  double mask_ratio_;
  double high_mask_ratio_;
};

}  // namespace pelab::tasks
