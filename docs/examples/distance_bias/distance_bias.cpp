// An attention-side PE that pelab does not ship: each head adds -slope_h * ||x_i - x_j|| to its
// attention logits, with the slopes learned (ALiBi with learnable slopes, over the layout's
// coordinates). It has no table; probes read its kernel, the mean bias over heads.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace {

class DistanceBiasPE : public pelab::PositionalEncoding {
 public:
  DistanceBiasPE(const pelab::Layout& layout, std::int64_t heads, double initial_slope) {
    const torch::Tensor x = layout.coordinates.to(torch::kFloat32);
    distance_ = register_buffer("distance", torch::cdist(x, x));  // [N, N]
    slopes_ = register_parameter("slopes", torch::full({heads, 1, 1}, initial_slope));
  }

  unsigned hooks() const override { return kAttentionBias; }
  torch::Tensor attention_bias() override { return -slopes_ * distance_.unsqueeze(0); }
  torch::Tensor kernel() override { return attention_bias().mean(0); }

 private:
  torch::Tensor distance_;  // [N, N]
  torch::Tensor slopes_;    // [heads, 1, 1]
};

void declare(pelab::ParamSchema& schema) {
  schema.real("slope", 0.5, "Every head's slope before training.").at_least(0.0);
  schema.boolean("use_hidden_coordinates", false,
                 "Use coordinates the task marks as ground truth only (an oracle PE).");
}

std::shared_ptr<pelab::PositionalEncoding> create(const pelab::PluginContext& context,
                                                  const pelab::Layout& layout,
                                                  const pelab::ModelShape& shape) {
  pelab::check_pe_coordinates(layout, context.params,
                              "distance_bias needs the tokens' coordinates, but the task's "
                              "layout has none");
  PELAB_CHECK(shape.heads > 0, "heads must be positive, got {}", shape.heads);
  return std::make_shared<DistanceBiasPE>(layout, shape.heads, context.params.real("slope"));
}

}  // namespace

PELAB_REGISTER_PLUGIN("distance_bias", "0.1.0",
                      "Learnable per-head slope times the coordinate distance, added to the "
                      "attention logits (an example)",
                      declare, create)
