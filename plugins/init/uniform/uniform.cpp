// Uniform initialisation U(a, b), as torch::nn::init::uniform_: every entry drawn independently
// from [a, b) with torch's default generator. Mean (a + b) / 2, standard deviation
// (b - a) / sqrt(12).

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class UniformInitializer : public Initializer {
 public:
  UniformInitializer(double a, double b) : a_(a), b_(b) {}

  void fill(torch::Tensor& tensor, const InitContext&) const override {
    torch::NoGradGuard no_grad;
    tensor.uniform_(a_, b_);
  }

 private:
  double a_;
  double b_;
};

void declare(ParamSchema& schema) {
  schema.real("a", 0.0, "Lower bound (inclusive).");
  schema.real("b", 1.0, "Upper bound (exclusive); at least a.");
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  const double a = context.params.real("a");
  const double b = context.params.real("b");
  PELAB_CHECK(a <= b,
              "the interval [a, b) is empty: a = {} is greater than b = {}; swap them, e.g. "
              "a = {}, b = {}",
              a, b, b, a);
  return std::make_shared<UniformInitializer>(a, b);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("uniform", "1.0.0", "Uniform U(a, b) with absolute bounds a and b",
                      pelab::declare, pelab::create)
