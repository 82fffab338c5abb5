// The movement probe on hand-made trajectories.

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

class Movement : public ::testing::Test {
 protected:
  Movement() : registry_(test::builtin_registry()), layout_(Layout::sequence(4)) {}

  ProbeResult run(const std::vector<PESnapshot>& snapshots) {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "movement");
    return registry_.create_probe(spec)->run(
        ProbeContext{layout_, snapshots, nullptr, nullptr, &registry_});
  }

  Registry registry_;
  Layout layout_;
};

TEST_F(Movement, UnchangedPEDidNotMove) {
  const torch::Tensor table = torch::randn({4, 3});
  const ProbeResult result = run({snapshot(0, {table}), snapshot(5, {table})});
  EXPECT_EQ(result.scalars.at("relative_change"), 0.0);
  EXPECT_NEAR(result.scalars.at("norm"), table.norm().item<double>(), 1e-5);
  EXPECT_NEAR(result.scalars.at("norm_initial"), table.norm().item<double>(), 1e-5);
}

TEST_F(Movement, KnownAnswers) {
  // Block 0 doubles (moves by its own norm: 1); block 1, of norm 5, moves by 10 (2).
  const torch::Tensor a = torch::tensor({{3.0, 4.0}, {0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}});
  const torch::Tensor b = torch::tensor({{0.0, 0.0}, {0.0, 5.0}, {0.0, 0.0}, {0.0, 0.0}});
  const torch::Tensor b_moved = torch::tensor({{0.0, 0.0}, {0.0, 5.0}, {6.0, 8.0}, {0.0, 0.0}});
  const ProbeResult result = run({snapshot(0, {a, b}), snapshot(1, {2 * a, b_moved})});
  EXPECT_DOUBLE_EQ(result.scalars.at("relative_change_block0"), 1.0);
  EXPECT_DOUBLE_EQ(result.scalars.at("relative_change_block1"), 2.0);
  EXPECT_DOUBLE_EQ(result.scalars.at("relative_change"), 1.5);
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_block0"), 10.0);
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_block1"), std::sqrt(125.0));
  const torch::Tensor change = result.arrays.at("relative_change");
  EXPECT_TRUE(torch::allclose(change, torch::tensor({{0.0, 0.0}, {1.0, 2.0}}, torch::kFloat64)));
  EXPECT_EQ(result.arrays.at("norm").sizes(), (std::vector<std::int64_t>{2, 2}));
}

TEST_F(Movement, ZeroInitialPEHasNoRelativeChange) {
  const ProbeResult result =
      run({snapshot(0, {torch::zeros({4, 2})}), snapshot(1, {torch::ones({4, 2})})});
  EXPECT_TRUE(std::isnan(result.scalars.at("relative_change")));
  EXPECT_DOUBLE_EQ(result.scalars.at("norm"), std::sqrt(8.0));
}

TEST_F(Movement, KernelsWhenThereIsNoTable) {
  PESnapshot first, last;
  first.kernels = torch::eye(4).unsqueeze(0);
  last.epoch = 2;
  last.kernels = (3 * torch::eye(4)).unsqueeze(0);
  const ProbeResult result = run({first, last});
  EXPECT_DOUBLE_EQ(result.scalars.at("relative_change"), 2.0);
  EXPECT_FALSE(result.note.empty());
}

TEST_F(Movement, NothingWithoutAPE) {
  const ProbeResult result = run({PESnapshot{}});
  EXPECT_TRUE(result.scalars.empty());
  EXPECT_FALSE(result.note.empty());
}

}  // namespace
}  // namespace pelab
