// Orthogonal Procrustes distance between each learned PE table and a reference PE (by default
// the 2D, or N-D, sinusoidal table of the layout's true coordinates); with `tensor` (a PE
// parameter read as a position table, e.g. learned positions), the true coordinates themselves.
//
// Both N x d tables are centred over the tokens and scaled to unit Frobenius norm (a narrower one
// padded with zero columns first); then
//   distance = min over orthogonal R and scale s of ||s A R - B||_F^2 = 1 - (sum_i sigma_i)^2,
// with sigma_i the singular values of A^T B: scipy.spatial.procrustes' "disparity". 0: the same
// configuration of tokens up to translation, rotation/reflection and scale; 1: nothing in common.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

// Centred over the rows, unit Frobenius norm, `width` columns (zero-padded).
torch::Tensor normalised(const torch::Tensor& table, std::int64_t width) {
  torch::Tensor x = pm::centred(table);
  if (x.size(1) < width)
    x = torch::cat({x, torch::zeros({x.size(0), width - x.size(1)}, x.options())}, 1);
  const double norm = x.norm().item<double>();
  return norm > 0 ? x / norm : x;
}

class ProcrustesProbe : public Probe {
 public:
  ProcrustesProbe(PluginSpec reference, std::int64_t reference_width, std::string tensor)
      : reference_(std::move(reference)),
        reference_width_(reference_width),
        tensor_(std::move(tensor)) {}

  /// The Procrustes distance of two tables with the same number of rows.
  static double distance(const torch::Tensor& a, const torch::Tensor& b) {
    const std::int64_t width = std::max(a.size(1), b.size(1));
    const torch::Tensor x = normalised(a, width);
    const torch::Tensor y = normalised(b, width);
    if (x.norm().item<double>() == 0 || y.norm().item<double>() == 0) return pm::kNaN;
    const double nuclear = torch::linalg_svdvals(x.t().matmul(y)).sum().item<double>();
    return std::max(0.0, 1.0 - nuclear * nuclear);
  }

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    const std::vector<PESnapshot> read =
        pm::position_tables(context.snapshots, tensor_, "procrustes", context.layout.tokens);
    const auto snapshots = pm::with_tables(read);
    if (snapshots.empty()) {
      result.note =
          "the PE has no table (a kernel-only or no PE): Procrustes needs one; a rotary PE with "
          "learned positions can be read with tensor = \"positions\"";
      return result;
    }
    const torch::Tensor last = snapshots.back()->tables;
    // A position table is compared with the true coordinates; a PE's table with a reference PE's.
    torch::Tensor reference =
        tensor_.empty() ? reference_table(context, last) : coordinates(context);
    if (!reference.defined()) {
      result.note =
          fmt::format("the reference PE '{}' has no table to compare with", reference_.name);
      return result;
    }
    reference = pm::f64(reference);
    PELAB_CHECK(reference.dim() == 2 && reference.size(0) == last.size(1),
                "procrustes: the reference ('{}') has {} rows but the learned PE has {} tokens",
                tensor_.empty() ? reference_.name : "the layout's coordinates",
                reference.dim() == 2 ? reference.size(0) : 0, last.size(1));

    std::vector<torch::Tensor> history;
    for (const auto* snapshot : snapshots) {
      std::vector<double> per_block;
      for (std::int64_t b = 0; b < snapshot->tables.size(0); ++b)
        per_block.push_back(distance(snapshot->tables[b], reference));
      history.push_back(pm::from_vector(per_block));
    }
    pm::add_per_block(result, "distance", pm::to_vector(history.back()));
    result.headlines.push_back({"distance", Better::kLower,
                                "1 - (sum of singular values)^2 after centring and unit scaling "
                                "(0: the reference PE up to rotation and scale; 1: unrelated)"});
    result.arrays["distance"] = torch::stack(history);
    result.arrays["epochs"] = pm::epochs_of(snapshots);
    result.arrays["reference"] = reference;
    return result;
  }

 private:
  // The reference PE's table, built for the layout at the learned table's width (or
  // reference_width); undefined when the reference PE has none.
  torch::Tensor reference_table(const ProbeContext& context, const torch::Tensor& last) const {
    PELAB_CHECK(context.registry != nullptr,
                "procrustes needs the plugin registry to build its reference");
    const std::int64_t d_model = last.size(2);
    // The reference is never shown to the model: it may read coordinates the task hides.
    Layout layout = context.layout;
    layout.coordinates_visible = true;
    ModelShape shape;
    shape.d_model = reference_width_ > 0 ? reference_width_ : d_model;
    shape.layers = last.size(0);
    torch::NoGradGuard no_grad;
    return context.registry->create_positional_encoding(reference_, layout, shape)->table();
  }

  // A position table's reference: the true coordinates themselves (learned positions are compared
  // with the layout up to rotation, reflection, translation and scale).
  torch::Tensor coordinates(const ProbeContext& context) const {
    PELAB_CHECK(context.layout.has_coordinates(),
                "procrustes: tensor = \"{}\" is compared with the layout's coordinates, and the "
                "task's layout has none",
                tensor_);
    return context.layout.coordinates;
  }

  PluginSpec reference_;
  std::int64_t reference_width_;
  std::string tensor_;
};

void declare(ParamSchema& schema) {
  schema.plugin("reference", PluginKind::kPositionalEncoding, "sinusoidal_nd",
                "The reference PE, any PE plugin with a table, built for the run's layout (its "
                "coordinates made visible: the reference is never shown to the model).");
  schema
      .integer("reference_width", 0,
               "d_model to build the reference with (0: the learned PE's width); a narrower "
               "table is padded with zero columns.")
      .in_range(0, 65536);
  pm::declare_tensor_key(schema);
}

std::shared_ptr<Probe> create(const PluginContext& context) {
  return std::make_shared<ProcrustesProbe>(context.params.plugin("reference"),
                                           context.params.integer("reference_width"),
                                           context.params.string("tensor"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("procrustes", "1.0.0",
                      "Orthogonal Procrustes distance (1 - (sum sigma)^2) to a reference PE",
                      pelab::declare, pelab::create)
