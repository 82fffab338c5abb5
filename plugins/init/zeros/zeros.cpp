// Every entry 0. A learnable PE initialised with zeros starts with no positional information at
// all (every token's row is the same), the limit of the paper's small-norm initialisation.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class ZerosInitializer : public Initializer {
 public:
  void fill(torch::Tensor& tensor, const InitContext&) const override {
    torch::NoGradGuard no_grad;
    tensor.zero_();
  }
};

void declare(ParamSchema&) {}

std::shared_ptr<Initializer> create(const PluginContext&) {
  return std::make_shared<ZerosInitializer>();
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("zeros", "1.0.0", "Every entry 0", pelab::declare, pelab::create)
