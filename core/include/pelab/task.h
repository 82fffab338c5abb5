#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/export.h"
#include "pelab/layout.h"

namespace pelab {

/// One split of a task's samples, held in memory.
struct PELAB_API Dataset {
  torch::Tensor inputs;   // [samples, tokens, input_size] float32
  torch::Tensor targets;  // [samples] int64 class indices
  torch::Tensor groups;   // [samples] int64 indices into group_names, or undefined
  std::vector<std::string> group_names;

  std::int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
  /// The samples at `indices` (an int64 tensor), with the same group names.
  Dataset subset(const torch::Tensor& indices) const;
  /// Checks the shapes agree with each other and with the task; throws pelab::Error if not.
  void validate(const std::string& what, std::int64_t tokens, std::int64_t input_size,
                std::int64_t classes) const;
};

/// A supervised problem over a set of tokens with a layout: the model reads [tokens, input_size]
/// and predicts one of num_classes() from its readout.
class PELAB_API Task {
 public:
  virtual ~Task() = default;

  virtual Layout layout() const = 0;
  virtual std::int64_t input_size() const = 0;
  virtual std::int64_t num_classes() const = 0;

  /// The split names; the first is the one trained on.
  virtual std::vector<std::string> splits() const = 0;
  /// Loads (or generates) one split. Called once per split and run; the result is cached.
  virtual Dataset load(const std::string& split) = 0;

  /// Hook applied to the embedded tokens [batch, tokens, d_model] before the first block, e.g.
  /// Gaussian noise in evaluation. The default returns them unchanged.
  virtual torch::Tensor perturb_embedding(const torch::Tensor& embedded, bool training) const;
};

}  // namespace pelab
