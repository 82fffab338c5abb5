#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "pelab/base/export.h"
#include "pelab/interfaces/layout.h"

namespace pelab {

/// What a task asks of the model; the model's head, the loss and the metrics follow from it.
struct PELAB_API Objective {
  enum class Kind {
    /// One of `outputs` classes per sample, read out from the last token (or the mean of the
    /// tokens): a linear head, log-softmax, negative log-likelihood; metrics loss and accuracy.
    kClassification,
    /// A vector of `outputs` values at each masked token: the masked tokens' inputs are replaced
    /// by a learned mask embedding, a linear head per token, mean squared error over the masked
    /// tokens only; metrics mse and r (Pearson's, over the masked values).
    kMaskedTokenRegression,
  };
  Kind kind = Kind::kClassification;
  /// The number of classes, or the values predicted per masked token.
  std::int64_t outputs = 0;

  static Objective classification(std::int64_t classes) { return {Kind::kClassification, classes}; }
  static Objective masked_token_regression(std::int64_t values_per_token) {
    return {Kind::kMaskedTokenRegression, values_per_token};
  }
  bool masked() const { return kind == Kind::kMaskedTokenRegression; }
  /// "classification" or "masked_token_regression", as config and summary files name it.
  std::string name() const;
  /// The metrics evaluation reports for every split and group, in order ("loss", "accuracy"; or
  /// "mse", "r").
  std::vector<std::string> metrics() const;
};

/// One split of a task's samples, held in memory.
struct PELAB_API Dataset {
  torch::Tensor inputs;  // [samples, tokens, input_size] float32
  /// Classification: [samples] int64 class indices. Masked-token regression: [samples, tokens,
  /// outputs] float32, the values to predict (only those of masked tokens are scored).
  torch::Tensor targets;
  torch::Tensor groups;  // [samples] int64 indices into group_names, or undefined
  std::vector<std::string> group_names;
  /// Masked-token regression: the fraction of each sample's tokens that is masked (rounded to a
  /// count, at least one). Training draws a fresh mask per sample and batch from the run's seeded
  /// generator; evaluation uses `masks`.
  double mask_ratio = 0.0;
  /// Masked-token regression: the fixed masks evaluation uses, [samples, tokens] bool (true =
  /// masked). Undefined: the Trainer draws them once from a generator of fixed seed (see
  /// draw_token_masks), so that scores compare across epochs and runs.
  torch::Tensor masks;

  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
  /// The samples at `indices` (an int64 tensor), with the same group names and mask ratio.
  Dataset subset(const torch::Tensor& indices) const;
  /// Checks the shapes agree with each other and with the task; throws pelab::Error if not.
  void validate(const std::string& what, std::int64_t tokens, std::int64_t input_size,
                const Objective& objective) const;
};

/// Masks of exactly max(1, round(ratio * tokens)) tokens per sample, chosen uniformly at random
/// from `generator`: [samples, tokens] bool, true = masked.
PELAB_API torch::Tensor draw_token_masks(std::int64_t samples, std::int64_t tokens, double ratio,
                                         at::Generator generator);

/// A supervised problem over a set of tokens with a layout: the model reads [tokens, input_size]
/// and predicts what the task's objective() says (a class from its readout, or the values of
/// masked tokens).
class PELAB_API Task {
 public:
  virtual ~Task() = default;

  virtual Layout layout() const = 0;
  virtual std::int64_t input_size() const = 0;
  virtual Objective objective() const = 0;

  /// The split names; the first is the one trained on.
  virtual std::vector<std::string> splits() const = 0;
  /// Loads (or generates) one split. Called once per split and run; the result is cached.
  virtual Dataset load(const std::string& split) = 0;

  /// Hook applied to the embedded tokens [batch, tokens, d_model] before the first block, e.g.
  /// Gaussian noise in evaluation. The default returns them unchanged.
  virtual torch::Tensor perturb_embedding(const torch::Tensor& embedded, bool training) const;
};

/// Loads one split of a task and checks it against the task's layout, input size and objective
/// (Dataset::validate), naming the plugin in the error when `task_name` is given: what the Trainer
/// and `pelab validate` both do, so that a task plugin's bad data is caught before any run.
PELAB_API Dataset load_checked_split(Task& task, const std::string& split,
                                     const std::string& task_name = "");

}  // namespace pelab
