// The decoding probe: coordinates are read back from a PE that holds them linearly, not from
// noise.

#include <cmath>
#include <memory>
#include <string>
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

using test::snapshot;

class Decoding : public ::testing::Test {
 protected:
  Decoding()
      : registry_(test::builtin_registry()), grid_(Layout::grid({4, 4}, {"row", "column"}, false)) {
    torch::manual_seed(3);
  }

  ProbeResult run(const std::vector<PESnapshot>& snapshots, double alpha = 1e-6,
                  std::int64_t folds = 4, const std::string& tensor = "") {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "decoding");
    spec.params.set("alpha", alpha);
    spec.params.set("folds", folds);
    spec.params.set("tensor", tensor);
    return registry_.create_probe(spec)->run(
        ProbeContext{grid_, snapshots, nullptr, nullptr, &registry_});
  }

  // A linear image of the coordinates in d dimensions, plus an offset.
  torch::Tensor linear(std::int64_t d) const {
    return grid_.coordinates.matmul(torch::randn({2, d}, torch::kFloat64)) + 0.5;
  }

  Registry registry_;
  Layout grid_;
};

TEST_F(Decoding, LinearCoordinatesAreDecoded) {
  const ProbeResult result = run({snapshot(0, {linear(12)})});
  EXPECT_GT(result.scalars.at("r2"), 0.999);
  EXPECT_GT(result.scalars.at("r2_row"), 0.999);
  EXPECT_GT(result.scalars.at("r2_column"), 0.999);
  EXPECT_GT(result.scalars.at("r2_block0"), 0.999);
  EXPECT_GT(result.scalars.at("r2_row_block0"), 0.999);
}

TEST_F(Decoding, NoiseIsNot) {
  const ProbeResult result = run({snapshot(0, {torch::randn({16, 12}, torch::kFloat64)})}, 1.0);
  EXPECT_LT(result.scalars.at("r2"), 0.2);
}

TEST_F(Decoding, OnlyTheAxisThePEHolds) {
  // The PE knows each token's row, nothing about its column.
  const torch::Tensor rows = grid_.coordinates.select(1, 0).unsqueeze(1).repeat({1, 6});
  const ProbeResult result = run({snapshot(0, {rows})});
  EXPECT_GT(result.scalars.at("r2_row"), 0.999);
  EXPECT_LT(result.scalars.at("r2_column"), 0.01);
  EXPECT_NEAR(result.scalars.at("r2"),
              (result.scalars.at("r2_row") + result.scalars.at("r2_column")) / 2, 1e-12);
}

TEST_F(Decoding, ScaleDoesNotMatter) {
  // Features are z-scored: a PE scaled by 100 decodes the same.
  const torch::Tensor pe = linear(8) + 0.3 * torch::randn({16, 8}, torch::kFloat64);
  const double small = run({snapshot(0, {pe})}, 1.0).scalars.at("r2");
  const double large = run({snapshot(0, {pe * 100.0})}, 1.0).scalars.at("r2");
  EXPECT_NEAR(small, large, 1e-4);
}

TEST_F(Decoding, HistoryPerSnapshotBlockAndAxis) {
  const torch::Tensor noise = torch::randn({16, 8}, torch::kFloat64);
  const ProbeResult result =
      run({snapshot(0, {noise, noise}), snapshot(1, {noise, linear(8)})}, 1e-6, 16);
  EXPECT_EQ(result.arrays.at("r2").sizes(), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_GT(result.scalars.at("r2_block1"), 0.999);  // leave-one-out with 16 folds
  EXPECT_LT(result.scalars.at("r2_block0"), 0.5);
}

TEST_F(Decoding, NoTableNoScalars) {
  PESnapshot kernels;
  kernels.kernels = torch::eye(16).unsqueeze(0);
  const ProbeResult result = run({kernels});
  EXPECT_TRUE(result.scalars.empty());
  EXPECT_FALSE(result.note.empty());
}

// A rotary PE has no table; its learned positions (a parameter, tokens first) are read with the
// `tensor` key, by name or by "auto"; a name the snapshots lack is refused naming the key and
// what they hold.
TEST_F(Decoding, ReadsLearnedPositionsByTheTensorKey) {
  const std::vector<PESnapshot> snapshots = {test::rotary_snapshot({linear(2)})};
  EXPECT_EQ(run(snapshots).scalars.count("r2"), 0u);  // no table: a note, nothing decoded
  EXPECT_NEAR(run(snapshots, 1e-6, 4, "positions").scalars.at("r2"), 1.0, 1e-6);
  EXPECT_NEAR(run(snapshots, 1e-6, 4, "auto").scalars.at("r2"), 1.0, 1e-6);
  try {
    run(snapshots, 1e-6, 4, "frequencies");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("decoding: tensor = \"frequencies\" names no "
                                               "parameter of the run's PE snapshots (they hold "
                                               "positions)"));
  }
}

}  // namespace
}  // namespace pelab
