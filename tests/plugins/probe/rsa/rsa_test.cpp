// The RSA probe on PEs whose correspondence with the true grid is known.

#include <cmath>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "probe_test_support.h"
#include "test_support.h"

namespace pelab {
namespace {

using test::rotation;
using test::snapshot;

class RSA : public ::testing::Test {
 protected:
  RSA()
      : registry_(test::builtin_registry()), grid_(Layout::grid({4, 4}, {"row", "column"}, false)) {
    torch::manual_seed(7);
  }

  ProbeResult run(const Layout& layout, const std::vector<PESnapshot>& snapshots,
                  const std::string& metric = "cosine", std::int64_t permutations = 200,
                  std::int64_t seed = 0, const std::string& tensor = "") {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "rsa");
    spec.params.set("metric", metric);
    spec.params.set("tensor", tensor);
    spec.params.set("permutations", permutations);
    spec.params.set("seed", seed);
    return registry_.create_probe(spec)->run(
        ProbeContext{layout, snapshots, nullptr, nullptr, &registry_});
  }

  // The grid's coordinates, padded with zero columns to width d.
  torch::Tensor coordinates(std::int64_t d) const {
    return torch::cat({grid_.coordinates, torch::zeros({16, d - 2}, torch::kFloat64)}, 1);
  }

  Registry registry_;
  Layout grid_;
};

TEST_F(RSA, TrueCoordinatesGiveOne) {
  const ProbeResult result = run(grid_, {snapshot(0, {coordinates(2)})}, "euclidean");
  EXPECT_NEAR(result.scalars.at("spearman"), 1.0, 1e-12);
  EXPECT_NEAR(result.scalars.at("pearson"), 1.0, 1e-6);  // float32 snapshot
  EXPECT_NEAR(result.scalars.at("spearman_block0"), 1.0, 1e-12);
  // Only the grid's 8 symmetries (of 16! relabellings) match it as well.
  EXPECT_LT(result.scalars.at("p_value"), 0.02);
  EXPECT_TRUE(result.note.empty()) << result.note;
}

TEST_F(RSA, RotatedCopyGivesTheSame) {
  const torch::Tensor rotated = coordinates(8).matmul(rotation(8)) * 3.0 + 1.0;
  const ProbeResult euclidean = run(grid_, {snapshot(0, {rotated})}, "euclidean");
  EXPECT_NEAR(euclidean.scalars.at("spearman"), 1.0, 1e-9);
  EXPECT_NEAR(euclidean.scalars.at("pearson"), 1.0, 1e-5);
  // Cosine similarity is invariant under rotation (not translation): same as unrotated.
  const torch::Tensor centred = coordinates(8) - 1.5;
  const ProbeResult plain = run(grid_, {snapshot(0, {centred})});
  const ProbeResult turned = run(grid_, {snapshot(0, {centred.matmul(rotation(8))})});
  EXPECT_NEAR(plain.scalars.at("spearman"), turned.scalars.at("spearman"), 1e-6);
  EXPECT_NEAR(plain.scalars.at("pearson"), turned.scalars.at("pearson"), 1e-6);
}

// The reviewers' criticism 2: RSA compares similarities (cosines), which a rotation of the code
// keeps, so the 2D sinusoidal code and any rotation of it score the same.
TEST_F(RSA, ARotatedSinusoidalCodeScoresTheSame) {
  PluginSpec sinusoidal = registry_.default_spec(PluginKind::kPositionalEncoding, "sinusoidal_nd");
  sinusoidal.params.set("use_hidden_coordinates", true);
  Layout hidden = grid_;
  hidden.coordinates_visible = false;
  const torch::Tensor code =
      registry_.create_positional_encoding(sinusoidal, hidden, ModelShape{16, 1, 1, 0})
          ->table()
          .detach()
          .to(torch::kFloat64);
  const ProbeResult plain = run(grid_, {snapshot(0, {code})});
  const ProbeResult turned = run(grid_, {snapshot(0, {code.matmul(rotation(16))})});
  EXPECT_GT(plain.scalars.at("spearman"), 0.5);
  EXPECT_NEAR(turned.scalars.at("spearman"), plain.scalars.at("spearman"), 1e-6);
  EXPECT_NEAR(turned.scalars.at("pearson"), plain.scalars.at("pearson"), 1e-6);
}

TEST_F(RSA, SinusoidalTableMirrorsTheGrid) {
  PluginSpec sinusoidal = registry_.default_spec(PluginKind::kPositionalEncoding, "sinusoidal_nd");
  sinusoidal.params.set("use_hidden_coordinates", true);
  sinusoidal.params.set("base", 10.0);
  const torch::Tensor table =
      registry_.create_positional_encoding(sinusoidal, grid_, ModelShape{16, 1, 1, 0})->table();
  const ProbeResult result = run(grid_, {snapshot(0, {table})}, "euclidean");
  EXPECT_GT(result.scalars.at("spearman"), 0.9);
  EXPECT_LT(result.scalars.at("p_value"), 0.02);
}

TEST_F(RSA, RandomTableGivesNothing) {
  const ProbeResult result =
      run(grid_, {snapshot(0, {torch::randn({16, 64}, torch::kFloat64)})}, "cosine", 1000);
  EXPECT_LT(std::abs(result.scalars.at("spearman")), 0.2);
  EXPECT_GT(result.scalars.at("p_value"), 0.05);
}

TEST_F(RSA, KnownValuesWithTies) {
  // Tokens at 0, 1, 2; PE rows at 0, 1, 3. Distances (upper triangle): truth 1, 2, 1 (a tie),
  // PE 1, 3, 2. Spearman (average ranks) and Pearson are both sqrt(3) / 2.
  const Layout line = Layout::sequence(3, false);
  const torch::Tensor table = torch::tensor({0.0, 1.0, 3.0}, torch::kFloat64).unsqueeze(1);
  const ProbeResult result = run(line, {snapshot(0, {table})}, "euclidean", 0);
  EXPECT_NEAR(result.scalars.at("spearman"), std::sqrt(3.0) / 2, 1e-12);
  EXPECT_NEAR(result.scalars.at("pearson"), std::sqrt(3.0) / 2, 1e-7);
  EXPECT_EQ(result.scalars.count("p_value"), 0u);  // no permutations, no p-value
}

TEST_F(RSA, PerBlockMeanAndHistory) {
  const torch::Tensor good = coordinates(4);
  const torch::Tensor noise = torch::randn({16, 4}, torch::kFloat64);
  const ProbeResult result =
      run(grid_, {snapshot(0, {noise, noise}), snapshot(10, {good, noise})}, "euclidean", 100);
  const double block0 = result.scalars.at("spearman_block0");
  const double block1 = result.scalars.at("spearman_block1");
  EXPECT_NEAR(block0, 1.0, 1e-12);  // the final snapshot is the one reported
  EXPECT_NEAR(result.scalars.at("spearman"), (block0 + block1) / 2, 1e-12);
  EXPECT_TRUE(result.scalars.count("p_value_block1"));
  const torch::Tensor history = result.arrays.at("spearman");
  ASSERT_EQ(history.sizes(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_NEAR(history[1][0].item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(history[0][1].item<double>(), block1, 1e-12);  // the noise did not change
  EXPECT_TRUE(
      torch::equal(result.arrays.at("epochs"), torch::tensor({0.0, 10.0}, torch::kFloat64)));
  EXPECT_EQ(result.arrays.at("dissimilarity").sizes(), (std::vector<std::int64_t>{2, 16, 16}));
  EXPECT_EQ(result.arrays.at("ground_truth").sizes(), (std::vector<std::int64_t>{16, 16}));
}

TEST_F(RSA, PermutationTestIsDeterministic) {
  const std::vector<PESnapshot> snapshots = {
      snapshot(0, {coordinates(2) + 0.7 * torch::randn({16, 2}, torch::kFloat64)})};
  const double first = run(grid_, snapshots, "euclidean", 300, 5).scalars.at("p_value");
  const double again = run(grid_, snapshots, "euclidean", 300, 5).scalars.at("p_value");
  EXPECT_EQ(first, again);
  EXPECT_GT(first, 0.0);
  EXPECT_LE(first, 1.0);
}

TEST_F(RSA, KernelOfATablelessPE) {
  // An attention-bias-like kernel: minus the distance. Its "dissimilarity" is the distance.
  PESnapshot kernels;
  kernels.kernels =
      (-torch::cdist(grid_.coordinates, grid_.coordinates)).unsqueeze(0).to(torch::kFloat32);
  const ProbeResult result = run(grid_, {kernels}, "cosine", 50);
  EXPECT_NEAR(result.scalars.at("spearman"), 1.0, 1e-9);
  EXPECT_FALSE(result.note.empty());
}

TEST_F(RSA, NothingToCompare) {
  Layout no_geometry;
  no_geometry.tokens = 16;
  const ProbeResult without_coordinates = run(no_geometry, {snapshot(0, {coordinates(2)})});
  EXPECT_TRUE(without_coordinates.scalars.empty());
  EXPECT_FALSE(without_coordinates.note.empty());
  const ProbeResult without_pe = run(grid_, {PESnapshot{}});
  EXPECT_TRUE(without_pe.scalars.empty());
  EXPECT_FALSE(without_pe.note.empty());
}

// Learned positions (a parameter read with `tensor`) that are the grid itself, rotated, scaled and
// shifted, mirror it exactly under the Euclidean metric; the cosine metric is refused for them.
TEST_F(RSA, LearnedPositionsAreComparedByTheirDistances) {
  const torch::Tensor positions = grid_.coordinates.matmul(test::rotation(2)) * 0.3 + 1.0;
  const std::vector<PESnapshot> snapshots = {test::rotary_snapshot({positions})};
  EXPECT_NEAR(run(grid_, snapshots, "euclidean", 0, 0, "positions").scalars.at("spearman"), 1.0,
              1e-9);
  try {
    run(grid_, snapshots, "cosine", 0, 0, "positions");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("set metric = \"euclidean\""));
  }
}

}  // namespace
}  // namespace pelab
