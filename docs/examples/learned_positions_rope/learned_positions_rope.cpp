// A learnable rotary PE that pelab does not ship: each token learns a 2D position p_t (an N x 2
// table drawn by any initializer), and axial RoPE turns the queries and keys by it: pair i of the
// first half of head_dim by p_t,0 theta_i, of the second half by p_t,1 theta_i, theta_i =
// 100^(-i/g) over each half's g pairs. The positions are a registered parameter, so pelab
// snapshots them (pe/param-positions-epoch-*.npy) and the layout probes read them with
// tensor = "positions": whether a small-norm start learns the true layout is asked of it as of
// `learned`.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace {

class LearnedPositionsRope : public pelab::PositionalEncoding {
 public:
  LearnedPositionsRope(const pelab::Layout& layout, const pelab::ModelShape& shape,
                       const pelab::Initializer& initializer)
      : head_dim_(shape.d_model / shape.heads) {
    // Tokens first: a parameter whose first dimension is the tokens is a position table.
    positions_ = register_parameter("positions", torch::empty({layout.tokens, 2}));
    torch::NoGradGuard no_grad;
    initializer.fill(positions_,
                     pelab::InitContext::for_tensor(positions_, "pe.positions", &layout));
    const std::int64_t half = head_dim_ / 4;  // pairs a position axis
    frequencies_ = register_buffer("frequencies",
                                   torch::pow(100.0, -torch::arange(half, torch::kFloat32) / half));
  }

  unsigned hooks() const override { return kRotary; }

  // q and k [batch, heads, N, head_dim]: pair (2i, 2i+1) turned by its angle.
  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    // [N, head_dim / 2]: axis 0's angles, then axis 1's.
    const torch::Tensor angle = torch::cat({positions_.select(1, 0).unsqueeze(1) * frequencies_,
                                            positions_.select(1, 1).unsqueeze(1) * frequencies_},
                                           1);
    return {turn(q, angle.cos(), angle.sin()), turn(k, angle.cos(), angle.sin())};
  }

  // For the probes that compare similarities: the rotated score of all-ones queries and keys.
  torch::Tensor kernel() override {
    torch::NoGradGuard no_grad;
    const torch::Tensor ones = torch::ones({1, 1, positions_.size(0), head_dim_});
    const auto [q, k] = rotate(ones, ones);
    return torch::matmul(q, k.transpose(-2, -1))[0][0] / static_cast<double>(head_dim_);
  }

 private:
  static torch::Tensor turn(const torch::Tensor& x, const torch::Tensor& cos,
                            const torch::Tensor& sin) {
    const torch::Tensor pairs = x.unflatten(-1, {x.size(-1) / 2, 2});
    const torch::Tensor even = pairs.select(-1, 0), odd = pairs.select(-1, 1);
    return torch::stack({even * cos - odd * sin, even * sin + odd * cos}, -1).flatten(-2);
  }

  std::int64_t head_dim_;
  torch::Tensor positions_;    // [N, 2]
  torch::Tensor frequencies_;  // [head_dim / 4]
};

void declare(pelab::ParamSchema& schema) {
  schema.plugin("init", pelab::PluginKind::kInitializer, "normal",
                "How the N x 2 positions are drawn, e.g. { plugin = \"normal\", std = 0.2 }.");
}

std::shared_ptr<pelab::PositionalEncoding> create(const pelab::PluginContext& context,
                                                  const pelab::Layout& layout,
                                                  const pelab::ModelShape& shape) {
  const std::int64_t head_dim = shape.d_model / shape.heads;
  PELAB_CHECK(head_dim % 4 == 0,
              "learned_positions_rope: head_dim ({} = d_model {} / heads {}) must be a multiple "
              "of 4 (a pair a position axis, in two halves); change model.d_model or model.heads",
              head_dim, shape.d_model, shape.heads);
  const auto initializer = context.registry.create_initializer(context.params.plugin("init"));
  return std::make_shared<LearnedPositionsRope>(layout, shape, *initializer);
}

}  // namespace

PELAB_REGISTER_PLUGIN("learned_positions_rope", "0.1.0",
                      "Learned 2D positions turned into axial RoPE angles (an example)", declare,
                      create)
