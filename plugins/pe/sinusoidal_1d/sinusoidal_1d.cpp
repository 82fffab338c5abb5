// The transformer's fixed sinusoidal table of the token index (Vaswani et al. 2017):
//   pe[t, 2i]   = sin(t / base^(2i / d)),   pe[t, 2i+1] = cos(t / base^(2i / d)),
// for token t = 0 .. N-1 and i = 0 .. d/2 - 1. It reads only the token's index, never the layout's
// coordinates, so it works on every task (on a grid it sees the row-major order, not the grid).

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

torch::Tensor sinusoidal_table(std::int64_t tokens, std::int64_t d_model, double base) {
  const torch::Tensor position = torch::arange(tokens, torch::kFloat64).unsqueeze(1);  // [N, 1]
  const torch::Tensor exponent = torch::arange(0, d_model, 2, torch::kFloat64) / d_model;
  const torch::Tensor angle = position * torch::pow(base, -exponent);  // [N, d/2]
  // Interleave: [sin f0, cos f0, sin f1, cos f1, ...].
  return torch::stack({angle.sin(), angle.cos()}, 2).flatten(1).to(torch::kFloat32);
}

class Sinusoidal1D : public TablePositionalEncoding {
 public:
  Sinusoidal1D(std::int64_t tokens, std::int64_t d_model, double base) {
    set_table(sinusoidal_table(tokens, d_model, base), /*learnable=*/false);
  }
};

void declare(ParamSchema& schema) {
  schema.real("base", 10000.0, "Wavelength base: channel pair i has frequency base^(-2i/d).")
      .at_least(1.0);
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  PELAB_CHECK(shape.d_model % 2 == 0,
              "d_model ({}) must be even: the table pairs a sine and a cosine per frequency",
              shape.d_model);
  return std::make_shared<Sinusoidal1D>(layout.tokens, shape.d_model, context.params.real("base"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("sinusoidal_1d", "1.0.0",
                      "Fixed sinusoidal table of the token index (Vaswani et al. 2017)",
                      pelab::declare, pelab::create)
