#include "pelab/task.h"

#include <cmath>

#include <torch/torch.h>

#include "pelab/error.h"

namespace pelab {

std::string Objective::name() const {
  return masked() ? "masked_token_regression" : "classification";
}

std::vector<std::string> Objective::metrics() const {
  if (masked()) return {"mse", "r"};
  return {"loss", "accuracy"};
}

Dataset Dataset::subset(const torch::Tensor& indices) const {
  Dataset out;
  out.inputs = inputs.index_select(0, indices);
  out.targets = targets.index_select(0, indices);
  if (groups.defined()) out.groups = groups.index_select(0, indices);
  out.group_names = group_names;
  out.mask_ratio = mask_ratio;
  if (masks.defined()) out.masks = masks.index_select(0, indices);
  return out;
}

void Dataset::validate(const std::string& what, std::int64_t tokens, std::int64_t input_size,
                       const Objective& objective) const {
  PELAB_CHECK(inputs.defined() && inputs.dim() == 3,
              "{}: inputs must be [samples, tokens, input_size]", what);
  PELAB_CHECK(inputs.size(1) == tokens && inputs.size(2) == input_size,
              "{}: inputs are {}x{} per sample, the task declares {} tokens x {} inputs", what,
              inputs.size(1), inputs.size(2), tokens, input_size);
  PELAB_CHECK(inputs.scalar_type() == torch::kFloat32, "{}: inputs must be float32", what);
  const std::int64_t samples = inputs.size(0);
  if (objective.masked()) {
    PELAB_CHECK(targets.defined() && targets.dim() == 3 && targets.size(0) == samples &&
                    targets.size(1) == tokens && targets.size(2) == objective.outputs &&
                    targets.scalar_type() == torch::kFloat32,
                "{}: targets must be float32 [samples={}, tokens={}, outputs={}]", what, samples,
                tokens, objective.outputs);
    PELAB_CHECK(std::isfinite(mask_ratio) && mask_ratio > 0.0 && mask_ratio <= 1.0,
                "{}: the mask ratio must lie in (0, 1], got {}", what, mask_ratio);
    if (masks.defined()) {
      PELAB_CHECK(masks.dim() == 2 && masks.size(0) == samples && masks.size(1) == tokens &&
                      masks.scalar_type() == torch::kBool,
                  "{}: masks must be bool [samples={}, tokens={}]", what, samples, tokens);
      if (samples > 0) {
        PELAB_CHECK(masks.any(1).all().item<bool>(), "{}: every sample must mask a token", what);
      }
    }
  } else {
    PELAB_CHECK(targets.defined() && targets.dim() == 1 && targets.size(0) == samples &&
                    targets.scalar_type() == torch::kInt64,
                "{}: targets must be int64 [samples={}]", what, samples);
    if (size() > 0) {
      PELAB_CHECK(targets.min().item<std::int64_t>() >= 0 &&
                      targets.max().item<std::int64_t>() < objective.outputs,
                  "{}: targets must lie in [0, {})", what, objective.outputs);
    }
  }
  if (groups.defined()) {
    PELAB_CHECK(
        groups.dim() == 1 && groups.size(0) == samples && groups.scalar_type() == torch::kInt64,
        "{}: groups must be int64 [samples={}]", what, samples);
    if (size() > 0) {
      PELAB_CHECK(
          groups.min().item<std::int64_t>() >= 0 &&
              groups.max().item<std::int64_t>() < static_cast<std::int64_t>(group_names.size()),
          "{}: group indices must index its {} group names", what, group_names.size());
    }
  }
}

torch::Tensor draw_token_masks(std::int64_t samples, std::int64_t tokens, double ratio,
                               at::Generator generator) {
  const auto masked = std::clamp<std::int64_t>(
      static_cast<std::int64_t>(std::llround(ratio * static_cast<double>(tokens))), 1, tokens);
  // The first `masked` tokens of a random order per sample.
  const torch::Tensor order =
      torch::rand({samples, tokens}, generator).argsort(/*dim=*/1, /*descending=*/false);
  return torch::zeros({samples, tokens}, torch::kBool).scatter_(1, order.slice(1, 0, masked), true);
}

torch::Tensor Task::perturb_embedding(const torch::Tensor& embedded, bool /*training*/) const {
  return embedded;
}

}  // namespace pelab
