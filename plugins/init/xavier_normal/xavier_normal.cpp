// Glorot & Bengio (2010) initialisation, as torch::nn::init::xavier_normal_:
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
// The fans are torch's (InitContext): fan_in = size(1), fan_out = size(0), each times the
// receptive field (the product of the remaining dimensions). A tensor without fans (1D) is
// refused.

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/init_common.h"

namespace pelab {
namespace {

class XavierNormalInitializer : public Initializer {
 public:
  explicit XavierNormalInitializer(double gain) : gain_(gain) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    const double std = init_common::xavier_std(tensor, context, gain_, "xavier_normal");
    torch::NoGradGuard no_grad;
    tensor.normal_(0.0, std);
  }

 private:
  double gain_;
};

void declare(ParamSchema& schema) {
  init_common::declare_xavier(schema);
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<XavierNormalInitializer>(context.params.real("gain"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("xavier_normal", "1.0.0",
                      "Glorot/Xavier normal: N(0, std^2), std = gain sqrt(2 / (fan_in + fan_out))",
                      pelab::declare, pelab::create)
