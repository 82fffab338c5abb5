#include "pelab/interfaces/layout.h"

#include <torch/torch.h>

#include "pelab/base/error.h"

namespace pelab {

Layout Layout::sequence(std::int64_t tokens, bool coordinates_visible) {
  Layout layout;
  layout.tokens = tokens;
  layout.coordinates = torch::arange(tokens, torch::kFloat64).unsqueeze(1);
  layout.axis_names = {"index"};
  layout.grid_shape = {tokens};
  layout.coordinates_visible = coordinates_visible;
  return layout;
}

Layout Layout::grid(std::vector<std::int64_t> shape, std::vector<std::string> axis_names,
                    bool coordinates_visible) {
  PELAB_CHECK(!shape.empty(), "a grid layout needs at least one axis");
  std::vector<torch::Tensor> axes;
  for (std::int64_t extent : shape) {
    PELAB_CHECK(extent > 0, "grid extents must be positive, got {}", extent);
    axes.push_back(torch::arange(extent, torch::kFloat64));
  }
  auto mesh = torch::meshgrid(axes, "ij");  // row-major: axis 0 varies slowest
  std::vector<torch::Tensor> columns;
  for (auto& m : mesh)
    columns.push_back(m.reshape({-1}));
  Layout layout;
  layout.coordinates = torch::stack(columns, 1).contiguous();
  layout.tokens = layout.coordinates.size(0);
  layout.axis_names = std::move(axis_names);
  layout.grid_shape = std::move(shape);
  layout.coordinates_visible = coordinates_visible;
  layout.validate();
  return layout;
}

void Layout::validate() const {
  PELAB_CHECK(tokens > 0, "a layout needs at least one token, got {}", tokens);
  if (has_coordinates()) {
    PELAB_CHECK(coordinates.dim() == 2 && coordinates.size(0) == tokens,
                "layout coordinates must be [tokens={}, D], got {}", tokens,
                fmt::join(coordinates.sizes(), "x"));
    PELAB_CHECK(axis_names.empty() || static_cast<std::int64_t>(axis_names.size()) == dims(),
                "layout has {} coordinate axes but {} axis names", dims(), axis_names.size());
  }
  if (!grid_shape.empty()) {
    std::int64_t product = 1;
    for (auto extent : grid_shape)
      product *= extent;
    PELAB_CHECK(product == tokens, "layout grid shape {} holds {} cells, not {} tokens",
                fmt::join(grid_shape, "x"), product, tokens);
  }
  if (has_communities()) {
    PELAB_CHECK(communities.dim() == 1 && communities.size(0) == tokens &&
                    communities.scalar_type() == torch::kInt64,
                "layout communities must be int64 [tokens={}], got {} {}", tokens,
                c10::toString(communities.scalar_type()), fmt::join(communities.sizes(), "x"));
    PELAB_CHECK(communities.min().item<std::int64_t>() >= 0,
                "layout community labels must be >= 0");
    PELAB_CHECK(community_names.empty() || communities.max().item<std::int64_t>() <
                                               static_cast<std::int64_t>(community_names.size()),
                "layout community labels reach {} but only {} community names are given",
                communities.max().item<std::int64_t>(), community_names.size());
  }
  for (const auto& [name, relation] : relations) {
    PELAB_CHECK(relation.defined() && relation.dim() == 2 && relation.size(0) == tokens &&
                    relation.size(1) == tokens,
                "layout relation '{}' must be [tokens={}, tokens], got {}", name, tokens,
                relation.defined() ? fmt::format("{}", fmt::join(relation.sizes(), "x"))
                                   : std::string("undefined"));
  }
}

}  // namespace pelab
