// ALiBi, attention with linear biases (Press, Smith and Lewis 2022, "Train Short, Test Long").
//
// Head h adds bias[h, i, j] = -m_h * dist(i, j) to the attention logits, where the slopes m_h are
// the paper's geometric sequence: for a power of two n heads, m_h = 2^(-8 (h + 1) / n), h = 0 ..
// n-1 (8 heads: 1/2, 1/4, ..., 1/256); otherwise the slopes of the largest power of two p below n,
// followed by every other slope of 2p heads (1st, 3rd, ...) up to n in all (the reference
// code's get_slopes). pelab's encoder is not causal, so the bias is symmetric:
//   distance = "index":     dist(i, j) = |i - j|, the token indices (any task);
//   distance = "euclidean": dist(i, j) = ||x_i - x_j||, the layout's coordinates (2D, 3D, ...).
// Nothing is learned.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/coordinates.h"

namespace pelab {
namespace {

std::vector<double> power_of_two_slopes(std::int64_t heads) {
  const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(heads) - 3.0)));
  std::vector<double> slopes;
  for (std::int64_t h = 0; h < heads; ++h)
    slopes.push_back(std::pow(start, h + 1));
  return slopes;
}

// The reference implementation's get_slopes(n).
std::vector<double> alibi_slopes(std::int64_t heads) {
  std::int64_t power = 1;
  while (power * 2 <= heads)
    power *= 2;
  std::vector<double> slopes = power_of_two_slopes(power);
  if (power == heads) return slopes;
  const std::vector<double> doubled = alibi_slopes(2 * power);
  for (std::size_t h = 0; static_cast<std::int64_t>(slopes.size()) < heads; h += 2)
    slopes.push_back(doubled[h]);
  return slopes;
}

class ALiBi : public PositionalEncoding {
 public:
  ALiBi(const torch::Tensor& distance, std::int64_t heads) {
    const std::vector<double> slopes = alibi_slopes(heads);
    const torch::Tensor m = torch::tensor(slopes, torch::kFloat64).view({heads, 1, 1});
    slopes_ = register_buffer("slopes", m.flatten().to(torch::kFloat32));
    bias_ = register_buffer("bias", (-m * distance.unsqueeze(0)).to(torch::kFloat32));
  }

  unsigned hooks() const override { return kAttentionBias; }
  torch::Tensor attention_bias() override { return bias_; }

 private:
  torch::Tensor slopes_;  // [heads]
  torch::Tensor bias_;    // [heads, N, N]
};

void declare(ParamSchema& schema) {
  schema.choice("distance", "index", {"index", "euclidean"},
                "What the bias is linear in: |i - j| between token indices, or the Euclidean "
                "distance between the layout's coordinates (for grids and 3D layouts).");
  schema.boolean("use_hidden_coordinates", false,
                 "With distance = \"euclidean\": use coordinates the task marks as ground truth "
                 "only (an oracle PE).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  PELAB_CHECK(shape.heads > 0, "heads must be positive, got {}", shape.heads);
  torch::Tensor distance;
  if (params.string("distance") == "euclidean") {
    check_pe_coordinates(layout, params,
                         "distance = \"euclidean\" needs token coordinates, but "
                         "the task's layout has none; use distance = \"index\"");
    const torch::Tensor x = layout.coordinates.to(torch::kFloat64);
    distance = (x.unsqueeze(1) - x.unsqueeze(0)).pow(2).sum(-1).sqrt();
  } else {
    const torch::Tensor index = torch::arange(layout.tokens, torch::kFloat64);
    distance = (index.unsqueeze(1) - index.unsqueeze(0)).abs();
  }
  return std::make_shared<ALiBi>(distance, shape.heads);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("alibi", "1.0.0",
                      "ALiBi: fixed per-head bias -slope x distance (token index or coordinates)",
                      pelab::declare, pelab::create)
