#include "pelab/interfaces/task.h"

#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "pelab/base/error.h"

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

namespace {

// The dtype as the messages above name it (numpy's names), rather than LibTorch's "Long".
std::string dtype_name(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat32:
      return "float32";
    case torch::kFloat64:
      return "float64";
    case torch::kFloat16:
      return "float16";
    case torch::kBFloat16:
      return "bfloat16";
    case torch::kInt64:
      return "int64";
    case torch::kInt32:
      return "int32";
    case torch::kInt16:
      return "int16";
    case torch::kInt8:
      return "int8";
    case torch::kUInt8:
      return "uint8";
    case torch::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

// "float32 [600, 36]", or "nothing": what a split's tensor is, for the message that refuses it.
std::string describe_tensor(const torch::Tensor& tensor) {
  if (!tensor.defined()) return "nothing (an undefined tensor)";
  return fmt::format("{} [{}]", dtype_name(tensor.scalar_type()),
                     fmt::join(tensor.sizes().vec(), ", "));
}

}  // namespace

void Dataset::validate(const std::string& what, std::int64_t tokens, std::int64_t input_size,
                       const Objective& objective) const {
  PELAB_CHECK(inputs.defined() && inputs.dim() == 3 && inputs.size(1) == tokens &&
                  inputs.size(2) == input_size && inputs.scalar_type() == torch::kFloat32,
              "{}: inputs must be float32 [samples, tokens={}, input_size={}] (the task's layout "
              "and input size), got {}",
              what, tokens, input_size, describe_tensor(inputs));
  const std::int64_t samples = inputs.size(0);
  if (objective.masked()) {
    PELAB_CHECK(
        targets.defined() && targets.dim() == 3 && targets.size(0) == samples &&
            targets.size(1) == tokens && targets.size(2) == objective.outputs &&
            targets.scalar_type() == torch::kFloat32,
        "{}: targets must be float32 [samples={}, tokens={}, outputs={}] for a masked-token "
        "regression (each token's values to predict), got {}",
        what, samples, tokens, objective.outputs, describe_tensor(targets));
    PELAB_CHECK(std::isfinite(mask_ratio) && mask_ratio > 0.0 && mask_ratio <= 1.0,
                "{}: the mask ratio must lie in (0, 1], got {}", what, mask_ratio);
    if (masks.defined()) {
      PELAB_CHECK(masks.dim() == 2 && masks.size(0) == samples && masks.size(1) == tokens &&
                      masks.scalar_type() == torch::kBool,
                  "{}: masks must be bool [samples={}, tokens={}], got {}", what, samples, tokens,
                  describe_tensor(masks));
      if (samples > 0) {
        PELAB_CHECK(masks.any(1).all().item<bool>(), "{}: every sample must mask a token", what);
      }
    }
  } else {
    PELAB_CHECK(targets.defined() && targets.dim() == 1 && targets.size(0) == samples &&
                    targets.scalar_type() == torch::kInt64,
                "{}: targets must be int64 [samples={}] for a classification (one class a "
                "sample), got {}",
                what, samples, describe_tensor(targets));
    if (size() > 0) {
      PELAB_CHECK(targets.min().item<std::int64_t>() >= 0 &&
                      targets.max().item<std::int64_t>() < objective.outputs,
                  "{}: targets must lie in [0, {})", what, objective.outputs);
    }
  }
  if (groups.defined()) {
    PELAB_CHECK(
        groups.dim() == 1 && groups.size(0) == samples && groups.scalar_type() == torch::kInt64,
        "{}: groups must be int64 [samples={}], got {}", what, samples, describe_tensor(groups));
    if (size() > 0) {
      PELAB_CHECK(
          groups.min().item<std::int64_t>() >= 0 &&
              groups.max().item<std::int64_t>() < static_cast<std::int64_t>(group_names.size()),
          "{}: group indices must index its {} group names", what, group_names.size());
    }
  }
}

Dataset load_checked_split(Task& task, const std::string& split, const std::string& task_name) {
  Dataset dataset = task.load(split);
  const std::string what = task_name.empty()
                               ? fmt::format("split '{}'", split)
                               : fmt::format("the task plugin '{}', split '{}'", task_name, split);
  dataset.validate(what, task.layout().tokens, task.input_size(), task.objective());
  // An empty split would make its metrics vanish from the report without a word.
  PELAB_CHECK(dataset.size() > 0,
              "{} holds no samples: every split a task declares is evaluated and reported; check "
              "the data the task reads (an empty data file, a filter that kept nothing)",
              what);
  // A NaN or an infinity in the data would surface epochs later as a NaN loss, far from its source.
  for (const auto& [name, values] :
       {std::make_pair("inputs", dataset.inputs), std::make_pair("targets", dataset.targets)}) {
    if (!values.is_floating_point()) continue;
    const torch::Tensor bad = torch::logical_not(torch::isfinite(values)).flatten(1).any(1);
    if (!bad.any().item<bool>()) continue;
    throw Error(fmt::format(
        "{}: its {} hold a value that is not finite (NaN or infinite) in {} of its {} samples, the "
        "first at sample {}; fix the data at its source (missing values, a division by zero)",
        what, name, bad.sum().item<std::int64_t>(), dataset.size(),
        bad.nonzero()[0][0].item<std::int64_t>()));
  }
  return dataset;
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
