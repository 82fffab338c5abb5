#pragma once

// The trained model of a run, as a probe runs it (ProbeContext::model): its attention, and its
// evaluation on the task's splits with some of its PEs' tensors replaced for the call (a causal
// test of what the PE contributes). The core implements it over its encoder and trainer; a probe
// needs nothing else of them, so a third party's model-running probe builds against the SDK.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/base/export.h"

namespace pelab {

/// One row of a run's metrics: a metric of a split (and group) at an epoch.
struct PELAB_API MetricRow {
  std::int64_t epoch = 0;
  std::string split;
  std::string group;  // "all" or a group name
  std::string metric;
  double value = 0.0;
};

/// A value put in place of one of a PE's tensors while the model is evaluated.
struct PELAB_API PETensorReplacement {
  std::int64_t pe = 0;           ///< which of the model's distinct PEs (0 <= pe < pe_count())
  std::string tensor = "table";  ///< a name replaceable_tensors(pe) lists
  torch::Tensor value;           ///< of that tensor's shape; cast to its dtype
};

class PELAB_API TrainedModel {
 public:
  virtual ~TrainedModel() = default;

  /// The model's distinct PEs: one per block, or one when shared or input-only; 0 without a PE.
  virtual std::int64_t pe_count() const = 0;

  /// Copies of the tensors of PE `pe` that evaluate() can replace, by name: an additive PE's
  /// stored table is "table" ([N, d_model]), and every parameter the PE registers is there by its
  /// name (a rotary PE's "positions", "frequencies", ...). Empty for a PE with nothing stored to
  /// replace (none, a fixed PE acting on attention); then `why_not`, when given, says which.
  virtual std::map<std::string, torch::Tensor> replaceable_tensors(
      std::int64_t pe, std::string* why_not = nullptr) const = 0;

  /// The task's every split evaluated as training evaluates it (epoch 0 in the rows; dropout
  /// off), with `replacements` in place for this call only: the model is as it was afterwards,
  /// whatever happens.
  virtual std::vector<MetricRow> evaluate(
      const std::vector<PETensorReplacement>& replacements = {}) = 0;

  /// The attention probabilities of every block for `inputs` ([batch, tokens, input_size]):
  /// [blocks][batch, heads, N, N]. With masked-token regression no token is masked.
  virtual std::vector<torch::Tensor> attention_maps(const torch::Tensor& inputs) = 0;
};

}  // namespace pelab
