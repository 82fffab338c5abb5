// A learnable N x d table added to the tokens: the PE whose initialisation the paper studies.

#include <torch/torch.h>

#include <pelab/plugin.h>
#include <pelab/registry.h>

namespace pelab {
namespace {

class LearnedPositionalEncoding : public TablePositionalEncoding {
 public:
  LearnedPositionalEncoding(const Layout& layout, const ModelShape& shape,
                            const Initializer& initializer) {
    torch::Tensor& table =
        set_table(torch::empty({layout.tokens, shape.d_model}), /*learnable=*/true);
    torch::NoGradGuard no_grad;
    const std::string what =
        shape.block < 0 ? "pe.table (shared)" : fmt::format("pe.table (block {})", shape.block);
    initializer.fill(table, InitContext::for_tensor(table, what, &layout));
  }
};

void declare(ParamSchema& schema) {
  schema.plugin("init", PluginKind::kInitializer, "normal",
                "How the table is initialised, e.g. { plugin = \"normal\", std = 0.2 }.");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const auto initializer = context.registry.create_initializer(context.params.plugin("init"));
  return std::make_shared<LearnedPositionalEncoding>(layout, shape, *initializer);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("learned", "1.0.0", "Learnable N x d table added to the tokens",
                      pelab::declare, pelab::create)
