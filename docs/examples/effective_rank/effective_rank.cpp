// A probe that pelab does not ship: the effective rank of each block's final PE table,
// exp(entropy of its normalised singular values) (Roy and Vetterli 2007). A PE that mirrors a
// D-dimensional layout has an effective rank near D; a random table, near min(N, d_model).

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace {

class EffectiveRankProbe : public pelab::Probe {
 public:
  pelab::ProbeResult run(const pelab::ProbeContext& context) override {
    pelab::ProbeResult result;
    const pelab::PESnapshot& last = context.snapshots.back();
    if (!last.tables.defined()) {
      result.note = "the PE has no table (e.g. an attention bias): no rank to measure";
      return result;
    }
    double sum = 0.0;
    const std::int64_t blocks = last.tables.size(0);
    for (std::int64_t b = 0; b < blocks; ++b) {
      const torch::Tensor table = last.tables[b].to(torch::kFloat64);
      const torch::Tensor centred = table - table.mean(0, /*keepdim=*/true);
      const torch::Tensor singular = torch::linalg_svdvals(centred);
      const torch::Tensor p = singular / singular.sum().clamp_min(1e-300);
      const double rank = torch::exp(-(p * p.clamp_min(1e-300).log()).sum()).item<double>();
      // The convention for per-block scalars: <name>_block<b>, and <name> their mean.
      result.scalars["effective_rank_block" + std::to_string(b)] = rank;
      sum += rank;
    }
    result.scalars["effective_rank"] = sum / static_cast<double>(blocks);
    // What the report shows for this probe, and which way is better: here, neither.
    result.headlines.push_back({"effective_rank", pelab::Better::kNeither,
                                "exp(entropy of the centred table's singular values): the "
                                "number of dimensions the PE uses"});
    return result;
  }
};

void declare(pelab::ParamSchema&) {}

std::shared_ptr<pelab::Probe> create(const pelab::PluginContext&) {
  return std::make_shared<EffectiveRankProbe>();
}

}  // namespace

PELAB_REGISTER_PLUGIN("effective_rank", "0.1.0",
                      "Effective rank of each block's final PE table (an example probe)", declare,
                      create)
