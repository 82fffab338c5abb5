// An ORACLE initializer: it leaks the ground truth on purpose. Row t of the N x d table is the
// token's true coordinates (the task's layout, [N, D]), centred on their mean, through a random
// projection D -> d with orthonormal rows, times `scale`:
//   table = scale * (X - mean(X)) P,   P: D x d, P P^T = I.
// Because P is an isometry of R^D into R^d, every pairwise distance between rows is `scale`
// times the distance between the tokens' coordinates: the table *is* the arrangement of the
// tokens, in a random orientation drawn from torch's default generator (the run's seed). It
// answers "what if the PE started out knowing where the tokens are?", and uses the coordinates
// even when the task hides them from the model (choosing this initializer is the opt-in).

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/init_common.h"

namespace pelab {
namespace {

class FromLayoutInitializer : public Initializer {
 public:
  explicit FromLayoutInitializer(double scale) : scale_(scale) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    const Layout& layout = init_common::token_layout(tensor, context, "from_layout");
    PELAB_CHECK(layout.has_coordinates(),
                "{}: from_layout projects the tokens' coordinates, but the task's layout has "
                "none; choose another initializer (e.g. normal or sinusoidal)",
                context.what);
    init_common::check_token_rows(tensor, layout, context, "from_layout");
    const std::int64_t d = tensor.size(1);
    const std::int64_t axes = layout.dims();
    PELAB_CHECK(d >= axes,
                "{}: from_layout needs d >= the {} coordinate axes to keep every distance, but "
                "d = {}; increase d_model",
                context.what, axes, d);
    torch::NoGradGuard no_grad;
    const torch::Tensor coordinates = layout.coordinates.to(torch::kFloat64);
    const torch::Tensor centred = coordinates - coordinates.mean(0, /*keepdim=*/true);
    // A Haar-random d x D matrix with orthonormal columns (QR of a Gaussian, signs fixed).
    const torch::Tensor gaussian = torch::randn({d, axes}, torch::kFloat64);
    const torch::Tensor projection = init_common::haar_orthonormal_columns(gaussian).t();  // D x d
    tensor.copy_(centred.mm(projection) * scale_);
  }

 private:
  double scale_;
};

void declare(ParamSchema& schema) {
  schema
      .real("scale", 1.0,
            "Multiplies the table: the distance between two rows is scale times the distance "
            "between the two tokens' coordinates.")
      .at_least(0.0)
      .is_init_scale();
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<FromLayoutInitializer>(context.params.real("scale"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("from_layout", "1.0.0",
                      "ORACLE: the true coordinates, centred, randomly rotated into d (leaks "
                      "ground truth on purpose)",
                      pelab::declare, pelab::create)
