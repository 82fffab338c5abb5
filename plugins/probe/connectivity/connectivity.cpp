// Does the PE's similarity mirror how the tokens are connected? For each PE (block), the cosine
// similarities of its rows are compared with a relation between the tokens that the task declares
// as ground truth (Layout::relations): the structural coupling W of a simulated network, or the
// functional connectivity of brain parcels. Spearman and Pearson correlation over the N(N-1)/2
// pairs above the diagonal, the relation symmetrised ((R + R^T) / 2, W is directed); a permutation
// test (relabel the PE's tokens) gives a one-sided p-value for a positive correspondence. PEs
// without a table are compared through their kernel, normalised to a unit diagonal where it is
// positive (as the rsa probe does).
//
// With `control`, another relation of the task, the partial Spearman correlation too: what the PE
// shares with the relation beyond what both share with the control (the coupling W controlling
// for the functional connectivity says whether the PE learned the wiring beyond the correlations
// that masked prediction leans on), with its permutation p-value. The permutation relabels the
// PE's tokens and keeps the control: where the PE and the control are strongly correlated that
// test is liberal (Legendre 2000, on partial Mantel tests), so read the partial correlation first.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

class ConnectivityProbe : public Probe {
 public:
  ConnectivityProbe(std::string relation, std::string control, std::int64_t permutations,
                    std::int64_t seed, std::string tensor)
      : relation_(std::move(relation)),
        control_(std::move(control)),
        permutations_(permutations),
        seed_(seed),
        tensor_(std::move(tensor)) {}

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    const Layout& layout = context.layout;
    const auto found = layout.relations.find(relation_);
    if (found == layout.relations.end()) {
      const std::vector<std::string> names = relation_names(layout);
      result.note = names.empty() ? fmt::format(
                                        "the task declares no relation between its tokens, so "
                                        "there is no '{}' to compare with",
                                        relation_)
                                  : fmt::format("the task declares no relation '{}'; it has: {}",
                                                relation_, fmt::join(names, ", "));
      return result;
    }
    bool use_kernels = false;
    const std::vector<PESnapshot> read =
        pm::position_tables(context.snapshots, tensor_, "connectivity", layout.tokens);
    const auto snapshots = pm::tables_or_kernels(read, use_kernels);
    if (snapshots.empty()) {
      result.note = "the PE has neither a table nor a kernel (e.g. pe = none): nothing to compare";
      return result;
    }
    const torch::Tensor relation = pm::f64(found->second);
    const torch::Tensor truth = (relation + relation.t()) / 2;
    const pm::CorrelationHistory history = pm::correlate_with(
        snapshots, use_kernels, truth, fmt::format("the relation '{}'", relation_),
        [&](const torch::Tensor& pe) {
          // Positions (a parameter read as the table) are similar when near: minus their distance.
          if (use_kernels) return pm::kernel_similarity(pe);
          return tensor_.empty() ? pm::cosine_similarities(pe) : -pm::euclidean_distances(pe);
        });
    const std::vector<torch::Tensor>& final_similarity = history.final_matrices;
    pm::add_per_block(result, "spearman", pm::to_vector(history.spearman.back()));
    pm::add_per_block(result, "pearson", pm::to_vector(history.pearson.back()));
    // Named by its relation: a manifest that lists the probe twice (coupling, then the functional
    // connectivity) gets two descriptions a reader can tell apart.
    result.headlines.push_back(
        {"spearman", Better::kHigher,
         fmt::format("Spearman correlation of the PE's similarities with the relation '{}' (1: "
                     "mirrors it)",
                     relation_)});
    if (permutations_ > 0) {
      pm::spearman_permutation_test(final_similarity, truth, permutations_,
                                    static_cast<std::uint64_t>(seed_), result);
    }
    if (!control_.empty()) {
      const auto control = layout.relations.find(control_);
      PELAB_CHECK(control != layout.relations.end(),
                  "control = \"{}\": the task declares no such relation; it has: {}", control_,
                  fmt::join(relation_names(layout), ", "));
      const torch::Tensor controlled = pm::f64(control->second);
      pm::partial_spearman_test(final_similarity, truth, (controlled + controlled.t()) / 2,
                                permutations_, static_cast<std::uint64_t>(seed_), result);
      result.headlines.push_back(
          {"partial_spearman", Better::kHigher,
           fmt::format("partial Spearman with '{}' controlling for '{}': what the PE shares "
                       "with it beyond the control (0: nothing beyond it)",
                       relation_, control_)});
    }
    pm::add_correlation_arrays(result, history, snapshots, "similarity", truth, "relation");
    if (use_kernels) {
      result.note =
          "the PE has no table: its kernel K was compared, as K_ij / sqrt(K_ii K_jj) (or K when "
          "the diagonal is not positive)";
    }
    return result;
  }

 private:
  static std::vector<std::string> relation_names(const Layout& layout) {
    std::vector<std::string> names;
    for (const auto& [name, matrix] : layout.relations)
      names.push_back(name);
    return names;
  }

  std::string relation_;
  std::string control_;
  std::int64_t permutations_;
  std::int64_t seed_;
  std::string tensor_;
};

void declare(ParamSchema& schema) {
  schema.string("relation", "coupling",
                "The task's relation between tokens to compare the PE's similarity with: "
                "\"coupling\" (network_simulation: the structural weights W), "
                "\"functional_connectivity\" (the correlation of the tokens' time series), or any "
                "other the task declares.");
  schema.string("control", "",
                "Another relation of the task to control for: the partial Spearman correlation "
                "with `relation` given `control` (e.g. relation = \"coupling\", control = "
                "\"functional_connectivity\"); \"\" = none.");
  schema
      .integer("permutations", 1000,
               "Token permutations of the permutation test (0: no p-values). p = (1 + #{rho_perm "
               ">= rho}) / (1 + permutations).")
      .in_range(0, 1000000);
  schema.integer("seed", 0, "Seed of the permutations (the test is deterministic).").at_least(0);
  pm::declare_tensor_key(schema);
}

std::shared_ptr<Probe> create(const PluginContext& context) {
  const Params& params = context.params;
  PELAB_CHECK(!params.string("relation").empty(),
              "the connectivity probe needs a relation: e.g. relation = \"coupling\"");
  PELAB_CHECK(params.string("control") != params.string("relation"),
              "the connectivity probe's control is its relation ('{}'): a relation controlled for "
              "itself leaves nothing; give another, e.g. functional_connectivity",
              params.string("relation"));
  return std::make_shared<ConnectivityProbe>(params.string("relation"), params.string("control"),
                                             params.integer("permutations"), params.integer("seed"),
                                             params.string("tensor"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("connectivity", "1.0.0",
                      "PE similarity vs a relation of the tokens (structural coupling, functional "
                      "connectivity): Spearman/Pearson, permutation p",
                      pelab::declare, pelab::create)
