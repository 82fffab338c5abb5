#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/base/export.h"
#include "pelab/interfaces/layout.h"

namespace pelab {

class TrainedModel;
class Task;
class Registry;

/// The positional encodings of every block at one moment of training.
struct PELAB_API PESnapshot {
  std::int64_t epoch = 0;
  /// [pes, tokens, d_model] tables of additive PEs, or undefined. One entry per distinct PE: per
  /// block, or a single one when it is shared or input-only.
  torch::Tensor tables;
  /// [pes, tokens, tokens] positional kernels of PEs without a table, or undefined.
  torch::Tensor kernels;
  /// Every parameter the PEs register, by name, stacked over the PEs ([pes, ...its shape]), e.g.
  /// "positions" [pes, N, k] of a rotary PE with learned positions: written as
  /// pe/param-<name>-epoch-NNNNNN.npy. A parameter whose first dimension is the tokens is a
  /// position table that the layout probes can read (their `tensor` key).
  std::map<std::string, torch::Tensor> tensors;
};

/// What a probe may read. The snapshots are in training order: the first is the initial PE.
struct PELAB_API ProbeContext {
  const Layout& layout;
  const std::vector<PESnapshot>& snapshots;
  TrainedModel* model = nullptr;  // the trained model, when available (trained_model.h)
  Task* task = nullptr;           // the task, to read its splits
  Registry* registry = nullptr;   // to build reference PEs
};

/// Which way a scalar improves, for the reader of a report.
enum class Better { kHigher, kLower, kNeither };

/// "higher", "lower" or "neither": how a probe's record writes a direction, and a report says it.
inline const char* to_string(Better better) {
  switch (better) {
    case Better::kHigher:
      return "higher";
    case Better::kLower:
      return "lower";
    case Better::kNeither:
      break;
  }
  return "neither";
}
/// The direction to_string wrote; anything else is kNeither.
inline Better better_from_string(const std::string& text) {
  return text == "higher" ? Better::kHigher : text == "lower" ? Better::kLower : Better::kNeither;
}

/// A scalar that stands for its probe in reports: the report's probe table shows each headline
/// (with its direction and meaning), and its figure draws the first, the mean over blocks with
/// the per-block `<scalar>_block<b>` values beside it.
struct PELAB_API Headline {
  std::string scalar;  // a key of ProbeResult::scalars
  Better better = Better::kNeither;
  std::string meaning;  // one line for the report's reader, e.g. "1: mirrors the layout"
};

/// Named scalars (aggregated over seeds by reports) and arrays (written as .npy), the scalars
/// that stand for the probe in reports, and a one-line note for the reader, e.g. why a probe has
/// nothing to report for a PE without a table.
struct PELAB_API ProbeResult {
  std::map<std::string, double> scalars;
  std::map<std::string, torch::Tensor> arrays;
  /// In order of importance; each names one of `scalars`. Without any, reports show the first
  /// scalar that is not per block.
  std::vector<Headline> headlines;
  std::string note;
};

/// The name of a scalar's value for one block, `<scalar>_block<b>`: a probe that measures every
/// block reports each under this name beside their mean under `scalar`, and reports and figures
/// find the blocks by it.
inline std::string per_block_scalar(const std::string& scalar, std::int64_t block) {
  return scalar + "_block" + std::to_string(block);
}
/// Whether `name` is one block's value of a scalar (see per_block_scalar).
inline bool is_per_block_scalar(const std::string& name) {
  return name.find("_block") != std::string::npos;
}

/// Measures something about a trained model's positional encodings.
class PELAB_API Probe {
 public:
  virtual ~Probe() = default;
  virtual ProbeResult run(const ProbeContext& context) = 0;
};

}  // namespace pelab
