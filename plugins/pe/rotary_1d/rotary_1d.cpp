// Rotary position embedding (RoPE, Su et al. 2021, "RoFormer") on the token index.
//
// In every head, the first r = floor(fraction * head_dim) channels (rounded down to even) are
// taken as r/2 consecutive pairs (2i, 2i+1), as in RoFormer; token t rotates pair i of its query
// and key by the angle t * theta_i, theta_i = base^(-2i / r):
//   x'[2i]   = x[2i] cos(t theta_i) - x[2i+1] sin(t theta_i)
//   x'[2i+1] = x[2i] sin(t theta_i) + x[2i+1] cos(t theta_i)
// The other head_dim - r channels pass unchanged (GPT-NeoX's partial rotary). Since
// R_i^T R_j = R_{j-i}, the score q_i . k_j sees only the offset j - i. Nothing is learned.
// It reads the token index, never the layout's coordinates (rotary_nd does).

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/rotary.h"

namespace pelab {
namespace {

class Rotary1D : public PositionalEncoding {
 public:
  Rotary1D(std::int64_t tokens, std::int64_t head_dim, std::int64_t rotated, double base)
      : tokens_(tokens), head_dim_(head_dim) {
    const torch::Tensor position = torch::arange(tokens, torch::kFloat64).unsqueeze(1);
    const torch::Tensor exponent = torch::arange(0, rotated, 2, torch::kFloat64) / rotated;
    const torch::Tensor angle = position * torch::pow(base, -exponent);  // [N, r/2]
    cos_ = register_buffer("cos", angle.cos().to(torch::kFloat32));
    sin_ = register_buffer("sin", angle.sin().to(torch::kFloat32));
  }

  unsigned hooks() const override { return kRotary; }

  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    plugin_common::check_rotary_inputs("rotary_1d", q, k, tokens_, head_dim_);
    return {plugin_common::rotate_pairs(q, cos_, sin_), plugin_common::rotate_pairs(k, cos_, sin_)};
  }

  // RoPE has no table and no bias. Its kernel is the N x N matrix of rotated scores for an
  // all-ones query and key, divided by head_dim: K[i, j] = (R_i 1) . (R_j 1) / head_dim
  // = (head_dim - r + 2 sum_i cos((j - i) theta_i)) / head_dim, 1 on the diagonal and a function of
  // j - i only.
  torch::Tensor kernel() override {
    return plugin_common::rotary_kernel(*this, 1, tokens_, head_dim_, cos_.options());
  }

 private:
  std::int64_t tokens_;
  std::int64_t head_dim_;
  torch::Tensor cos_, sin_;
};

void declare(ParamSchema& schema) {
  schema.real("base", 10000.0, "Wavelength base: pair i turns by base^(-2i/r) per token.")
      .at_least(1.0);
  schema
      .real("fraction", 1.0,
            "Share of each head's channels that are rotated (the first ones), rounded down to an "
            "even count r; the others pass unchanged. 1 is RoFormer, 0.25 GPT-NeoX.")
      .in_range(0.0, 1.0);
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const std::int64_t head_dim = shape.d_model / shape.heads;
  const double fraction = params.real("fraction");
  const auto wanted = static_cast<std::int64_t>(std::floor(fraction * head_dim + 1e-9));
  const std::int64_t rotated = wanted - wanted % 2;
  PELAB_CHECK(rotated >= 2,
              "fraction = {} of head_dim {} rotates {} channels, fewer than one pair; raise "
              "`fraction` to at least {} or use wider heads",
              fraction, head_dim, rotated, 2.0 / head_dim);
  return std::make_shared<Rotary1D>(layout.tokens, head_dim, rotated, params.real("base"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("rotary_1d", "1.0.0",
                      "Rotary embedding (RoPE) of the token index; optional partial rotation",
                      pelab::declare, pelab::create)
