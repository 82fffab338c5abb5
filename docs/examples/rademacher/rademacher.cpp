// An initializer that pelab does not ship: every entry is +scale or -scale with equal probability.
// It has the norm of a N(0, scale^2) init but no small entries at all, which makes it a useful
// contrast when asking whether the norm alone decides what a learned PE becomes.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace {

class RademacherInitializer : public pelab::Initializer {
 public:
  explicit RademacherInitializer(double scale) : scale_(scale) {}

  void fill(torch::Tensor& tensor, const pelab::InitContext&) const override {
    torch::NoGradGuard no_grad;
    // Uses torch's default generator, which pelab seeds per run: same seed, same tensor.
    tensor.bernoulli_(0.5).mul_(2.0 * scale_).sub_(scale_);
  }

 private:
  double scale_;
};

void declare(pelab::ParamSchema& schema) {
  // The init scale: `pelab report` draws a sweep over it as one series against it.
  schema.real("scale", 1.0, "Magnitude of every entry.").at_least(0.0).is_init_scale();
}

std::shared_ptr<pelab::Initializer> create(const pelab::PluginContext& context) {
  return std::make_shared<RademacherInitializer>(context.params.real("scale"));
}

}  // namespace

PELAB_REGISTER_PLUGIN("rademacher", "0.1.0", "Random signs times a scale (a third-party example)",
                      declare, create)
