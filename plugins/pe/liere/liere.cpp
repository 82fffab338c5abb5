// LieRE (Ostmeier et al. 2024, "LieRE: Generalizing Rotary Position Encodings", arXiv 2406.10322):
// token t turns each head's queries and keys by R_t = exp(sum_a p_{t,a} A_a), where the A_a are k
// learnable skew-symmetric generators (one per position dimension) and p_t the token's position.
// The generators are block-diagonal with blocks of block_size = b channels (b divides head_dim):
// b = head_dim is the full LieRE, b = 2 with axis-aligned generators is rotary_nd.
//
// A generator block is stored as its strictly upper triangle U (b(b-1)/2 numbers, LieRE's
// reference parametrisation): A = U - U^T. For b = 2, A = [[0, a], [-a, 0]] and exp(theta A) turns
// the pair by the angle -theta a, so the axial start holds minus rotary_nd's frequencies.
//
// Scores: (R_t q) . (R_u k) = q^T exp(-sum p_t A) exp(sum p_u A) k, which is q^T R(p_u - p_t) k,
// relative in the positions, only where the generators commute (b = 2 always; not in general:
// the test shows a pair of equal differences scoring differently).
//
// The generators start as
//   "liere"  LieRE's reference: every entry of U uniform on [0, 2 pi), a large-norm start by the
//            measure of the paper pelab reproduces;
//   "axial"  rotary_nd's ladder in the (2i, 2i+1) entries (any even b): rotary_nd exactly;
//   "init"   drawn by generators_init, any initializer (for a sweep of their scale).

#include <cmath>
#include <string>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/full_precision.h"
#include "../../common/rotary.h"
#include "../../common/rotary_positions.h"

namespace pelab {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The block size the parameters ask for: block_size, or the whole head when it is 0.
std::int64_t block_size(const Params& params, std::int64_t head_dim) {
  const std::int64_t block = params.integer("block_size");
  return block == 0 ? head_dim : block;
}

class Liere : public PositionalEncoding {
 public:
  Liere(const Layout& layout, const ModelShape& shape, const Params& params, Registry& registry,
        std::int64_t k)
      : tokens_(layout.tokens),
        head_dim_(shape.d_model / shape.heads),
        block_(block_size(params, head_dim_)) {
    positions_ = plugin_common::register_rotary_positions(*this, layout, shape, params, registry);
    const std::int64_t blocks = head_dim_ / block_, entries = block_ * (block_ - 1) / 2;
    torch::NoGradGuard no_grad;
    torch::Tensor generators = torch::zeros({shape.heads, k, blocks, entries});
    const std::string& start = params.string("generators");
    if (start == "liere") {
      generators.uniform_(0.0, 2.0 * kPi);
    } else if (start == "axial") {
      // rotary_nd's frequencies, negated (see above), in each pair's (2i, 2i+1) entry.
      const torch::Tensor ladder = plugin_common::ladder_frequencies(
          torch::eye(k, torch::kFloat64).expand({shape.heads, k, k}), head_dim_ / 2,
          params.real("base"));  // [heads, pairs, k]
      const std::int64_t pairs_per_block = block_ / 2;
      for (std::int64_t i = 0; i < head_dim_ / 2; ++i) {
        const std::int64_t within = i % pairs_per_block, row = 2 * within;
        // The index of entry (row, row + 1) in the row-major strict upper triangle.
        const std::int64_t entry = row * block_ - row * (row + 1) / 2;
        generators.select(2, i / pairs_per_block)
            .select(-1, entry)
            .copy_(-ladder.select(1, i));  // [heads, k]
      }
    } else {
      plugin_common::fill_per_head(*registry.create_initializer(params.plugin("generators_init")),
                                   generators, "generators", shape);
    }
    generators_ = register_parameter("generators", generators);
  }

  unsigned hooks() const override { return kRotary; }

  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    plugin_common::check_rotary_inputs("liere", q, k, tokens_, head_dim_);
    if (block_ == 2) {
      // exp of [[0, theta], [-theta, 0]] in closed form: a pair turned by -theta.
      const torch::Tensor angle = -generator_weights().squeeze(-1);  // [heads, N, pairs]
      const torch::Tensor cos = angle.cos(), sin = angle.sin();
      return {plugin_common::rotate_pairs(q, cos, sin), plugin_common::rotate_pairs(k, cos, sin)};
    }
    const torch::Tensor rotation = rotations();  // [heads, N, blocks, b, b]: once a step
    return {turn(q, rotation), turn(k, rotation)};
  }

  // K[t, u] = (R_t 1) . (R_u 1) / head_dim, averaged over the heads: 1 on the diagonal.
  torch::Tensor kernel() override {
    return plugin_common::rotary_kernel(*this, generators_.size(0), tokens_, head_dim_,
                                        generators_.options());
  }

 private:
  // [heads, N, blocks, entries]: sum_a p_{t,a} U_a, each token's generator's upper triangle, in
  // the parameters' precision under autocast too.
  torch::Tensor generator_weights() const {
    const plugin_common::FullPrecision full_precision;
    return torch::einsum("ta,hake->htke", {positions_, generators_});
  }

  // [heads, N, blocks, b, b]: exp(A) of each token's generator A = U - U^T, in the parameters'
  // precision under autocast too (in bf16 the exponential of LieRE's large generators is NaN).
  torch::Tensor rotations() const {
    const plugin_common::FullPrecision full_precision;
    return torch::matrix_exp(plugin_common::skew_from_upper(generator_weights(), block_));
  }

  // x [batch, heads, N, head_dim] turned block by block: x'_block = R x_block, one product per
  // head, token and block over the whole batch. (A broadcast matmul makes a b x b by b x 1
  // product per batch element instead: 16,384 BLAS calls a turn on the quick Latin Square, 4.5x
  // slower with its backward.)
  torch::Tensor turn(const torch::Tensor& x, const torch::Tensor& rotation) const {
    const torch::Tensor blocks = x.unflatten(-1, {head_dim_ / block_, block_});
    return torch::einsum("htkij,bhtkj->bhtki", {rotation, blocks}).flatten(-2);
  }

  std::int64_t tokens_;
  std::int64_t head_dim_;
  std::int64_t block_;
  torch::Tensor positions_;   // [N, k]: a parameter when learned
  torch::Tensor generators_;  // [heads, k, blocks, b(b-1)/2]
};

void declare(ParamSchema& schema) {
  plugin_common::declare_rotary_positions(schema);
  schema
      .integer("block_size", 0,
               "b, the size of the generators' diagonal blocks; it divides head_dim. 0: the "
               "whole head (full LieRE); 2: pairs, as RoPE.")
      .in_range(0, 4096);
  schema.choice("generators", "liere", {"liere", "axial", "init"},
                "How the generators start: \"liere\" (LieRE's reference: uniform on [0, 2 pi)), "
                "\"axial\" (rotary_nd's ladder: rotary_nd exactly), or \"init\" (drawn by "
                "generators_init).");
  schema
      .real("base", 10000.0,
            "generators = \"axial\": the ladder's base, as rotary_nd's (pair i of a group of g "
            "turns at base^(-i/g)).")
      .at_least(1.0)
      .used_only_when("generators = \"axial\"",
                      [](const Params& p) { return p.string("generators") == "axial"; });
  schema
      .plugin("generators_init", PluginKind::kInitializer, "normal",
              "generators = \"init\": how each head's k x blocks x b(b-1)/2 generator entries "
              "are drawn, e.g. { plugin = \"normal\", std = 0.2 }.")
      .used_only_when("generators = \"init\"",
                      [](const Params& p) { return p.string("generators") == "init"; });
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const std::int64_t head_dim = shape.d_model / shape.heads;
  const std::int64_t k = plugin_common::rotary_position_dims("liere", layout, params);
  const std::int64_t block = block_size(params, head_dim);
  PELAB_CHECK(head_dim % 2 == 0,
              "liere: head_dim ({} = d_model {} / heads {}) must be even; change model.d_model "
              "or model.heads",
              head_dim, shape.d_model, shape.heads);
  PELAB_CHECK(block >= 2 && head_dim % block == 0,
              "liere: block_size ({}) must be at least 2 and divide head_dim ({} = d_model {} / "
              "heads {}); 0 takes the whole head",
              params.integer("block_size"), head_dim, shape.d_model, shape.heads);
  if (params.string("generators") == "axial") {
    PELAB_CHECK(block % 2 == 0 && (head_dim / 2) % k == 0,
                "liere: generators = \"axial\" needs an even block_size ({}) and head_dim's {} "
                "pairs a multiple of the {} position dimension(s)",
                block, head_dim / 2, k);
  }
  return std::make_shared<Liere>(layout, shape, params, context.registry, k);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("liere", "1.0.0",
                      "LieRE (Ostmeier et al. 2024): rotations exp(sum_a p_a A_a) by learnable "
                      "skew-symmetric generators in blocks, over coordinates, the index or "
                      "learned positions",
                      pelab::declare, pelab::create)
