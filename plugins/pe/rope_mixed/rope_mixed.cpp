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

#include <cmath>
#include <string>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/rotary.h"

namespace pelab {
namespace {

constexpr double kPi = 3.14159265358979323846;

// [heads, head_dim/2, k] frequencies: group a (pairs a g .. a g + g - 1) along axis a of each
// head's basis, magnitudes base^(-i/g). `basis` [heads, k, k]: its rows are the axes.
torch::Tensor ladder_frequencies(const torch::Tensor& basis, std::int64_t pairs, double base) {
  const std::int64_t heads = basis.size(0), k = basis.size(1), group = pairs / k;
  const torch::Tensor magnitude = torch::pow(base, -torch::arange(group, torch::kFloat64) / group);
  // [heads, k groups, g, k]: group a's g pairs point along basis row a.
  const torch::Tensor directions = basis.unsqueeze(2).expand({heads, k, group, k});
  return (directions * magnitude.view({1, 1, group, 1})).reshape({heads, pairs, k});
}

// Heo et al.'s per-head random axes: for k = 2, timm's random angle theta (axes at theta and
// theta + pi/2); for other k, a uniformly random rotation (the QR of a Gaussian matrix).
torch::Tensor random_axes(std::int64_t heads, std::int64_t k) {
  if (k == 2) {
    const torch::Tensor theta = torch::rand({heads}, torch::kFloat64) * 2.0 * kPi;
    const torch::Tensor first = torch::stack({theta.cos(), theta.sin()}, 1);
    const torch::Tensor second =
        torch::stack({(theta + kPi / 2).cos(), (theta + kPi / 2).sin()}, 1);
    return torch::stack({first, second}, 1);  // [heads, 2, 2], rows the axes
  }
  const auto [q, r] = torch::linalg_qr(torch::randn({heads, k, k}, torch::kFloat64));
  // Signs fixed by R's diagonal, so that Q is uniform (Mezzadri 2007).
  return q * torch::sign(torch::diagonal(r, 0, -2, -1)).unsqueeze(-2);
}

class RopeMixed : public PositionalEncoding {
 public:
  RopeMixed(const Layout& layout, const ModelShape& shape, const Params& params, Registry& registry)
      : tokens_(layout.tokens), head_dim_(shape.d_model / shape.heads) {
    const std::string& positions = params.string("positions");
    const std::string block =
        shape.block < 0 ? std::string("shared") : fmt::format("block {}", shape.block);
    torch::NoGradGuard no_grad;
    if (positions == "coordinates") {
      positions_ = register_buffer("positions", layout.coordinates.to(torch::kFloat32));
    } else if (positions == "index") {
      positions_ =
          register_buffer("positions", torch::arange(tokens_, torch::kFloat32).unsqueeze(1));
    } else {
      torch::Tensor table = torch::empty({tokens_, params.integer("position_dims")});
      registry.create_initializer(params.plugin("positions_init"))
          ->fill(table, InitContext::for_tensor(table, fmt::format("pe.positions ({})", block),
                                                &layout, shape.block));
      positions_ = register_parameter("positions", table);
    }
    const std::int64_t k = positions_.size(1), pairs = head_dim_ / 2;
    const std::string& start = params.string("frequencies");
    torch::Tensor frequencies;
    if (start == "init") {
      frequencies = torch::empty({shape.heads, pairs, k});
      const auto initializer = registry.create_initializer(params.plugin("frequencies_init"));
      for (std::int64_t h = 0; h < shape.heads; ++h) {
        torch::Tensor head = frequencies[h];
        initializer->fill(head, InitContext::for_tensor(
                                    head, fmt::format("pe.frequencies ({}, head {})", block, h)));
      }
    } else {
      const torch::Tensor axes = start == "axial"
                                     ? torch::eye(k, torch::kFloat64).expand({shape.heads, k, k})
                                     : random_axes(shape.heads, k);
      frequencies = ladder_frequencies(axes, pairs, params.real("base")).to(torch::kFloat32);
    }
    frequencies_ = register_parameter("frequencies", frequencies);
  }

  unsigned hooks() const override { return kRotary; }

  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    plugin_common::check_rotary_inputs("rope_mixed", q, k, tokens_, head_dim_);
    // [heads, N, pairs] = positions [N, k] . frequencies [heads, pairs, k]: once a step.
    const torch::Tensor angle = torch::matmul(positions_, frequencies_.transpose(1, 2));
    const torch::Tensor cos = angle.cos(), sin = angle.sin();
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

bool learned_positions(const Params& p) {
  return p.string("positions") == "learned";
}

void declare(ParamSchema& schema) {
  schema.choice("positions", "coordinates", {"coordinates", "index", "learned"},
                "What the frequencies turn: the task's coordinates (k = D), the token index "
                "(k = 1), or a learnable N x position_dims table (the rotary counterpart of "
                "`learned`).");
  schema.integer("position_dims", 2, "positions = \"learned\": k, the dimension of each position.")
      .in_range(1, 16)
      .used_only_when("positions = \"learned\"", learned_positions);
  schema.plugin("positions_init", PluginKind::kInitializer, "normal",
                "positions = \"learned\": how the N x k position table is drawn, e.g. { plugin = "
                "\"normal\", std = 0.2 } for a small-norm start.");
  schema.choice("frequencies", "mixed", {"mixed", "axial", "init"},
                "How the [heads, head_dim/2, k] frequencies start: \"mixed\" (Heo et al.: random "
                "axes per head, a magnitude ladder), \"axial\" (rotary_nd's ladder), or \"init\" "
                "(drawn by frequencies_init).");
  schema
      .real("base", 100.0,
            "frequencies = \"mixed\" or \"axial\": the i-th of a group's g pairs has magnitude "
            "base^(-i/g) (Heo et al.'s RoPE-Mixed: 10 for ViT patches; rotary_nd's: 10000).")
      .at_least(1.0)
      .used_only_when("frequencies = \"mixed\" or \"axial\"",
                      [](const Params& p) { return p.string("frequencies") != "init"; });
  schema.plugin("frequencies_init", PluginKind::kInitializer, "normal",
                "frequencies = \"init\": how each head's head_dim/2 x k frequencies are drawn.");
  schema
      .boolean("use_hidden_coordinates", false,
               "positions = \"coordinates\": accept coordinates the task marks as ground truth "
               "only (an oracle PE, e.g. the Latin square grid).")
      .used_only_when("positions = \"coordinates\"",
                      [](const Params& p) { return p.string("positions") == "coordinates"; });
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const std::int64_t head_dim = shape.d_model / shape.heads;
  const std::string& positions = params.string("positions");
  if (positions == "coordinates") {
    check_pe_coordinates(layout, params,
                         "positions = \"coordinates\", but the task's layout has none; use "
                         "positions = \"index\" or \"learned\"");
  }
  const std::int64_t k = positions == "coordinates" ? layout.dims()
                         : positions == "index"     ? 1
                                                    : params.integer("position_dims");
  PELAB_CHECK(
      head_dim % 2 == 0 && (params.string("frequencies") == "init" || (head_dim / 2) % k == 0),
      "head_dim ({} = d_model {} / heads {}) must be even{}: change model.d_model or "
      "model.heads",
      head_dim, shape.d_model, shape.heads,
      params.string("frequencies") == "init"
          ? std::string()
          : fmt::format(", and its {} pairs a multiple of the {} position dimension(s) "
                        "(the frequencies' ladder gives each dimension as many pairs)",
                        head_dim / 2, k));
  return std::make_shared<RopeMixed>(layout, shape, params, context.registry);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("rope_mixed", "1.0.0",
                      "RoPE-Mixed (Heo et al. 2024): learnable per-head frequency vectors over "
                      "coordinates, the index or learned positions",
                      pelab::declare, pelab::create)
