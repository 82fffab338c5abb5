// Cayley-STRING (Schenck et al. 2025, "Learning the RoPEs: Better 2D and 3D Position Encodings
// with STRING", arXiv 2502.02562): RoPE-Mixed in a learned orthogonal basis. Each head turns its
// queries and keys as q' = R_t P q, where R_t is rope_mixed's rotation of token t (per pair i the
// angle <f_i, p_t>) and P = (I - S)(I + S)^-1 the Cayley transform of a learnable skew-symmetric
// head_dim x head_dim matrix S (stored as its strict upper triangle U, S = U - U^T).
//
// Scores stay exactly relative: (R_t P q) . (R_u P k) = q^T P^T R(p_u - p_t) P k, since P^T P = I
// and the pair rotations commute. S = 0 gives P = I: rope_mixed. P is computed once a step, by
// one linear solve a head.
//
// Positions and frequencies are rope_mixed's (plugins/common/rotary_positions.h). S starts at 0
// (P = I, so training starts from RoPE-Mixed) unless basis_init draws it.

#include <string>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/full_precision.h"
#include "../../common/rotary.h"
#include "../../common/rotary_positions.h"

namespace pelab {
namespace {

class String : public PositionalEncoding {
 public:
  String(const Layout& layout, const ModelShape& shape, const Params& params, Registry& registry,
         std::int64_t k)
      : tokens_(layout.tokens), head_dim_(shape.d_model / shape.heads) {
    positions_ = plugin_common::register_rotary_positions(*this, layout, shape, params, registry);
    frequencies_ = register_parameter(
        "frequencies", plugin_common::make_mixed_frequencies(shape, params, registry, k));
    torch::Tensor basis = torch::empty({shape.heads, head_dim_ * (head_dim_ - 1) / 2});
    plugin_common::fill_per_head(*registry.create_initializer(params.plugin("basis_init")), basis,
                                 "basis", shape);
    basis_ = register_parameter("basis", basis);
  }

  unsigned hooks() const override { return kRotary; }

  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    plugin_common::check_rotary_inputs("string", q, k, tokens_, head_dim_);
    // x P^T over [batch, heads, N, head_dim] rows: P q for every token. The basis and the angles
    // once a step, in the parameters' precision under autocast too.
    torch::Tensor transposed, cos, sin;
    {
      const plugin_common::FullPrecision full_precision;
      transposed = orthogonal_basis().transpose(-2, -1).unsqueeze(0);
      const torch::Tensor angle = torch::matmul(positions_, frequencies_.transpose(1, 2));
      cos = angle.cos();
      sin = angle.sin();
    }
    return {plugin_common::rotate_pairs(torch::matmul(q, transposed), cos, sin),
            plugin_common::rotate_pairs(torch::matmul(k, transposed), cos, sin)};
  }

  // K[t, u] = (R_t P 1) . (R_u P 1) / head_dim, averaged over the heads: 1 on the diagonal, a
  // function of p_u - p_t only.
  torch::Tensor kernel() override {
    return plugin_common::rotary_kernel(*this, frequencies_.size(0), tokens_, head_dim_,
                                        frequencies_.options());
  }

 private:
  // [heads, head_dim, head_dim]: P = (I + S)^-1 (I - S), equal to (I - S)(I + S)^-1 since both
  // factors are functions of S. I + S is invertible for any skew-symmetric S (its eigenvalues are
  // 1 + i lambda).
  torch::Tensor orthogonal_basis() const {
    const torch::Tensor skew = plugin_common::skew_from_upper(basis_, head_dim_);
    const torch::Tensor identity = torch::eye(head_dim_, basis_.options()).expand_as(skew);
    return torch::linalg_solve(identity + skew, identity - skew, /*left=*/true);
  }

  std::int64_t tokens_;
  std::int64_t head_dim_;
  torch::Tensor positions_;    // [N, k]: a parameter when learned
  torch::Tensor frequencies_;  // [heads, head_dim / 2, k]
  torch::Tensor basis_;        // [heads, head_dim (head_dim - 1) / 2]: S's strict upper triangle
};

void declare(ParamSchema& schema) {
  plugin_common::declare_rotary_positions(schema);
  plugin_common::declare_mixed_frequencies(schema);
  schema.plugin("basis_init", PluginKind::kInitializer, "zeros",
                "How each head's skew-symmetric S (its head_dim (head_dim - 1) / 2 upper "
                "entries) is drawn; \"zeros\" (P = I) starts as rope_mixed.");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const std::int64_t k = plugin_common::rotary_position_dims("string", layout, context.params);
  plugin_common::check_mixed_frequencies("string", shape, context.params, k);
  return std::make_shared<String>(layout, shape, context.params, context.registry, k);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("string", "1.0.0",
                      "Cayley-STRING (Schenck et al. 2025): RoPE-Mixed in a learned orthogonal "
                      "basis P = Cayley(S), exactly relative",
                      pelab::declare, pelab::create)
