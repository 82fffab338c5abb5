// Glorot & Bengio (2010) initialisation, as torch::nn::init::xavier_uniform_:
// U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)), i.e. standard
// deviation gain * sqrt(2 / (fan_in + fan_out)).
// The fans are torch's (InitContext): fan_in = size(1), fan_out = size(0), each times the
// receptive field (the product of the remaining dimensions). A tensor without fans (1D) is
// refused.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/init_common.h"

namespace pelab {
namespace {

class XavierUniformInitializer : public Initializer {
 public:
  explicit XavierUniformInitializer(double gain) : gain_(gain) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    const double std = init_common::xavier_std(tensor, context, gain_, "xavier_uniform");
    torch::NoGradGuard no_grad;
    const double bound = std::sqrt(3.0) * std;  // as torch: sqrt(3) std = gain sqrt(6 / fans)
    tensor.uniform_(-bound, bound);
  }

 private:
  double gain_;
};

void declare(ParamSchema& schema) {
  init_common::declare_xavier(schema);
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<XavierUniformInitializer>(context.params.real("gain"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("xavier_uniform", "1.0.0",
                      "Glorot/Xavier uniform: U(-b, b), b = gain sqrt(6 / (fan_in + fan_out))",
                      pelab::declare, pelab::create)
