// Representational similarity analysis: does the PE's geometry mirror the tokens' true geometry?
//
// For each PE (block), the dissimilarity matrix of its rows (1 - cosine similarity, or the
// Euclidean distance) is compared with the Euclidean distances between the layout's ground-truth
// coordinates: Spearman and Pearson correlation over the N(N-1)/2 pairs above the diagonal. A
// permutation test (relabel the tokens of the PE's matrix, keep the ground truth) gives a
// one-sided p-value for a positive correspondence. PEs without a table are compared through their
// kernel K: 1 - K_ij / sqrt(K_ii K_jj), or -K when K's diagonal is not positive. The snapshots are
// float32: dissimilarities within 1e-6 of the largest one of each other count as tied ranks, so
// that rounding does not break the ties of a grid's distances.

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

#include "../common/probe_math.h"

namespace pelab {
namespace {

namespace pm = probe_math;

class RSAProbe : public Probe {
 public:
  RSAProbe(std::string metric, std::int64_t permutations, std::int64_t seed, std::string tensor)
      : metric_(std::move(metric)),
        permutations_(permutations),
        seed_(seed),
        tensor_(std::move(tensor)) {}

  ProbeResult run(const ProbeContext& context) override {
    ProbeResult result;
    const Layout& layout = context.layout;
    if (!layout.has_coordinates()) {
      result.note =
          "the task's layout has no coordinates: there is no ground truth to compare with";
      return result;
    }
    bool use_kernels = false;
    const std::vector<PESnapshot> read =
        pm::position_tables(context.snapshots, tensor_, "rsa", layout.tokens);
    const auto snapshots = pm::tables_or_kernels(read, use_kernels);
    if (snapshots.empty()) {
      result.note = "the PE has neither a table nor a kernel (e.g. pe = none): nothing to compare";
      return result;
    }
    const torch::Tensor truth = pm::euclidean_distances(layout.coordinates);
    const pm::CorrelationHistory history =
        pm::correlate_with(snapshots, use_kernels, truth, "the layout",
                           [&](const torch::Tensor& pe) { return dissimilarity(pe, use_kernels); });
    const std::vector<torch::Tensor>& final_dissimilarity = history.final_matrices;
    const torch::Tensor final_spearman = history.spearman.back();
    pm::add_per_block(result, "spearman", pm::to_vector(final_spearman));
    pm::add_per_block(result, "pearson", pm::to_vector(history.pearson.back()));
    if (permutations_ > 0) {
      pm::spearman_permutation_test(final_dissimilarity, truth, permutations_,
                                    static_cast<std::uint64_t>(seed_), result);
    }
    result.headlines.push_back({"spearman", Better::kHigher,
                                "Spearman correlation of the PE's dissimilarities with the true "
                                "distances (1: mirrors the layout)"});
    if (result.scalars.count("p_value")) {
      result.headlines.push_back(
          {"p_value", Better::kLower, "permutation test of that Spearman (block mean)"});
    }

    pm::add_correlation_arrays(result, history, snapshots, "dissimilarity", truth, "ground_truth");
    if (use_kernels) {
      result.note =
          "the PE has no table: its kernel K was compared, as 1 - K_ij / sqrt(K_ii K_jj) (or -K "
          "when the diagonal is not positive)";
    }
    return result;
  }

 private:
  torch::Tensor dissimilarity(const torch::Tensor& pe, bool kernel) const {
    if (kernel) {
      bool normalised = false;
      const torch::Tensor similarity = pm::kernel_similarity(pe, &normalised);
      return normalised ? 1.0 - similarity : -similarity;
    }
    if (metric_ == "euclidean") return pm::euclidean_distances(pe);
    return 1.0 - pm::cosine_similarities(pe);
  }

  std::string metric_;
  std::int64_t permutations_;
  std::int64_t seed_;
  std::string tensor_;
};

void declare(ParamSchema& schema) {
  schema.choice("metric", "cosine", {"cosine", "euclidean"},
                "Dissimilarity between two PE rows: 1 - cosine similarity, or Euclidean distance "
                "(the ground truth is always the Euclidean distance between coordinates).");
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
  // A parameter read as a position table holds coordinates (learned positions, angles), whose
  // cosine measures their directions from an arbitrary origin, not how far apart they are.
  PELAB_CHECK(params.string("tensor").empty() || params.string("metric") == "euclidean",
              "rsa: metric = \"cosine\" with tensor = \"{}\": a parameter read as a position "
              "table holds positions, whose cosine similarity measures directions from an "
              "arbitrary origin rather than distances; set metric = \"euclidean\"",
              params.string("tensor"));
  return std::make_shared<RSAProbe>(params.string("metric"), params.integer("permutations"),
                                    params.integer("seed"), params.string("tensor"));
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("rsa", "1.0.0",
                      "RSA: Spearman/Pearson of PE dissimilarity vs true distances, permutation p",
                      pelab::declare, pelab::create)
