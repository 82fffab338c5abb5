// He et al. (2015) initialisation, as torch::nn::init::kaiming_uniform_:
// U(-bound, bound) with bound = sqrt(3) * std, std = gain / sqrt(fan),
// where fan is fan_in or fan_out (`mode`) and gain is torch::nn::init::calculate_gain of the
// `nonlinearity` (for leaky_relu: sqrt(2 / (1 + a^2)), a its negative slope). The fans are
// torch's (InitContext); a tensor without fans (1D) is refused.

#include <cmath>
#include <sstream>
#include <string>

#include <torch/torch.h>

#include <pelab/error.h>
#include <pelab/plugin.h>

namespace pelab {
namespace {

// torch.nn.init.calculate_gain, including the nonlinearities the C++ API lacks (selu).
double calculate_gain(const std::string& nonlinearity, double a) {
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + a * a));
  if (nonlinearity == "selu") return 3.0 / 4;
  return 1.0;  // linear, sigmoid
}

class KaimingUniformInitializer : public Initializer {
 public:
  KaimingUniformInitializer(double gain, bool fan_in) : gain_(gain), fan_in_(fan_in) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    const std::int64_t fan = fan_in_ ? context.fan_in : context.fan_out;
    if (fan <= 0) {
      std::ostringstream shape;
      shape << tensor.sizes();
      throw Error(fmt::format(
          "{}: kaiming_uniform needs a tensor with fans (at least 2 dimensions, none of size 0), "
          "but this one has shape {} ({} {}); use an initializer without fans for it, e.g. "
          "normal, uniform or truncated_normal",
          context.what, shape.str(), fan_in_ ? "fan_in" : "fan_out", fan));
    }
    torch::NoGradGuard no_grad;
    const double std = gain_ / std::sqrt(static_cast<double>(fan));
    const double bound = std::sqrt(3.0) * std;  // as torch
    tensor.uniform_(-bound, bound);
  }

 private:
  double gain_;
  bool fan_in_;
};

void declare(ParamSchema& schema) {
  schema.choice("nonlinearity", "leaky_relu",
                {"linear", "sigmoid", "tanh", "relu", "leaky_relu", "selu"},
                "The nonlinearity after the layer; its gain (torch's calculate_gain) multiplies "
                "the standard deviation: 1 for linear and sigmoid (torch's conv* gains are also "
                "1: use linear), 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + a^2)) for "
                "leaky_relu, 3/4 for selu.");
  schema.real("a", 0.0,
              "Negative slope of the leaky_relu (only with nonlinearity = \"leaky_relu\"; the "
              "default 0 gives relu's gain sqrt(2)).");
  schema.choice("mode", "fan_in", {"fan_in", "fan_out"},
                "fan_in preserves the variance of the activations in the forward pass, fan_out "
                "that of the gradients in the backward pass.");
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  const Params& params = context.params;
  const std::string& nonlinearity = params.string("nonlinearity");
  const double a = params.real("a");
  PELAB_CHECK(a == 0.0 || nonlinearity == "leaky_relu",
              "a = {} is the negative slope of a leaky_relu, but nonlinearity = \"{}\"; set "
              "nonlinearity = \"leaky_relu\" or remove a",
              a, nonlinearity);
  return std::make_shared<KaimingUniformInitializer>(calculate_gain(nonlinearity, a),
                                                     params.string("mode") == "fan_in");
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("kaiming_uniform", "1.0.0",
                      "He/Kaiming uniform: U(-b, b), b = gain sqrt(3 / fan)", pelab::declare,
                      pelab::create)
