// An additive PE that pelab does not ship: a learnable linear map of the tokens' coordinates,
// table = coordinates [N, D] x W [D, d_model]. It can only place tokens as an affine image of
// their true positions, which makes it a useful floor for what a free learned table should reach.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace {

class CoordinateLinearPE : public pelab::PositionalEncoding {
 public:
  CoordinateLinearPE(const pelab::Layout& layout, const pelab::ModelShape& shape,
                     const pelab::Initializer& initializer) {
    coordinates_ = register_buffer("coordinates", layout.coordinates.to(torch::kFloat32));
    weight_ = register_parameter("weight", torch::empty({layout.dims(), shape.d_model}));
    torch::NoGradGuard no_grad;
    initializer.fill(weight_, pelab::InitContext::for_tensor(weight_, "pe.weight"));
  }

  unsigned hooks() const override { return kAdditive; }
  torch::Tensor embed(const torch::Tensor& x) override { return x + table(); }
  // The probes read the table: rsa, procrustes and decoding work on it unchanged.
  torch::Tensor table() override { return coordinates_.matmul(weight_); }

 private:
  torch::Tensor coordinates_;  // [N, D]
  torch::Tensor weight_;       // [D, d_model]
};

void declare(pelab::ParamSchema& schema) {
  schema.plugin("init", pelab::PluginKind::kInitializer, "normal",
                "How W is initialised, e.g. { plugin = \"normal\", std = 0.2 }.");
  schema.boolean("use_hidden_coordinates", false,
                 "Use coordinates the task marks as ground truth only (an oracle PE).");
}

std::shared_ptr<pelab::PositionalEncoding> create(const pelab::PluginContext& context,
                                                  const pelab::Layout& layout,
                                                  const pelab::ModelShape& shape) {
  // The SDK's guard: no coordinates, or hidden ones without use_hidden_coordinates, is an error.
  pelab::check_pe_coordinates(layout, context.params,
                              "coordinate_linear maps the tokens' coordinates, but the task's "
                              "layout has none; use a learned PE instead");
  const auto initializer = context.registry.create_initializer(context.params.plugin("init"));
  return std::make_shared<CoordinateLinearPE>(layout, shape, *initializer);
}

}  // namespace

PELAB_REGISTER_PLUGIN("coordinate_linear", "0.1.0",
                      "Learnable linear map of the coordinates, added to the tokens (an example)",
                      declare, create)
