#pragma once

// Helpers shared by the probe plugin tests: snapshots of hand-made PE tables and random
// rotations.

#include <cstdint>
#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "pelab/probe.h"

namespace pelab::test {

/// A snapshot at `epoch` of the blocks' tables (one [N, d] tensor per block), in float32.
inline PESnapshot snapshot(std::int64_t epoch, const std::vector<torch::Tensor>& tables) {
  PESnapshot s;
  s.epoch = epoch;
  s.tables = torch::stack(tables).to(torch::kFloat32);
  return s;
}

/// A snapshot at epoch 0 of the blocks' tables.
inline PESnapshot snapshot(const std::vector<torch::Tensor>& tables) {
  return snapshot(0, tables);
}

/// A random orthogonal d x d matrix (QR of a Gaussian matrix).
inline torch::Tensor rotation(std::int64_t d) {
  return std::get<0>(torch::linalg::qr(torch::randn({d, d}, torch::kFloat64)));
}

}  // namespace pelab::test
