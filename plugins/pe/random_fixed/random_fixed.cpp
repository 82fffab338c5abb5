// A random N x d table drawn once by an initializer and then frozen: a buffer, never trained.
// The random baseline of PE studies: the tokens can be told apart, but their codes carry no
// geometry, so whatever the model learns about arrangement it must learn around fixed noise.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class RandomFixedPositionalEncoding : public TablePositionalEncoding {
 public:
  RandomFixedPositionalEncoding(const Layout& layout, const ModelShape& shape,
                                const Initializer& initializer) {
    torch::Tensor table = torch::empty({layout.tokens, shape.d_model});
    {
      torch::NoGradGuard no_grad;
      const std::string what = shape.block < 0
                                   ? "pe.table (shared, fixed)"
                                   : fmt::format("pe.table (block {}, fixed)", shape.block);
      initializer.fill(table, InitContext::for_tensor(table, what, &layout, shape.block));
    }
    set_table(std::move(table), /*learnable=*/false);
  }
};

void declare(ParamSchema& schema) {
  schema.plugin("init", PluginKind::kInitializer, "normal",
                "How the frozen table is drawn, e.g. { plugin = \"normal\", std = 1.0 } (the "
                "default: N(0, 1) entries).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const auto initializer = context.registry.create_initializer(context.params.plugin("init"));
  return std::make_shared<RandomFixedPositionalEncoding>(layout, shape, *initializer);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("random_fixed", "1.0.0",
                      "Random N x d table drawn by any initializer, then frozen (a buffer)",
                      pelab::declare, pelab::create)
