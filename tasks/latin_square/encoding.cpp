#include "encoding.h"

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab::latin_square {

torch::Tensor encode_inputs(const std::vector<Puzzle>& puzzles) {
  const auto count = static_cast<std::int64_t>(puzzles.size());
  torch::Tensor inputs = torch::zeros({count, kCells, kInputChannels}, torch::kFloat32);
  auto access = inputs.accessor<float, 3>();
  for (std::int64_t i = 0; i < count; ++i) {
    for (int k = 0; k < kCells; ++k) {
      const int digit = puzzles[i].cells[k];
      if (digit != kBlank) access[i][k][digit - 1] = 1.0F;  // shapes 1-4 and query 5
    }
  }
  return inputs;
}

std::vector<std::string> condition_group_names() {
  std::vector<std::string> names;
  for (Condition condition : kAllConditions)
    names.push_back(to_string(condition));
  return names;
}

Dataset make_dataset(const std::vector<Puzzle>& puzzles, const std::vector<std::int64_t>& indices) {
  std::vector<Puzzle> chosen;
  chosen.reserve(indices.size());
  std::vector<std::int64_t> targets, groups;
  for (std::int64_t index : indices) {
    PELAB_INTERNAL_ASSERT(index >= 0 && index < static_cast<std::int64_t>(puzzles.size()),
                          "index {} of {} puzzles", index, puzzles.size());
    const Puzzle& puzzle = puzzles[index];
    chosen.push_back(puzzle);
    targets.push_back(puzzle.solution - 1);
    groups.push_back(static_cast<std::int64_t>(puzzle.condition));
  }
  Dataset dataset;
  dataset.inputs = encode_inputs(chosen);
  const auto count = static_cast<std::int64_t>(chosen.size());
  dataset.targets = torch::tensor(targets, torch::kInt64).reshape({count});
  dataset.groups = torch::tensor(groups, torch::kInt64).reshape({count});
  dataset.group_names = condition_group_names();
  return dataset;
}

}  // namespace pelab::latin_square
