#include "pelab/task.h"

#include <torch/torch.h>

#include "pelab/error.h"

namespace pelab {

Dataset Dataset::subset(const torch::Tensor& indices) const {
  Dataset out;
  out.inputs = inputs.index_select(0, indices);
  out.targets = targets.index_select(0, indices);
  if (groups.defined()) out.groups = groups.index_select(0, indices);
  out.group_names = group_names;
  return out;
}

void Dataset::validate(const std::string& what, std::int64_t tokens, std::int64_t input_size,
                       std::int64_t classes) const {
  PELAB_CHECK(inputs.defined() && inputs.dim() == 3,
              "{}: inputs must be [samples, tokens, input_size]", what);
  PELAB_CHECK(inputs.size(1) == tokens && inputs.size(2) == input_size,
              "{}: inputs are {}x{} per sample, the task declares {} tokens x {} inputs", what,
              inputs.size(1), inputs.size(2), tokens, input_size);
  PELAB_CHECK(inputs.scalar_type() == torch::kFloat32, "{}: inputs must be float32", what);
  PELAB_CHECK(targets.defined() && targets.dim() == 1 && targets.size(0) == inputs.size(0) &&
                  targets.scalar_type() == torch::kInt64,
              "{}: targets must be int64 [samples={}]", what, inputs.size(0));
  if (size() > 0) {
    PELAB_CHECK(
        targets.min().item<std::int64_t>() >= 0 && targets.max().item<std::int64_t>() < classes,
        "{}: targets must lie in [0, {})", what, classes);
  }
  if (groups.defined()) {
    PELAB_CHECK(groups.dim() == 1 && groups.size(0) == inputs.size(0) &&
                    groups.scalar_type() == torch::kInt64,
                "{}: groups must be int64 [samples={}]", what, inputs.size(0));
    if (size() > 0) {
      PELAB_CHECK(
          groups.min().item<std::int64_t>() >= 0 &&
              groups.max().item<std::int64_t>() < static_cast<std::int64_t>(group_names.size()),
          "{}: group indices must index its {} group names", what, group_names.size());
    }
  }
}

torch::Tensor Task::perturb_embedding(const torch::Tensor& embedded, bool /*training*/) const {
  return embedded;
}

}  // namespace pelab
