// Linear decoding of the tokens' true coordinates from their PE rows: k-fold cross-validated ridge
// regression. The tokens are shuffled (seeded) into `folds` folds; for each fold a ridge model
// with an intercept is fitted on the other folds' rows, each feature z-scored with the training
// rows' mean and standard deviation (so alpha does not depend on the PE's scale), and predicts
// the held-out rows. R^2 = 1 - SS_res / SS_tot per axis over the out-of-fold predictions of all
// tokens: 1 is a perfect linear read-out, 0 is no better than predicting the mean, and negative
// is worse.

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

class DecodingProbe : public Probe {
 public:
  DecodingProbe(double alpha, std::int64_t folds, std::int64_t seed, std::string tensor)
      : alpha_(alpha), folds_(folds), seed_(seed), tensor_(std::move(tensor)) {}

  /// Out-of-fold R^2 per column of y for features x ([N, F]) and targets y ([N, D]).
  torch::Tensor cross_validated_r2(const torch::Tensor& features, const torch::Tensor& targets,
                                   const torch::Tensor& order) const {
    const torch::Tensor x = pm::f64(features);
    const torch::Tensor y = pm::f64(targets);
    const std::int64_t n = x.size(0);
    const std::int64_t folds = std::min(folds_, n);
    torch::Tensor predicted = torch::zeros_like(y);
    for (std::int64_t fold = 0; fold < folds; ++fold) {
      // Fold `fold` holds the shuffled positions fold, fold + folds, ...
      const torch::Tensor in_fold = torch::arange(n, torch::kInt64).remainder(folds) == fold;
      const torch::Tensor test = order.index({in_fold});
      const torch::Tensor train = order.index({in_fold.logical_not()});
      const torch::Tensor x_train = x.index_select(0, train);
      const torch::Tensor y_train = y.index_select(0, train);
      const torch::Tensor mean = x_train.mean(0, true);
      const torch::Tensor std = x_train.std(0, /*unbiased=*/false, /*keepdim=*/true);
      const torch::Tensor scale = torch::where(std > 1e-12, 1.0 / std, torch::zeros_like(std));
      const torch::Tensor z_train = (x_train - mean) * scale;
      const torch::Tensor z_test = (x.index_select(0, test) - mean) * scale;
      const torch::Tensor y_mean = y_train.mean(0, true);
      // Dual form, W = Z^T (Z Z^T + alpha I)^-1 (Y - mean): cheap when rows < features.
      const std::int64_t rows = z_train.size(0);
      const torch::Tensor gram =
          z_train.matmul(z_train.t()) + alpha_ * torch::eye(rows, torch::kFloat64);
      // The pseudo-inverse: with alpha = 0 the minimum-norm least-squares fit.
      const torch::Tensor dual = torch::linalg_pinv(gram, 1e-10).matmul(y_train - y_mean);
      predicted.index_put_({test}, z_test.matmul(z_train.t()).matmul(dual) + y_mean);
    }
    const torch::Tensor residual = (y - predicted).pow(2).sum(0);
    const torch::Tensor total = (y - y.mean(0, true)).pow(2).sum(0);
    return torch::where(total > 0, 1.0 - residual / total, torch::full_like(total, pm::kNaN));
  }

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    const Layout& layout = context.layout;
    if (!layout.has_coordinates()) {
      result.note = "the task's layout has no coordinates: there is nothing to decode";
      return result;
    }
    const std::vector<PESnapshot> read =
        pm::position_tables(context.snapshots, tensor_, "decoding", layout.tokens);
    const auto snapshots = pm::with_tables(read);
    if (snapshots.empty()) {
      result.note =
          "the PE has no table (a kernel-only or no PE): there are no rows to decode from; a "
          "rotary PE with learned positions can be read with tensor = \"positions\"";
      return result;
    }
    const torch::Tensor coordinates = pm::f64(layout.coordinates);
    const std::int64_t n = coordinates.size(0);
    PELAB_CHECK(n >= 3, "decoding needs at least 3 tokens, the layout has {}", n);
    const torch::Tensor order = pm::Permuter(static_cast<std::uint64_t>(seed_)).next(n);

    std::vector<torch::Tensor> history;  // [pes, axes] per snapshot
    for (const auto* snapshot : snapshots) {
      PELAB_CHECK(snapshot->tables.size(1) == n,
                  "the PE snapshot of epoch {} has {} tokens but the layout has {}",
                  snapshot->epoch, snapshot->tables.size(1), n);
      std::vector<torch::Tensor> per_block;
      for (std::int64_t b = 0; b < snapshot->tables.size(0); ++b)
        per_block.push_back(cross_validated_r2(snapshot->tables[b], coordinates, order));
      history.push_back(torch::stack(per_block));
    }
    const torch::Tensor last = history.back();  // [pes, axes]
    pm::add_per_block(result, "r2", pm::to_vector(last.mean(1)));
    for (std::int64_t axis = 0; axis < last.size(1); ++axis) {
      pm::add_per_block(result, "r2_" + pm::axis_name(layout, axis),
                        pm::to_vector(last.select(1, axis)));
    }
    result.headlines.push_back({"r2", Better::kHigher,
                                "cross-validated R^2 of a linear decoder of the true coordinates "
                                "from the PE (1: they are linearly readable)"});
    result.arrays["r2"] = torch::stack(history);
    result.arrays["epochs"] = pm::epochs_of(snapshots);
    return result;
  }

 private:
  double alpha_;
  std::int64_t folds_;
  std::int64_t seed_;
  std::string tensor_;
};

void declare(ParamSchema& schema) {
  schema.real("alpha", 1.0, "Ridge penalty on the z-scored PE features.").at_least(0.0);
  schema.integer("folds", 4, "Cross-validation folds (at most the number of tokens).").at_least(2);
  schema.integer("seed", 0, "Seed of the shuffle that assigns tokens to folds.").at_least(0);
  pm::declare_tensor_key(schema);
}

std::shared_ptr<Probe> create(const PluginContext& context) {
  const Params& params = context.params;
  return std::make_shared<DecodingProbe>(params.real("alpha"), params.integer("folds"),
                                         params.integer("seed"), params.string("tensor"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("decoding", "1.0.0",
                      "Cross-validated ridge decoding of the true coordinates from PE rows (R^2)",
                      pelab::declare, pelab::create)
