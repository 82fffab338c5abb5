// Learnable Fourier features (Li, Si, Li, Hsieh and Bengio 2021, "Learnable Fourier Features for
// Multi-Dimensional Spatial Positional Encoding"), one positional group.
//
// The layout's coordinates x [N, D] go through random Fourier features with a learned frequency
// matrix W_r [F/2, D], then an MLP:
//   r_x   = [cos(x W_r^T), sin(x W_r^T)] / sqrt(F)                      [N, F]
//   PE(x) = Linear(H, d)(GELU(Linear(F, H)(r_x)))                       [N, d]
// W_r starts as N(0, gamma^-2) entries (std 1/gamma); the MLP has torch's default Linear
// initialisation. All of it is trained; the table is recomputed from the coordinates at every
// forward pass and added to the tokens, so it depends on a token only through its coordinates.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/coordinates.h"
#include "../../common/full_precision.h"

namespace pelab {
namespace {

class FourierLearnable : public PositionalEncoding {
 public:
  FourierLearnable(const Layout& layout, std::int64_t d_model, std::int64_t fourier_dim,
                   std::int64_t hidden_dim, double gamma)
      : fourier_dim_(fourier_dim) {
    coordinates_ = register_buffer("coordinates", layout.coordinates.to(torch::kFloat32));
    torch::Tensor frequencies = torch::empty({fourier_dim / 2, layout.dims()});
    {
      torch::NoGradGuard no_grad;
      frequencies.normal_(0.0, 1.0 / gamma);
    }
    frequencies_ = register_parameter("frequencies", std::move(frequencies));
    hidden_ = register_module("hidden", torch::nn::Linear(fourier_dim, hidden_dim));
    output_ = register_module("output", torch::nn::Linear(hidden_dim, d_model));
  }

  unsigned hooks() const override { return kAdditive; }
  torch::Tensor embed(const torch::Tensor& x) override { return x + table(); }

  // Recomputed on every call; differentiable in W_r and the MLP.
  torch::Tensor table() override {
    torch::Tensor projected;  // [N, F/2]: angles, in the parameters' precision under autocast too
    {
      const plugin_common::FullPrecision full_precision;
      projected = torch::matmul(coordinates_, frequencies_.t());
    }
    const torch::Tensor features = torch::cat({projected.cos(), projected.sin()}, 1) /
                                   std::sqrt(static_cast<double>(fourier_dim_));
    return output_->forward(torch::gelu(hidden_->forward(features)));
  }

 private:
  std::int64_t fourier_dim_;
  torch::Tensor coordinates_;  // [N, D]
  torch::Tensor frequencies_;  // W_r [F/2, D]
  torch::nn::Linear hidden_{nullptr}, output_{nullptr};
};

void declare(ParamSchema& schema) {
  schema
      .integer("fourier_dim", 64,
               "F: the number of Fourier features (cos and sin of F/2 "
               "learned frequencies); must be even.")
      .in_range(2, 65536);
  schema.integer("hidden_dim", 32, "H: the width of the MLP's hidden layer.").in_range(1, 65536);
  schema
      .real("gamma", 1.0,
            "Bandwidth of the initial frequencies, in coordinate units: W_r starts as N(0, "
            "gamma^-2), i.e. std 1/gamma, so a larger gamma starts with smoother (longer-"
            "wavelength) features.")
      .at_least(1e-6);
  schema.boolean("use_hidden_coordinates", false,
                 "Build the features from coordinates the task marks as ground truth only (an "
                 "oracle PE, e.g. the Latin square grid).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  check_pe_coordinates(
      layout, params,
      "it needs token coordinates, but the task's layout has none; use a learned PE");
  const std::int64_t fourier_dim = params.integer("fourier_dim");
  PELAB_CHECK(fourier_dim % 2 == 0,
              "fourier_dim ({}) must be even: it holds the cosine and the sine of fourier_dim / 2 "
              "frequencies",
              fourier_dim);
  return std::make_shared<FourierLearnable>(layout, shape.d_model, fourier_dim,
                                            params.integer("hidden_dim"), params.real("gamma"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("fourier_learnable", "1.0.0",
                      "Learnable Fourier features of the coordinates through an MLP (Li et al. "
                      "2021)",
                      pelab::declare, pelab::create)
