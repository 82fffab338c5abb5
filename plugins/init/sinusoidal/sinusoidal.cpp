// The sinusoidal table of Vaswani et al. (2017) as an initial value, times `scale`. No
// randomness: the run's seed does not change it.
//
// source = "index": row t of the N x d tensor encodes the token index t,
//   pe[t, 2i] = sin(t / base^(2i / d)),   pe[t, 2i+1] = cos(t / base^(2i / d)).
// source = "coordinates": d is split into D equal chunks, chunk k encodes the layout's
// coordinate on axis D-1-k with the same formula (c = d / D in place of d), exactly like the
// sinusoidal_nd PE: in 2D the first half encodes the column and the second half the row.
//
// The tensor must be indexed by token (a PE table: N x d with the task's layout).

#include <string>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../../common/coordinates.h"
#include "../common/init_common.h"

namespace pelab {
namespace {

class SinusoidalInitializer : public Initializer {
 public:
  SinusoidalInitializer(bool from_coordinates, double base, double scale, bool use_hidden)
      : from_coordinates_(from_coordinates), base_(base), scale_(scale), use_hidden_(use_hidden) {}

  void fill(torch::Tensor& tensor, const InitContext& context) const override {
    const Layout& layout = init_common::token_layout(tensor, context, "sinusoidal");
    init_common::check_token_rows(tensor, layout, context, "sinusoidal");
    const std::int64_t d = tensor.size(1);
    torch::Tensor positions;
    if (from_coordinates_) {
      PELAB_CHECK(layout.has_coordinates(),
                  "{}: source = \"coordinates\" needs token coordinates, but the task's layout "
                  "has none; use source = \"index\"",
                  context.what);
      check_coordinates_visible(
          layout, use_hidden_, context.what + ": ",
          "use_hidden_coordinates = true to initialise from them anyway (an oracle), or use "
          "source = \"index\"");
      PELAB_CHECK(d % (2 * layout.dims()) == 0,
                  "{}: d ({}) must be a multiple of 2 x the {} coordinate axes so that every axis "
                  "gets the same number of sin/cos pairs; change d_model",
                  context.what, d, layout.dims());
      positions = layout.coordinates.to(torch::kFloat64);
    } else {
      PELAB_CHECK(d % 2 == 0, "{}: d ({}) must be even (sin and cos pairs); change d_model",
                  context.what, d);
      positions = torch::arange(layout.tokens, torch::kFloat64).unsqueeze(1);
    }
    torch::NoGradGuard no_grad;
    tensor.copy_(plugin_common::sinusoidal_table(positions, d, base_) * scale_);
  }

 private:
  bool from_coordinates_;
  double base_;
  double scale_;
  bool use_hidden_;
};

void declare(ParamSchema& schema) {
  schema.choice("source", "index", {"index", "coordinates"},
                "What the table encodes: the token index 0..N-1, or the layout's coordinates "
                "(d split evenly over the axes, as the sinusoidal_nd PE).");
  schema.real("base", 10000.0, "Wavelength base of the frequencies.").at_least(1.0);
  schema.real("scale", 1.0, "Multiplies the table.").is_init_scale();
  schema.boolean("use_hidden_coordinates", false,
                 "With source = \"coordinates\": use coordinates the task marks as ground truth "
                 "only (an oracle initialisation, e.g. the Latin square grid).");
}

std::shared_ptr<Initializer> create(const PluginContext& context) {
  const Params& params = context.params;
  const bool from_coordinates = params.string("source") == "coordinates";
  PELAB_CHECK(from_coordinates || !params.boolean("use_hidden_coordinates"),
              "use_hidden_coordinates = true only applies to source = \"coordinates\", but "
              "source = \"index\"; set source = \"coordinates\" or remove "
              "use_hidden_coordinates");
  return std::make_shared<SinusoidalInitializer>(from_coordinates, params.real("base"),
                                                 params.real("scale"),
                                                 params.boolean("use_hidden_coordinates"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("sinusoidal", "1.0.0",
                      "Vaswani sinusoidal table of the token index or the layout's coordinates",
                      pelab::declare, pelab::create)
