#pragma once

// Helpers shared by pelab's plugins that read the layout's coordinates (PEs and initializers;
// header-only: each plugin is its own .so): the guard on coordinates hidden from the model, and
// the sinusoidal table of positions.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include <pelab/error.h>
#include <pelab/layout.h>
#include <pelab/plugin.h>

namespace pelab::plugin_common {

/// Refuses coordinates the task hides from the model (ground truth for probes) unless the plugin
/// was told to use them (`use_hidden`); the message starts with `prefix` and ends with `remedy`.
inline void check_coordinates_visible(const Layout& layout, bool use_hidden,
                                      const std::string& prefix, const std::string& remedy) {
  PELAB_CHECK(layout.coordinates_visible || use_hidden,
              "{}the task's coordinates are ground truth for probes, hidden from the model; set {}",
              prefix, remedy);
}

/// A coordinate PE's guard: the layout has coordinates (else `without_coordinates` is the error),
/// and they are visible to the model or the PE's `use_hidden_coordinates` is set.
inline void check_pe_coordinates(const Layout& layout, const Params& params,
                                 const std::string& without_coordinates) {
  PELAB_CHECK(layout.has_coordinates(), "{}", without_coordinates);
  check_coordinates_visible(layout, params.boolean("use_hidden_coordinates"), "",
                            "`use_hidden_coordinates = true` to build an oracle PE from them");
}

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
