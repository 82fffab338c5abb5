// Any initializer, then rescaled to a target norm: the Frobenius norm of the whole tensor
// (mode = "frobenius") or the L2 norm of every row (mode = "row"; a row is everything under one
// index of dimension 0, e.g. one token's PE vector). This separates the direction an
// initializer draws from the norm the paper finds decisive. The rescaling is computed in float64.

#include <cmath>
#include <sstream>
#include <string>

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class ScaledNormInitializer : public Initializer {
 public:
  ScaledNormInitializer(std::shared_ptr<Initializer> inner, std::string inner_name, double norm,
                        bool rows)
      : inner_(std::move(inner)), inner_name_(std::move(inner_name)), norm_(norm), rows_(rows) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    std::ostringstream shape;
    shape << tensor.sizes();
    PELAB_CHECK(!rows_ || tensor.dim() >= 2,
                "{}: mode = \"row\" rescales every row, but this tensor of shape {} has no rows "
                "(it is {}D); use mode = \"frobenius\"",
                context.what, shape.str(), tensor.dim());
    torch::NoGradGuard no_grad;
    inner_->fill(tensor, context);
    if (tensor.numel() == 0) return;
    if (norm_ == 0.0) {
      tensor.zero_();
      return;
    }
    torch::Tensor values = tensor.to(torch::kFloat64);
    if (rows_) values = values.reshape({tensor.size(0), -1});
    const torch::Tensor norms = rows_ ? values.norm(2, {1}, /*keepdim=*/true) : values.norm();
    const torch::Tensor zero = norms.eq(0).nonzero();
    if (zero.size(0) > 0) {
      const std::string which =
          rows_ ? fmt::format("row {} is", zero[0][0].item<std::int64_t>()) : "it is";
      throw Error(fmt::format(
          "{}: scaled_norm cannot rescale to norm {}: after the inner initializer '{}', {} all "
          "zeros, which has no direction; choose an inner initializer that fills every {} with "
          "something non-zero (e.g. init = \"normal\")",
          context.what, norm_, inner_name_, which, rows_ ? "row" : "tensor"));
    }
    tensor.copy_((values * (norm_ / norms)).reshape(tensor.sizes()));
  }

 private:
  std::shared_ptr<Initializer> inner_;
  std::string inner_name_;
  double norm_;
  bool rows_;
};

void declare(ParamSchema& schema) {
  schema.plugin("init", PluginKind::kInitializer, "normal",
                "The initializer whose result is rescaled, e.g. { plugin = \"orthogonal\" }.");
  schema.real("norm", 1.0, "The target L2 norm (of the whole tensor, or of every row).")
      .at_least(0.0)
      .is_init_scale();
  schema.choice("mode", "frobenius", {"frobenius", "row"},
                "frobenius: the whole tensor has the target norm; row: every row (index of "
                "dimension 0, e.g. a token's PE vector) has it.");
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  const Params& params = context.params;
  const PluginSpec& inner = params.plugin("init");
  return std::make_shared<ScaledNormInitializer>(context.registry.create_initializer(inner),
                                                 inner.name, params.real("norm"),
                                                 params.string("mode") == "row");
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("scaled_norm", "1.0.0",
                      "Any initializer rescaled to a target Frobenius or per-row L2 norm",
                      pelab::declare, pelab::create)
