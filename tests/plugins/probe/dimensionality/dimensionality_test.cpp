// The dimensionality probe on tables whose spectrum is known.

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/plugins/registry.h"
#include "probe_test_support.h"
#include "test_support.h"

namespace pelab {
namespace {

using test::snapshot;

class Dimensionality : public ::testing::Test {
 protected:
  Dimensionality()
      : registry_(test::builtin_registry()), grid_(Layout::grid({4, 4}, {"row", "column"}, false)) {
    torch::manual_seed(5);
  }

  ProbeResult run(const std::vector<PESnapshot>& snapshots) {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "dimensionality");
    return registry_.create_probe(spec)->run(
        ProbeContext{grid_, snapshots, nullptr, nullptr, &registry_});
  }

  Registry registry_;
  Layout grid_;
};

TEST_F(Dimensionality, RankTwoIsAtMostTwo) {
  const torch::Tensor table =
      torch::randn({16, 2}, torch::kFloat64).matmul(torch::randn({2, 32}, torch::kFloat64));
  const ProbeResult result = run({snapshot(0, {table})});
  EXPECT_LE(result.scalars.at("participation_ratio"), 2.0 + 1e-6);
  EXPECT_GE(result.scalars.at("participation_ratio"), 1.0);
  const torch::Tensor ratio = result.arrays.at("explained_variance_ratio");
  EXPECT_NEAR(ratio[0].slice(0, 0, 2).sum().item<double>(), 1.0, 1e-6);
}

TEST_F(Dimensionality, GridCoordinatesAreExactlyTwo) {
  // Rows and columns vary independently with equal variance: two equal eigenvalues.
  const torch::Tensor table =
      torch::cat({grid_.coordinates, torch::zeros({16, 6}, torch::kFloat64)}, 1);
  const ProbeResult result = run({snapshot(0, {table})});
  EXPECT_NEAR(result.scalars.at("participation_ratio"), 2.0, 1e-6);
  EXPECT_EQ(result.scalars.at("components"), 2.0);  // for 90% of the variance
  const torch::Tensor ratio = result.arrays.at("explained_variance_ratio")[0];
  EXPECT_NEAR(ratio[0].item<double>(), 0.5, 1e-6);
  EXPECT_NEAR(ratio[1].item<double>(), 0.5, 1e-6);
}

TEST_F(Dimensionality, RankOneIsOne) {
  const torch::Tensor table =
      torch::arange(16, torch::kFloat64).unsqueeze(1) * torch::randn({1, 8}, torch::kFloat64);
  const ProbeResult result = run({snapshot(0, {table})});
  EXPECT_NEAR(result.scalars.at("participation_ratio"), 1.0, 1e-6);
  EXPECT_EQ(result.scalars.at("components"), 1.0);
}

TEST_F(Dimensionality, OneHotTokensSpreadEvenly) {
  // Centring 16 one-hot rows leaves 15 equal eigenvalues.
  const ProbeResult result = run({snapshot(0, {torch::eye(16, torch::kFloat64)})});
  EXPECT_NEAR(result.scalars.at("participation_ratio"), 15.0, 1e-4);
}

TEST_F(Dimensionality, KernelOfATableGivesTheTablesSpectrum) {
  const torch::Tensor table = torch::randn({16, 5}, torch::kFloat64);
  PESnapshot kernels;
  kernels.kernels = table.matmul(table.t()).unsqueeze(0).to(torch::kFloat32);
  const ProbeResult from_table = run({snapshot(0, {table})});
  const ProbeResult from_kernel = run({kernels});
  EXPECT_NEAR(from_table.scalars.at("participation_ratio"),
              from_kernel.scalars.at("participation_ratio"), 1e-4);
  EXPECT_FALSE(from_kernel.note.empty());
}

TEST_F(Dimensionality, BlocksAndHistory) {
  const torch::Tensor one = torch::arange(16, torch::kFloat64).unsqueeze(1).repeat({1, 4});
  const torch::Tensor two = torch::cat({grid_.coordinates, grid_.coordinates}, 1);
  const ProbeResult result = run({snapshot(0, {one, one}), snapshot(3, {one, two})});
  EXPECT_NEAR(result.scalars.at("participation_ratio_block0"), 1.0, 1e-6);
  EXPECT_NEAR(result.scalars.at("participation_ratio_block1"), 2.0, 1e-6);
  EXPECT_NEAR(result.scalars.at("participation_ratio"), 1.5, 1e-6);
  EXPECT_EQ(result.arrays.at("participation_ratio").sizes(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(result.arrays.at("explained_variance_ratio").sizes(),
            (std::vector<std::int64_t>{2, 4}));  // min(N, d) components
}

}  // namespace
}  // namespace pelab
