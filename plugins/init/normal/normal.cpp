// Gaussian initialisation N(mean, std^2). The paper's sigma is this `std` (a standard deviation,
// not a variance).

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class NormalInitializer : public Initializer {
 public:
  NormalInitializer(double mean, double std) : mean_(mean), std_(std) {}

  void fill(torch::Tensor& tensor, const InitContext&) const override {
    torch::NoGradGuard no_grad;
    tensor.normal_(mean_, std_);
  }

 private:
  double mean_;
  double std_;
};

void declare(ParamSchema& schema) {
  schema.real("std", 1.0, "Standard deviation (not the variance): the paper's sigma.")
      .at_least(0.0)
      .is_init_scale();
  schema.real("mean", 0.0, "Mean.");
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<NormalInitializer>(context.params.real("mean"),
                                             context.params.real("std"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("normal", "1.0.0", "Gaussian N(mean, std^2); std is not the variance",
                      pelab::declare, pelab::create)
