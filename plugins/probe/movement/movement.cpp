// How far training moved each PE from its initialisation: per snapshot t and block,
//   relative_change = ||P_t - P_0||_F / ||P_0||_F   and   norm = ||P_t||_F.
// A large-norm initialisation that barely moves (relative change << 1) is the "lazy" regime; a
// small-norm one that the gradient reshapes (relative change >> 1) the "rich" regime. PEs without
// a table use their kernel. The relative change of an all-zero initial PE is undefined (NaN).

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

class MovementProbe : public Probe {
 public:
  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    bool use_kernels = false;
    const auto snapshots = pm::tables_or_kernels(context.snapshots, use_kernels);
    if (snapshots.empty()) {
      result.note = "the PE has neither a table nor a kernel (e.g. pe = none): nothing moves";
      return result;
    }
    auto pes_of = [&](const PESnapshot* s) {
      return pm::f64(use_kernels ? s->kernels : s->tables).flatten(1);  // [pes, N * d]
    };
    const torch::Tensor initial = pes_of(snapshots.front());
    const torch::Tensor initial_norm = initial.norm(2, {1});
    std::vector<torch::Tensor> change, norm;
    for (const auto* snapshot : snapshots) {
      const torch::Tensor current = pes_of(snapshot);
      const torch::Tensor moved = (current - initial).norm(2, {1});
      change.push_back(
          torch::where(initial_norm > 0, moved / initial_norm, torch::full_like(moved, pm::kNaN)));
      norm.push_back(current.norm(2, {1}));
    }
    pm::add_per_block(result, "relative_change", pm::to_vector(change.back()));
    pm::add_per_block(result, "norm", pm::to_vector(norm.back()));
    pm::add_per_block(result, "norm_initial", pm::to_vector(initial_norm));
    result.headlines.push_back({"relative_change", Better::kNeither,
                                "||PE_final - PE_initial|| / ||PE_initial||: how far training "
                                "moved the PE"});
    result.arrays["relative_change"] = torch::stack(change);
    result.arrays["norm"] = torch::stack(norm);
    result.arrays["epochs"] = pm::epochs_of(snapshots);
    if (use_kernels) result.note = "the PE has no table: its kernel's movement was measured";
    return result;
  }
};

void declare(ParamSchema&) {}

std::shared_ptr<Probe> create(const PluginContext&) {
  return std::make_shared<MovementProbe>();
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("movement", "1.0.0",
                      "Relative distance of each PE from its initialisation (lazy vs rich regime)",
                      pelab::declare, pelab::create)
