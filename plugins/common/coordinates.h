#pragma once

// Helpers shared by pelab's plugins that read the layout's coordinates (PEs and initializers;
// header-only: each plugin is its own .so): the sinusoidal table of positions. The guard on
// coordinates hidden from the model is the SDK's (pelab/coordinates.h).

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab::plugin_common {

/// [N, axes] positions -> [N, d] float64 table, d split evenly over the axes (the last axis
/// first); each chunk of c = d / axes channels is the transformer's 1D formula, sin and cos
/// interleaved: [sin(x / base^(0/c)), cos(x / base^(0/c)), sin(x / base^(2/c)), ...].
inline torch::Tensor sinusoidal_table(const torch::Tensor& positions, std::int64_t d, double base) {
  const std::int64_t axes = positions.size(1);
  const std::int64_t chunk = d / axes;
  const torch::Tensor exponent = torch::arange(0, chunk, 2, torch::kFloat64) / chunk;
  const torch::Tensor frequencies = torch::pow(base, -exponent);  // [chunk / 2]
  std::vector<torch::Tensor> chunks;
  for (std::int64_t k = 0; k < axes; ++k) {
    const torch::Tensor angle = positions.select(1, axes - 1 - k).unsqueeze(1) * frequencies;
    chunks.push_back(torch::stack({angle.sin(), angle.cos()}, 2).flatten(1));  // interleaved
  }
  return torch::cat(chunks, 1);
}

}  // namespace pelab::plugin_common
