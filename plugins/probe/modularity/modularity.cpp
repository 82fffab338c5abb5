// Newman's modularity Q of the PE-similarity graph for a partition of the tokens: does the PE
// group the tokens of a row (or a column, or any given communities) together?
//
// The graph's weights are the cosine similarities of the PE rows, negative ones clipped to 0, no
// self-loops (PEs without a table: the kernel normalised to a unit diagonal). With k_i = sum_j
// W_ij and 2m = sum_ij W_ij,
//   Q = (1 / 2m) sum_ij [W_ij - k_i k_j / 2m] delta(c_i, c_j),
// from -1/2 to 1: 0 is what a graph with the same degrees but random edges gives, and a large Q
// means the tokens of each community are much more similar to each other than to the rest.

#include <algorithm>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

/// Q of the weighted graph `w` (symmetric, zero diagonal) for community labels; NaN without edges.
double modularity(const torch::Tensor& w, const torch::Tensor& labels) {
  const torch::Tensor degree = w.sum(1);
  const double total = degree.sum().item<double>();  // 2m
  if (!(total > 0)) return pm::kNaN;
  const torch::Tensor same = (labels.unsqueeze(1) == labels.unsqueeze(0)).to(torch::kFloat64);
  const torch::Tensor expected = degree.unsqueeze(1) * degree.unsqueeze(0) / total;
  return ((w - expected) * same).sum().item<double>() / total;
}

class ModularityProbe : public Probe {
 public:
  ModularityProbe(std::string partition, std::vector<std::int64_t> labels)
      : partition_(std::move(partition)), labels_(std::move(labels)) {}

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    const Layout& layout = context.layout;
    torch::Tensor labels;
    if (!labels_.empty()) {
      PELAB_CHECK(static_cast<std::int64_t>(labels_.size()) == layout.tokens,
                  "`labels` has {} entries but the task has {} tokens", labels_.size(),
                  layout.tokens);
      labels = torch::tensor(labels_, torch::kInt64);
    } else if (partition_ == "communities") {
      if (!layout.has_communities()) {
        result.note =
            "the task's layout declares no communities (modules, networks): give `labels` or "
            "another partition";
        return result;
      }
      labels = layout.communities;
    } else {
      std::int64_t axis = -1;
      if (partition_ == "rows") axis = 0;
      if (partition_ == "columns") axis = 1;
      if (partition_.rfind("axis", 0) == 0 && partition_.size() > 4 &&
          partition_.find_first_not_of("0123456789", 4) == std::string::npos) {
        axis = std::stoll(partition_.substr(4));
      }
      PELAB_CHECK(axis >= 0,
                  "partition '{}' is not communities, rows, columns or axis<k>; or give `labels`",
                  partition_);
      if (!layout.has_coordinates()) {
        result.note = fmt::format(
            "the task's layout has no coordinates, so partition '{}' means nothing; give "
            "`labels`",
            partition_);
        return result;
      }
      PELAB_CHECK(axis < layout.dims(), "partition '{}' needs axis {}, but the layout has {} axes",
                  partition_, axis, layout.dims());
      // Tokens with the same coordinate on the axis form a community.
      labels = pm::f64(layout.coordinates).select(1, axis).mul(1e6).round().to(torch::kInt64);
    }

    bool use_kernels = false;
    const auto snapshots = pm::tables_or_kernels(context.snapshots, use_kernels);
    if (snapshots.empty()) {
      result.note = "the PE has neither a table nor a kernel (e.g. pe = none): no graph";
      return result;
    }
    std::vector<torch::Tensor> history;
    for (const auto* snapshot : snapshots) {
      const torch::Tensor pes = use_kernels ? snapshot->kernels : snapshot->tables;
      PELAB_CHECK(pes.size(1) == labels.size(0),
                  "the PE snapshot of epoch {} has {} tokens but the partition has {}",
                  snapshot->epoch, pes.size(1), labels.size(0));
      std::vector<double> per_block;
      for (std::int64_t b = 0; b < pes.size(0); ++b) {
        bool normalised = true;
        torch::Tensor w = use_kernels ? pm::kernel_similarity(pes[b], &normalised)
                                      : pm::cosine_similarities(pes[b]);
        w = w.clamp_min(0.0);
        w.fill_diagonal_(0.0);
        per_block.push_back(normalised ? modularity(w, labels) : pm::kNaN);
      }
      history.push_back(pm::from_vector(per_block));
    }
    pm::add_per_block(result, "q", pm::to_vector(history.back()));
    result.headlines.push_back({"q", Better::kHigher,
                                "Newman's modularity Q of the PE-similarity graph for the "
                                "partition (0: what random edges give)"});
    result.arrays["q"] = torch::stack(history);
    result.arrays["epochs"] = pm::epochs_of(snapshots);
    result.arrays["labels"] = labels;
    if (use_kernels) {
      result.note =
          "the PE has no table: the graph is its kernel normalised to a unit diagonal (NaN where "
          "the diagonal is not positive)";
    }
    return result;
  }

 private:
  std::string partition_;
  std::vector<std::int64_t> labels_;
};

void declare(ParamSchema& schema) {
  schema.string("partition", "rows",
                "The communities: `communities` (the task's own: a network's modules, a brain's "
                "networks), `rows` (same coordinate on axis 0), `columns` (axis 1), or `axis<k>`; "
                "ignored when `labels` is given.");
  schema.integers("labels", {}, "An explicit community label per token (overrides `partition`).");
}

std::shared_ptr<Probe> create(const PluginContext& context) {
  const std::string partition = context.params.string("partition");
  const bool known = partition == "communities" || partition == "rows" || partition == "columns" ||
                     (partition.rfind("axis", 0) == 0 && partition.size() > 4 &&
                      partition.find_first_not_of("0123456789", 4) == std::string::npos);
  PELAB_CHECK(known,
              "partition '{}' is not communities, rows, columns or axis<k> (axis0, axis1, ...)",
              partition);
  return std::make_shared<ModularityProbe>(partition, context.params.integers("labels"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN(
    "modularity", "1.0.0",
    "Newman's modularity Q of the PE-similarity graph for the task's communities, rows, "
    "columns or labels",
    pelab::declare, pelab::create)
