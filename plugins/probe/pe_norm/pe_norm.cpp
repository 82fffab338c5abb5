// The Frobenius norm of each PE table over training: the simplest look at the init's scale and
// at how far training moved it.

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class PENormProbe : public Probe {
 public:
  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    std::vector<torch::Tensor> norms;  // per snapshot: [pes]
    std::vector<double> epochs;
    for (const auto& snapshot : context.snapshots) {
      if (!snapshot.tables.defined()) continue;
      norms.push_back(snapshot.tables.to(torch::kFloat64).flatten(1).norm(2, {1}));
      epochs.push_back(static_cast<double>(snapshot.epoch));
    }
    if (norms.empty()) return result;  // a PE without a table has no norm to report
    const torch::Tensor history = torch::stack(norms);  // [snapshots, pes]
    const torch::Tensor initial = history[0];
    const torch::Tensor final = history[history.size(0) - 1];
    result.scalars["norm_initial"] = initial.mean().item<double>();
    result.scalars["norm_final"] = final.mean().item<double>();
    result.scalars["norm_ratio"] = (final / initial.clamp_min(1e-12)).mean().item<double>();
    result.headlines.push_back({"norm_final", Better::kNeither,
                                "Frobenius norm of the final PE table (mean over blocks)"});
    result.arrays["norms"] = history;
    result.arrays["epochs"] = torch::tensor(epochs, torch::kFloat64);
    return result;
  }
};

void declare(ParamSchema&) {}

std::shared_ptr<Probe> create(const PluginContext&) {
  return std::make_shared<PENormProbe>();
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("pe_norm", "1.0.0",
                      "Frobenius norm of every PE table at each snapshot (initial, final, ratio)",
                      pelab::declare, pelab::create)
