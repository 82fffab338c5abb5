// He et al. (2015) initialisation, as torch::nn::init::kaiming_normal_:
// N(0, std^2) with std = gain / sqrt(fan),
// where fan is fan_in or fan_out (`mode`) and gain is torch::nn::init::calculate_gain of the
// `nonlinearity` (for leaky_relu: sqrt(2 / (1 + a^2)), a its negative slope). The fans are
// torch's (InitContext); a tensor without fans (1D) is refused.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/init_common.h"

namespace pelab {
namespace {

class KaimingNormalInitializer : public Initializer {
 public:
  KaimingNormalInitializer(double gain, bool fan_in) : gain_(gain), fan_in_(fan_in) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    const double std = init_common::kaiming_std(tensor, context, gain_, fan_in_, "kaiming_normal");
    torch::NoGradGuard no_grad;
    tensor.normal_(0.0, std);
  }

 private:
  double gain_;
  bool fan_in_;
};

void declare(ParamSchema& schema) {
  init_common::declare_kaiming(schema);
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<KaimingNormalInitializer>(init_common::kaiming_gain(context.params),
                                                    context.params.string("mode") == "fan_in");
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("kaiming_normal", "1.0.0",
                      "He/Kaiming normal: N(0, std^2), std = gain / sqrt(fan)", pelab::declare,
                      pelab::create)
