// RoPE-Mixed (Heo et al. 2024, "Rotary Position Embedding for Vision Transformer"; timm's
// RotaryEmbeddingMixed): per head h and channel pair i a learnable frequency vector f[h, i] in
// R^k, and token t turns pair i of head h by the angle <f[h, i], p_t>. Unlike axial RoPE
// (rotary_nd) a pair may turn with every axis at once, so the model can learn diagonal and mixed
// directions. Scores stay relative: <f, p_u> - <f, p_t> = <f, p_u - p_t>, so q_t . k_u depends on
// the positions only through p_u - p_t.
//
// The positions p_t (k = their dimension):
//   "coordinates"  the task's layout (k = D; ground-truth-only ones with use_hidden_coordinates,
//                  an oracle);
//   "index"        the token index t (k = 1);
//   "learned"      a learnable N x position_dims table drawn by positions_init: the rotary
//                  counterpart of `learned`, where the paper's init question can be asked.
// Learned positions are identifiable only up to an invertible linear map A (the frequencies
// absorb A^-1: <f, A p> = <A^T f, p>), so a linear probe (decoding) is the fair judge of whether
// they mirror the true layout.
//
// The frequencies start as
//   "mixed"  Heo et al.'s init (timm's init_random_2d_freqs for k = 2): per head a random rotation
//            of the axes, the head_dim/2 pairs split into k groups, group a along rotated axis a,
//            magnitudes base^(-i/g) for the i-th of the g = head_dim/(2k) pairs of a group;
//   "axial"  rotary_nd's ladder: group a along axis a itself, the same in every head (with
//            positions = "coordinates" this is rotary_nd, to float rounding);
//   "init"   drawn by frequencies_init, any initializer (for a sweep of their scale).

#include <string>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/full_precision.h"
#include "../../common/rotary.h"
#include "../../common/rotary_positions.h"

namespace pelab {
namespace {

class RopeMixed : public PositionalEncoding {
 public:
  RopeMixed(const Layout& layout, const ModelShape& shape, const Params& params, Registry& registry,
            std::int64_t k)
      : tokens_(layout.tokens), head_dim_(shape.d_model / shape.heads) {
    positions_ = plugin_common::register_rotary_positions(*this, layout, shape, params, registry);
    frequencies_ = register_parameter(
        "frequencies", plugin_common::make_mixed_frequencies(shape, params, registry, k));
  }

  unsigned hooks() const override { return kRotary; }

  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    plugin_common::check_rotary_inputs("rope_mixed", q, k, tokens_, head_dim_);
    // [heads, N, pairs] = positions [N, k] . frequencies [heads, pairs, k]: once a step, in the
    // parameters' precision under autocast too.
    torch::Tensor cos, sin;
    {
      const plugin_common::FullPrecision full_precision;
      const torch::Tensor angle = torch::matmul(positions_, frequencies_.transpose(1, 2));
      cos = angle.cos();
      sin = angle.sin();
    }
    return {plugin_common::rotate_pairs(q, cos, sin), plugin_common::rotate_pairs(k, cos, sin)};
  }

  // K[t, u] = (R_t 1) . (R_u 1) / head_dim = (2 / head_dim) sum_i cos(<f_i, p_u - p_t>), averaged
  // over the heads: 1 on the diagonal, a function of p_u - p_t only.
  torch::Tensor kernel() override {
    return plugin_common::rotary_kernel(*this, frequencies_.size(0), tokens_, head_dim_,
                                        frequencies_.options());
  }

 private:
  std::int64_t tokens_;
  std::int64_t head_dim_;
  torch::Tensor positions_;    // [N, k]: a parameter when learned
  torch::Tensor frequencies_;  // [heads, head_dim / 2, k]
};

void declare(ParamSchema& schema) {
  plugin_common::declare_rotary_positions(schema);
  plugin_common::declare_mixed_frequencies(schema);
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const std::int64_t k = plugin_common::rotary_position_dims("rope_mixed", layout, context.params);
  plugin_common::check_mixed_frequencies("rope_mixed", shape, context.params, k);
  return std::make_shared<RopeMixed>(layout, shape, context.params, context.registry, k);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("rope_mixed", "1.0.0",
                      "RoPE-Mixed (Heo et al. 2024): learnable per-head frequency vectors over "
                      "coordinates, the index or learned positions",
                      pelab::declare, pelab::create)
