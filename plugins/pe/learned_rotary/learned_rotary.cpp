// A learnable rotary PE: the rotary counterpart of `learned`. Token t turns channel pair
// (2i, 2i+1) of every query and key by a learned angle Theta[t, i], i < head_dim / 2 (one table
// shared by the heads, or one a head with per_head = true). Nothing is read from the task, so it
// runs where the coordinates are hidden (the Latin Square), and the table is initialised by any
// initializer plugin, so that the paper's question (does a small-norm start learn the layout?) is
// asked of it exactly as of `learned`: `init = { plugin = "normal", std = 0.2 }`.
//
// As for every rotary PE, (R_t q) . (R_u k) = q . R(Theta_u - Theta_t) k pair by pair: a score
// depends on the tokens only through their angle differences. Theta = 0 is the identity (NoPE);
// Theta[t, i] = t base^(-2i / head_dim) is RoPE (rotary_1d).

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/rotary.h"

namespace pelab {
namespace {

class LearnedRotary : public PositionalEncoding {
 public:
  LearnedRotary(const Layout& layout, const ModelShape& shape, bool per_head,
                const Initializer& initializer)
      : tokens_(layout.tokens), head_dim_(shape.d_model / shape.heads) {
    const std::int64_t tables = per_head ? shape.heads : 1;
    // [N, tables, head_dim/2], tokens first: a position table the layout probes can read.
    torch::Tensor angles = torch::empty({tokens_, tables, head_dim_ / 2});
    torch::NoGradGuard no_grad;
    const std::string block =
        shape.block < 0 ? std::string("shared") : fmt::format("block {}", shape.block);
    // Each head's N x head_dim/2 table is filled as `learned` fills its N x d table, so that
    // initializers that read the token layout (from_layout, sinusoidal) apply row by row.
    for (std::int64_t h = 0; h < tables; ++h) {
      torch::Tensor table = torch::empty({tokens_, head_dim_ / 2});
      const std::string what = per_head ? fmt::format("pe.angles ({}, head {})", block, h)
                                        : fmt::format("pe.angles ({})", block);
      initializer.fill(table, InitContext::for_tensor(table, what, &layout, shape.block));
      angles.select(1, h).copy_(table);
    }
    angles_ = register_parameter("angles", angles);
  }

  unsigned hooks() const override { return kRotary; }

  // q and k [batch, heads, N, head_dim]; the angles, as [tables, N, head_dim / 2], broadcast over
  // the batch, and over the heads when shared.
  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    plugin_common::check_rotary_inputs("learned_rotary", q, k, tokens_, head_dim_);
    const torch::Tensor angles = angles_.permute({1, 0, 2});
    const torch::Tensor cos = angles.cos();
    const torch::Tensor sin = angles.sin();
    return {plugin_common::rotate_pairs(q, cos, sin), plugin_common::rotate_pairs(k, cos, sin)};
  }

  // No table: the kernel is the rotated score of an all-ones query and key over head_dim,
  // K[t, u] = (2 / head_dim) sum_i cos(Theta[u, i] - Theta[t, i]), averaged over the heads'
  // tables: 1 on the diagonal, a function of the angle differences only.
  torch::Tensor kernel() override {
    return plugin_common::rotary_kernel(*this, angles_.size(1), tokens_, head_dim_,
                                        angles_.options());
  }

 private:
  std::int64_t tokens_;
  std::int64_t head_dim_;
  torch::Tensor angles_;  // [N, tables, head_dim / 2]
};

void declare(ParamSchema& schema) {
  schema.plugin("init", PluginKind::kInitializer, "normal",
                "How the N x head_dim/2 angle table is initialised (radians), e.g. { plugin = "
                "\"normal\", std = 0.2 } for a small-norm start; \"zeros\" starts as NoPE.");
  schema.boolean("per_head", false,
                 "One angle table a head ([heads, N, head_dim/2]) instead of one shared by the "
                 "heads.");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const std::int64_t head_dim = shape.d_model / shape.heads;
  PELAB_CHECK(head_dim % 2 == 0,
              "head_dim ({} = d_model {} / heads {}) must be even: learned_rotary turns the "
              "channels in pairs; change model.d_model or model.heads",
              head_dim, shape.d_model, shape.heads);
  const auto initializer = context.registry.create_initializer(context.params.plugin("init"));
  return std::make_shared<LearnedRotary>(layout, shape, context.params.boolean("per_head"),
                                         *initializer);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("learned_rotary", "1.0.0",
                      "Learnable rotary angles: token t turns channel pair i by a learned "
                      "Theta[t, i], initialised by any initializer",
                      pelab::declare, pelab::create)
