#include "pelab/interfaces/initializer.h"

namespace pelab {

InitContext InitContext::for_tensor(const torch::Tensor& tensor, std::string what,
                                    const Layout* layout, std::int64_t block) {
  InitContext context;
  context.layout = layout;
  context.block = block;
  context.what = std::move(what);
  if (tensor.dim() >= 2) {
    std::int64_t receptive_field = 1;
    for (std::int64_t i = 2; i < tensor.dim(); ++i)
      receptive_field *= tensor.size(i);
    context.fan_in = tensor.size(1) * receptive_field;
    context.fan_out = tensor.size(0) * receptive_field;
  }
  return context;
}

}  // namespace pelab
