// Truncated Gaussian: N(mean, std^2) conditioned on [a, b], as Python's
// torch.nn.init.trunc_normal_. The bounds a and b are absolute values (torch's convention), not
// multiples of std: the defaults a = -2, b = 2 are +-2 std only for std = 1.
//
// Inverse-CDF sampling: u ~ U(Phi(alpha), Phi(beta)) with alpha = (a - mean) / std and
// beta = (b - mean) / std, then x = mean + std * Phi^-1(u), computed in float64 and clamped to
// [a, b] in the tensor's own dtype.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

// Beyond this many standard deviations from the mean the inverse CDF loses its precision in
// float64 (the interval holds less than 3e-7 of the mass); such a request is refused.
constexpr double kMaxTailDistance = 5.0;

double standard_normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

class TruncatedNormalInitializer : public Initializer {
 public:
  TruncatedNormalInitializer(double mean, double std, double a, double b)
      : mean_(mean), std_(std), a_(a), b_(b) {}

  void fill(torch::Tensor& tensor, const InitContext&) const override {
    torch::NoGradGuard no_grad;
    if (std_ == 0.0) {
      tensor.fill_(mean_);  // create() checked that a <= mean <= b
      return;
    }
    const double low = 2.0 * standard_normal_cdf((a_ - mean_) / std_) - 1.0;
    const double high = 2.0 * standard_normal_cdf((b_ - mean_) / std_) - 1.0;
    torch::Tensor values =
        torch::empty(tensor.sizes(), tensor.options().dtype(torch::kFloat64)).uniform_(low, high);
    values.erfinv_().mul_(std_ * std::sqrt(2.0)).add_(mean_);
    tensor.copy_(values);
    tensor.clamp_(a_, b_);
  }

 private:
  double mean_;
  double std_;
  double a_;
  double b_;
};

void declare(ParamSchema& schema) {
  schema.real("mean", 0.0, "Mean of the Gaussian before truncation.");
  schema
      .real("std", 1.0, "Standard deviation of the Gaussian before truncation (not the variance).")
      .at_least(0.0)
      .is_init_scale();
  schema.real("a", -2.0,
              "Lower bound, an absolute value (torch's convention), not a multiple of std.");
  schema.real("b", 2.0,
              "Upper bound, an absolute value (torch's convention), not a multiple of std.");
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  const Params& params = context.params;
  const double mean = params.real("mean");
  const double std = params.real("std");
  const double a = params.real("a");
  const double b = params.real("b");
  PELAB_CHECK(
      a < b, "the bounds must satisfy a < b, but a = {} and b = {}; swap them or widen them", a, b);
  if (std == 0.0) {
    PELAB_CHECK(a <= mean && mean <= b,
                "with std = 0 every entry is the mean {}, which lies outside [a, b] = [{}, {}]; "
                "move the mean into the bounds or give std > 0",
                mean, a, b);
  } else {
    PELAB_CHECK(
        (a - mean) / std <= kMaxTailDistance && (b - mean) / std >= -kMaxTailDistance,
        "[a, b] = [{}, {}] lies more than {} std from the mean {} (std {}): it holds almost "
        "none of the Gaussian's mass and cannot be sampled accurately. The bounds are "
        "absolute values, not multiples of std; for +-2 std write a = {}, b = {}",
        a, b, kMaxTailDistance, mean, std, mean - 2.0 * std, mean + 2.0 * std);
  }
  return std::make_shared<TruncatedNormalInitializer>(mean, std, a, b);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("truncated_normal", "1.0.0",
                      "Gaussian N(mean, std^2) truncated to [a, b] (absolute bounds, as torch)",
                      pelab::declare, pelab::create)
