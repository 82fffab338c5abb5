// A (semi-)orthogonal matrix times a gain (Saxe et al. 2014), as torch::nn::init::orthogonal_:
// the tensor is viewed as rows = size(0) by columns = numel / rows; a Gaussian matrix of that
// shape (transposed when it is wide) is QR-factorised and Q, with the signs of R's diagonal
// folded in so that it is uniform over the orthogonal group, fills it. A tall tensor gets
// orthonormal columns (Q^T Q = I), a wide one orthonormal rows (Q Q^T = I), a square one both.
// Unlike torch, the QR runs in float64 and is then cast to the tensor's dtype, so orthonormality
// holds to the dtype's precision even for large tensors.

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/init_common.h"

namespace pelab {
namespace {

class OrthogonalInitializer : public Initializer {
 public:
  explicit OrthogonalInitializer(double gain) : gain_(gain) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    if (tensor.dim() < 2 || tensor.numel() == 0) {
      throw Error(fmt::format(
          "{}: orthogonal needs a matrix (a tensor of at least 2 dimensions, none of size 0), "
          "but this one has shape {}; use an initializer for any shape for it, e.g. normal or "
          "uniform",
          context.what, init_common::shape_of(tensor)));
    }
    torch::NoGradGuard no_grad;
    const std::int64_t rows = tensor.size(0);
    const std::int64_t columns = tensor.numel() / rows;
    torch::Tensor gaussian = torch::randn({rows, columns}, torch::kFloat64);
    const bool wide = rows < columns;
    if (wide) gaussian = gaussian.t();
    torch::Tensor q = init_common::haar_orthonormal_columns(gaussian);  // [max, min]
    if (wide) q = q.t();
    tensor.copy_(q.mul(gain_).reshape(tensor.sizes()));
  }

 private:
  double gain_;
};

void declare(ParamSchema& schema) {
  schema.real("gain", 1.0, "Multiplies the orthogonal matrix: Q^T Q = gain^2 I.")
      .at_least(0.0)
      .is_init_scale();
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  return std::make_shared<OrthogonalInitializer>(context.params.real("gain"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("orthogonal", "1.0.0",
                      "(Semi-)orthogonal matrix times a gain, as torch's orthogonal_",
                      pelab::declare, pelab::create)
