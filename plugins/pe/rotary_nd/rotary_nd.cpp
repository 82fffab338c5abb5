// Axial rotary position embedding over the layout's coordinates, any number of axes D (RoPE-Axial
// of Heo et al. 2024, "Rotary Position Embedding for Vision Transformer", for D = 2).
//
// Every head's head_dim channels are split into D equal chunks of c = head_dim / D; chunk a holds
// c/2 consecutive pairs (2i, 2i+1) that token t rotates by x_{t,a} * theta_{a,i}, where x_{t,a} is
// the token's coordinate on axis a and theta_{a,i} = base^(-2i / c) (the same ladder on every axis
// unless learned). The rotation of token t is then block-diagonal with R_t^T R_u = R_{u - t}
// per axis, so the score q_t . k_u depends only on the coordinate difference x_u - x_t.
//
// With `learnable_frequencies = true` the D x c/2 frequencies theta are a parameter, initialised
// to the ladder above and trained (like Heo et al.'s RoPE-Mixed, except that each pair still
// turns with one axis only). On a 1D sequence layout it equals rotary_1d with fraction 1.

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/coordinates.h"
#include "../../common/rotary.h"

namespace pelab {
namespace {

class RotaryND : public PositionalEncoding {
 public:
  RotaryND(const Layout& layout, std::int64_t head_dim, double base, bool learnable)
      : tokens_(layout.tokens), head_dim_(head_dim), learnable_(learnable) {
    const std::int64_t axes = layout.dims();
    const std::int64_t chunk = head_dim / axes;
    const torch::Tensor exponent = torch::arange(0, chunk, 2, torch::kFloat64) / chunk;
    // [D, c/2]: every axis starts from the same ladder.
    const torch::Tensor ladder = torch::pow(base, -exponent).unsqueeze(0).repeat({axes, 1});
    if (learnable_) {
      coordinates_ = register_buffer("coordinates", layout.coordinates.to(torch::kFloat32));
      frequencies_ = register_parameter("frequencies", ladder.to(torch::kFloat32));
    } else {
      // Fixed: the angles are computed once, in double precision.
      const torch::Tensor angle = this->angle(layout.coordinates, ladder);
      cos_ = register_buffer("cos", angle.cos().to(torch::kFloat32));
      sin_ = register_buffer("sin", angle.sin().to(torch::kFloat32));
    }
  }

  unsigned hooks() const override { return kRotary; }

  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    plugin_common::check_rotary_inputs("rotary_nd", q, k, tokens_, head_dim_);
    if (!learnable_)
      return {plugin_common::rotate_pairs(q, cos_, sin_),
              plugin_common::rotate_pairs(k, cos_, sin_)};
    // In double precision, as the fixed angles are: a float32 product of coordinates near 100 and
    // the ladder is off by ~1e-5 rad, and learnable frequencies would start from another PE.
    const torch::Tensor angle =
        this->angle(coordinates_.to(torch::kFloat64), frequencies_.to(torch::kFloat64));
    const torch::Tensor cos = angle.cos().to(frequencies_.scalar_type());
    const torch::Tensor sin = angle.sin().to(frequencies_.scalar_type());
    return {plugin_common::rotate_pairs(q, cos, sin), plugin_common::rotate_pairs(k, cos, sin)};
  }

  // RoPE has no table and no bias. Its kernel is the N x N matrix of rotated scores for an
  // all-ones query and key, divided by head_dim: K[t, u] = (R_t 1) . (R_u 1) / head_dim
  // = (2 / head_dim) sum_{a,i} cos((x_u - x_t)_a theta_{a,i}): 1 on the diagonal and a function
  // of the coordinate difference only.
  torch::Tensor kernel() override {
    return plugin_common::rotary_kernel(*this, 1, tokens_, head_dim_,
                                        learnable_ ? frequencies_.options() : cos_.options());
  }

 private:
  // coordinates [N, D] x frequencies [D, c/2] -> [N, D * c/2]: axis a's pairs, then axis a+1's.
  static torch::Tensor angle(const torch::Tensor& coordinates, const torch::Tensor& frequencies) {
    return (coordinates.unsqueeze(2) * frequencies.unsqueeze(0)).flatten(1);
  }

  std::int64_t tokens_;
  std::int64_t head_dim_;
  bool learnable_;
  torch::Tensor coordinates_, frequencies_;  // learnable frequencies
  torch::Tensor cos_, sin_;                  // fixed frequencies
};

void declare(ParamSchema& schema) {
  schema
      .real("base", 10000.0,
            "Wavelength base: pair i of each axis' chunk of c = head_dim / D channels turns by "
            "base^(-2i/c) per unit of that axis' coordinate.")
      .at_least(1.0);
  schema.boolean("learnable_frequencies", false,
                 "Make the D x c/2 frequencies a parameter, initialised to the fixed ladder.");
  schema.boolean("use_hidden_coordinates", false,
                 "Rotate by coordinates the task marks as ground truth only (an oracle PE, e.g. "
                 "the Latin square grid).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  check_pe_coordinates(layout, params,
                       "it needs token coordinates, but the task's layout has none; use rotary_1d");
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const std::int64_t head_dim = shape.d_model / shape.heads;
  const std::int64_t axes = layout.dims();
  PELAB_CHECK(head_dim % (2 * axes) == 0,
              "head_dim ({} = d_model {} / heads {}) must be a multiple of 2 x the {} coordinate "
              "axes: each axis rotates its own pairs of channels",
              head_dim, shape.d_model, shape.heads, axes);
  return std::make_shared<RotaryND>(layout, head_dim, params.real("base"),
                                    params.boolean("learnable_frequencies"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("rotary_nd", "1.0.0",
                      "Axial rotary embedding (RoPE) of the layout's coordinates, any D; "
                      "optionally learnable frequencies",
                      pelab::declare, pelab::create)
