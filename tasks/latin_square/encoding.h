#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include <pelab/sdk.h>

#include "puzzle.h"

namespace pelab::latin_square {

// The model's view of a puzzle: 16 tokens (row-major cells), 5 input channels. A shape s (1-4)
// lights channel s - 1, the query cell channel 4, a blank none: a blank is the zero vector, as in
// the LSTNN one-hot encoding.
inline constexpr std::int64_t kInputChannels = 5;

/// The one-hot inputs [puzzles, 16, 5] float32 of `puzzles`.
torch::Tensor encode_inputs(const std::vector<Puzzle>& puzzles);

/// {"binary", "ternary", "quaternary"}: group k is Condition k.
std::vector<std::string> condition_group_names();

/// The dataset of puzzles[indices]: one-hot inputs, targets solution - 1 (int64), groups the
/// condition index (int64).
Dataset make_dataset(const std::vector<Puzzle>& puzzles, const std::vector<std::int64_t>& indices);

}  // namespace pelab::latin_square
