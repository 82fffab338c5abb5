// A learnable N x d table added to the tokens: the PE whose initialisation the paper studies. With
// trainable = false the table stays as its initializer drew it (a buffer, not a parameter): a PE
// transferred from another run (init = { plugin = "from_run", ... }) and frozen.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class LearnedPositionalEncoding : public TablePositionalEncoding {
 public:
  LearnedPositionalEncoding(const Layout& layout, const ModelShape& shape,
                            const Initializer& initializer, bool trainable) {
    torch::Tensor& table = set_table(torch::empty({layout.tokens, shape.d_model}), trainable);
    torch::NoGradGuard no_grad;
    const std::string what =
        shape.block < 0 ? "pe.table (shared)" : fmt::format("pe.table (block {})", shape.block);
    initializer.fill(table, InitContext::for_tensor(table, what, &layout, shape.block));
  }
};

void declare(ParamSchema& schema) {
  schema.plugin("init", PluginKind::kInitializer, "normal",
                "How the table is initialised, e.g. { plugin = \"normal\", std = 0.2 }.");
  schema.boolean("trainable", true,
                 "Whether training updates the table; false keeps it as initialised (a frozen "
                 "PE, e.g. one transferred with init = { plugin = \"from_run\", run = ... }).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const auto initializer = context.registry.create_initializer(context.params.plugin("init"));
  return std::make_shared<LearnedPositionalEncoding>(layout, shape, *initializer,
                                                     context.params.boolean("trainable"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("learned", "1.0.0", "Learnable N x d table added to the tokens",
                      pelab::declare, pelab::create)
