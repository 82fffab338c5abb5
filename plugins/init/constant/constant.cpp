// Every entry the same value. No randomness: the run's seed does not change the result.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class ConstantInitializer : public Initializer {
 public:
  explicit ConstantInitializer(double value) : value_(value) {}

  void fill(torch::Tensor& tensor, const InitContext&) const override {
    torch::NoGradGuard no_grad;
    tensor.fill_(value_);
  }

 private:
  double value_;
};

void declare(ParamSchema& schema) {
  schema.real("value", 0.0, "The value of every entry.").is_init_scale();
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<ConstantInitializer>(context.params.real("value"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("constant", "1.0.0", "Every entry the same value", pelab::declare,
                      pelab::create)
