// Effective dimensionality of each PE: its PCA spectrum (eigenvalues lambda_i of the covariance
// of the N rows, centred over the tokens) and the participation ratio
//   PR = (sum_i lambda_i)^2 / sum_i lambda_i^2,
// between 1 (all variance on one axis) and the rank (variance spread evenly). A PE that mirrors a
// 2D grid has most of its variance in a few components. PEs without a table use the spectrum of
// their doubly centred kernel (the same numbers when the kernel is the table's Gram matrix).

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

class DimensionalityProbe : public Probe {
 public:
  explicit DimensionalityProbe(double variance) : variance_(variance) {}

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    bool use_kernels = false;
    const auto snapshots = pm::tables_or_kernels(context.snapshots, use_kernels);
    if (snapshots.empty()) {
      result.note = "the PE has neither a table nor a kernel (e.g. pe = none): no spectrum";
      return result;
    }
    std::vector<torch::Tensor> history;
    std::vector<torch::Tensor> final_ratios;
    std::vector<double> final_components;
    for (const auto* snapshot : snapshots) {
      const torch::Tensor pes = use_kernels ? snapshot->kernels : snapshot->tables;
      std::vector<double> per_block;
      final_ratios.clear();
      final_components.clear();
      for (std::int64_t b = 0; b < pes.size(0); ++b) {
        const torch::Tensor spectrum =
            use_kernels ? pm::kernel_spectrum(pes[b]) : pm::pca_spectrum(pes[b]);
        per_block.push_back(pm::participation_ratio(spectrum));
        const double total = spectrum.sum().item<double>();
        const torch::Tensor ratio = total > 0 ? spectrum / total : torch::zeros_like(spectrum);
        final_ratios.push_back(ratio);
        // Components needed to explain `variance_` of the variance.
        const torch::Tensor cumulative = ratio.cumsum(0);
        final_components.push_back(
            total > 0 ? static_cast<double>(
                            (cumulative < variance_ - 1e-12).sum().item<std::int64_t>() + 1)
                      : pm::kNaN);
      }
      history.push_back(pm::from_vector(per_block));
    }
    pm::add_per_block(result, "participation_ratio", pm::to_vector(history.back()));
    pm::add_per_block(result, "components", final_components);
    result.headlines.push_back({"participation_ratio", Better::kNeither,
                                "participation ratio of the PE's spectrum: its effective "
                                "number of dimensions"});
    result.arrays["participation_ratio"] = torch::stack(history);
    result.arrays["explained_variance_ratio"] = torch::stack(final_ratios);
    result.arrays["epochs"] = pm::epochs_of(snapshots);
    if (use_kernels)
      result.note = "the PE has no table: the spectrum of its centred kernel was used";
    return result;
  }

 private:
  double variance_;
};

void declare(ParamSchema& schema) {
  schema
      .real("variance", 0.9,
            "The `components` scalar counts the principal components needed to explain this "
            "fraction of the variance.")
      .in_range(0.0, 1.0);
}

std::shared_ptr<Probe> create(const PluginContext& context) {
  return std::make_shared<DimensionalityProbe>(context.params.real("variance"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("dimensionality", "1.0.0",
                      "PCA spectrum and participation ratio of every PE table", pelab::declare,
                      pelab::create)
