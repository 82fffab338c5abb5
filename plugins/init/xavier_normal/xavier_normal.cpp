// Glorot & Bengio (2010) initialisation, as torch::nn::init::xavier_normal_:
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
// The fans are torch's (InitContext): fan_in = size(1), fan_out = size(0), each times the
// receptive field (the product of the remaining dimensions). A tensor without fans (1D) is
// refused.

#include <cmath>
#include <sstream>

#include <torch/torch.h>

#include <pelab/error.h>
#include <pelab/plugin.h>

namespace pelab {
namespace {

class XavierNormalInitializer : public Initializer {
 public:
  explicit XavierNormalInitializer(double gain) : gain_(gain) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    if (context.fan_in <= 0 || context.fan_out <= 0) {
      std::ostringstream shape;
      shape << tensor.sizes();
      throw Error(fmt::format(
          "{}: xavier_normal needs a tensor with fans (at least 2 dimensions, none of size 0), "
          "but this one has shape {} (fan_in {}, fan_out {}); use an initializer without fans "
          "for it, e.g. normal, uniform or truncated_normal",
          context.what, shape.str(), context.fan_in, context.fan_out));
    }
    torch::NoGradGuard no_grad;
    const double std =
        gain_ * std::sqrt(2.0 / static_cast<double>(context.fan_in + context.fan_out));
    tensor.normal_(0.0, std);
  }

 private:
  double gain_;
};

void declare(ParamSchema& schema) {
  schema
      .real("gain", 1.0,
            "Multiplies the standard deviation; torch::nn::init::calculate_gain gives the "
            "usual values (1 for linear/sigmoid, 5/3 for tanh, sqrt(2) for relu).")
      .at_least(0.0);
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<XavierNormalInitializer>(context.params.real("gain"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("xavier_normal", "1.0.0",
                      "Glorot/Xavier normal: N(0, std^2), std = gain sqrt(2 / (fan_in + fan_out))",
                      pelab::declare, pelab::create)
