// NoPE: the model gets no positional information at all. The baseline every PE is compared with.

#include <pelab/sdk.h>

namespace pelab {
namespace {

class NoPositionalEncoding : public PositionalEncoding {
 public:
  unsigned hooks() const override { return 0; }
};

void declare(ParamSchema&) {}

std::shared_ptr<PositionalEncoding> create(const PluginContext&, const Layout&, const ModelShape&) {
  return std::make_shared<NoPositionalEncoding>();
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("none", "1.0.0", "No positional encoding (NoPE)", pelab::declare,
                      pelab::create)
