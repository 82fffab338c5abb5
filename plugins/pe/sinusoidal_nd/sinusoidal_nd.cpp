// A fixed sinusoidal table built from the layout's coordinates, for any number of axes D.
//
// d_model is split into D equal chunks; chunk k encodes axis D-1-k with the transformer's 1D
// formula (sin and cos interleaved):
//   pe[t, 2i]   = sin(x_t / base^(2i / c)),   pe[t, 2i+1] = cos(x_t / base^(2i / c)),
// where c = d_model / D and x_t is the token's coordinate on that axis. In 2D the first half
// encodes the column and the second half the row: the paper's fixed "2D" PE.

#include <cmath>

#include <torch/torch.h>

#include <pelab/error.h>
#include <pelab/plugin.h>

namespace pelab {
namespace {

torch::Tensor sinusoidal_table(const torch::Tensor& coordinates, std::int64_t d_model,
                               double base) {
  const std::int64_t axes = coordinates.size(1);
  const std::int64_t chunk = d_model / axes;
  const torch::Tensor exponent = torch::arange(0, chunk, 2, torch::kFloat64) / chunk;
  const torch::Tensor frequencies = torch::pow(base, -exponent);  // [chunk / 2]
  std::vector<torch::Tensor> chunks;
  for (std::int64_t k = 0; k < axes; ++k) {
    const torch::Tensor angle = coordinates.select(1, axes - 1 - k).unsqueeze(1) * frequencies;
    // Interleave: [sin f0, cos f0, sin f1, cos f1, ...].
    chunks.push_back(torch::stack({angle.sin(), angle.cos()}, 2).flatten(1));
  }
  return torch::cat(chunks, 1).to(torch::kFloat32);
}

class SinusoidalND : public TablePositionalEncoding {
 public:
  SinusoidalND(const Layout& layout, std::int64_t d_model, double base, double scale) {
    set_table(sinusoidal_table(layout.coordinates, d_model, base) * scale, /*learnable=*/false);
  }
};

void declare(ParamSchema& schema) {
  schema.real("base", 10000.0, "Wavelength base of the frequencies.").at_least(1.0);
  schema.real("scale", 1.0, "Multiplies the table.");
  schema.boolean("use_hidden_coordinates", false,
                 "Build the table from coordinates the task marks as ground truth only (an "
                 "oracle PE, e.g. the paper's 2D sinusoidal PE on the Latin square grid).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  PELAB_CHECK(layout.has_coordinates(),
              "it needs token coordinates, but the task's layout has none; use a learned PE");
  PELAB_CHECK(layout.coordinates_visible || params.boolean("use_hidden_coordinates"),
              "the task's coordinates are ground truth for probes, hidden from the model; set "
              "`use_hidden_coordinates = true` to build an oracle PE from them");
  const std::int64_t axes = layout.dims();
  PELAB_CHECK(shape.d_model % (2 * axes) == 0,
              "d_model ({}) must be a multiple of 2 x the {} coordinate axes", shape.d_model, axes);
  return std::make_shared<SinusoidalND>(layout, shape.d_model, params.real("base"),
                                        params.real("scale"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN(
    "sinusoidal_nd", "1.0.0",
    "Fixed sinusoidal table of the layout's coordinates, any D (the paper's 2D PE)", pelab::declare,
    pelab::create)
