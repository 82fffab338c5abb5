#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/base/export.h"

namespace pelab {

/// The geometry of a task's tokens: how many there are and, where known, where they are.
/// PEs read it (a sinusoidal-ND table uses the coordinates, a learned table only the count);
/// probes compare what a model learned with it.
struct PELAB_API Layout {
  std::int64_t tokens = 0;
  /// [tokens, D] float64 coordinates, or undefined when the task has no geometry.
  torch::Tensor coordinates;
  /// Names of the D axes, e.g. {"row", "column"}; may be empty.
  std::vector<std::string> axis_names;
  /// The grid's extent per axis when the tokens sit on a regular grid (e.g. {4, 4}), else empty.
  std::vector<std::int64_t> grid_shape;
  /// Whether the model may see the coordinates (a PE built from them) or they are ground truth
  /// for probes only. PEs that need coordinates refuse a layout whose coordinates are hidden
  /// unless the manifest says otherwise.
  bool coordinates_visible = false;
  /// A community label per token ([tokens] int64, 0-based), e.g. the modules of a simulated
  /// network or the large-scale networks of a brain parcellation; undefined when the task has
  /// none. Ground truth for probes (modularity), never shown to the model.
  torch::Tensor communities;
  /// The name of each community label (indexed by label); may be empty.
  std::vector<std::string> community_names;
  /// Named [tokens, tokens] float64 matrices that relate the tokens, ground truth for probes only:
  /// e.g. "coupling" (a simulated network's structural weights) or "functional_connectivity".
  std::map<std::string, torch::Tensor> relations;

  bool has_coordinates() const { return coordinates.defined(); }
  std::int64_t dims() const { return has_coordinates() ? coordinates.size(1) : 0; }
  bool has_communities() const { return communities.defined(); }

  /// A 1D layout: token i at coordinate i.
  static Layout sequence(std::int64_t tokens, bool coordinates_visible = true);
  /// A row-major grid: token k at its integer grid index (axis 0 slowest).
  static Layout grid(std::vector<std::int64_t> shape, std::vector<std::string> axis_names,
                     bool coordinates_visible);

  /// Checks the invariants (sizes agree); throws pelab::Error naming what is inconsistent.
  void validate() const;
};

}  // namespace pelab
