// A fixed sinusoidal table built from the layout's coordinates, for any number of axes D.
//
// d_model is split into D equal chunks of an even width c (channels left over are zero); chunk k
// encodes axis D-1-k with the transformer's 1D formula (sin and cos interleaved):
//   pe[t, 2i]   = sin(x_t / base^(2i / c)),   pe[t, 2i+1] = cos(x_t / base^(2i / c)),
// where c = d_model / D and x_t is the token's coordinate on that axis. In 2D the first half
// encodes the column and the second half the row: the paper's fixed "2D" PE.

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/coordinates.h"

namespace pelab {
namespace {

class SinusoidalND : public TablePositionalEncoding {
 public:
  SinusoidalND(const Layout& layout, std::int64_t d_model, double base, double scale,
               double coordinate_scale) {
    // Each axis gets the largest even number of channels that d_model splits into; channels left
    // over (d_model = 64 in 3D: 3 x 20, 4 left) stay zero.
    const std::int64_t axes = layout.dims();
    const std::int64_t used = (d_model / (2 * axes)) * 2 * axes;
    torch::Tensor table =
        plugin_common::sinusoidal_table(layout.coordinates * coordinate_scale, used, base);
    if (used < d_model) table = torch::constant_pad_nd(table, {0, d_model - used});
    set_table(table.to(torch::kFloat32) * scale, /*learnable=*/false);
  }
};

void declare(ParamSchema& schema) {
  schema.real("base", 10000.0, "Wavelength base of the frequencies.").at_least(1.0);
  schema.real("scale", 1.0, "Multiplies the table.");
  schema
      .real("coordinate_scale", 1.0,
            "Multiplies the coordinates before they are encoded: the highest frequency turns by "
            "coordinate_scale radians per unit of the layout (e.g. 20 for a network in the unit "
            "square, whose coordinates span 1).")
      .at_least(0.0);
  schema.boolean("use_hidden_coordinates", false,
                 "Build the table from coordinates the task marks as ground truth only (an "
                 "oracle PE, e.g. the paper's 2D sinusoidal PE on the Latin square grid).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  check_pe_coordinates(
      layout, params,
      "it needs token coordinates, but the task's layout has none; use a learned PE");
  const std::int64_t axes = layout.dims();
  PELAB_CHECK(shape.d_model >= 2 * axes,
              "d_model ({}) must be at least 2 x the {} coordinate axes (a sine and a cosine each)",
              shape.d_model, axes);
  return std::make_shared<SinusoidalND>(layout, shape.d_model, params.real("base"),
                                        params.real("scale"), params.real("coordinate_scale"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN(
    "sinusoidal_nd", "1.0.0",
    "Fixed sinusoidal table of the layout's coordinates, any D (the paper's 2D PE)", pelab::declare,
    pelab::create)
