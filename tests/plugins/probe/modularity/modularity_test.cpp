// The modularity probe: Newman's Q of the PE-similarity graph against analytic values.

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

class Modularity : public ::testing::Test {
 protected:
  Modularity()
      : registry_(test::builtin_registry()),
        grid_(Layout::grid({4, 4}, {"row", "column"}, false)) {}

  ProbeResult run(const std::vector<PESnapshot>& snapshots, const std::string& partition = "rows",
                  std::vector<std::int64_t> labels = {}) {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "modularity");
    spec.params.set("partition", partition);
    spec.params.set("labels", labels);
    return registry_.create_probe(spec)->run(
        ProbeContext{grid_, snapshots, nullptr, nullptr, &registry_});
  }

  // Token k's PE is the one-hot of its row (k / 4).
  torch::Tensor row_one_hots() const {
    return torch::eye(4, torch::kFloat64).repeat_interleave(4, 0);
  }

  Registry registry_;
  Layout grid_;
};

// One-hot rows: the graph is 4 disjoint 4-cliques of unit weights (no self-loops). Each token has
// degree 3, 2m = 48, and each row community holds 12 of the 48 (ordered) edge ends:
//   rows:    Q = 4 (12/48 - (12/48)^2) = 3/4;
//   columns: each column community has no internal edge: Q = 4 (0 - (12/48)^2) = -1/4.
TEST_F(Modularity, RowOneHotsAnalyticValues) {
  EXPECT_NEAR(run({snapshot({row_one_hots()})}, "rows").scalars.at("q"), 0.75, 1e-12);
  EXPECT_NEAR(run({snapshot({row_one_hots()})}, "axis0").scalars.at("q"), 0.75, 1e-12);
  EXPECT_NEAR(run({snapshot({row_one_hots()})}, "columns").scalars.at("q"), -0.25, 1e-12);
}

TEST_F(Modularity, ExplicitLabels) {
  std::vector<std::int64_t> rows;
  for (int k = 0; k < 16; ++k)
    rows.push_back(k / 4);
  EXPECT_NEAR(run({snapshot({row_one_hots()})}, "columns", rows).scalars.at("q_block0"), 0.75,
              1e-12);
  // All in one community: Q = 1 - 1 = 0.
  EXPECT_NEAR(
      run({snapshot({row_one_hots()})}, "rows", std::vector<std::int64_t>(16, 7)).scalars.at("q"),
      0.0, 1e-12);
}

// The task's own communities (a network's modules): here the grid's rows as labels, so the values
// are those of the `rows` partition; a layout without communities gives a note, not a number.
TEST_F(Modularity, TheLayoutsCommunities) {
  grid_.communities = torch::arange(16, torch::kInt64).div(4, "floor");
  EXPECT_NEAR(run({snapshot({row_one_hots()})}, "communities").scalars.at("q"), 0.75, 1e-12);
  grid_.communities = torch::arange(16, torch::kInt64).remainder(4);  // the columns
  EXPECT_NEAR(run({snapshot({row_one_hots()})}, "communities").scalars.at("q"), -0.25, 1e-12);
  grid_.communities = torch::Tensor();
  const ProbeResult none = run({snapshot({row_one_hots()})}, "communities");
  EXPECT_TRUE(none.scalars.empty());
  EXPECT_NE(none.note.find("declares no communities"), std::string::npos) << none.note;
}

TEST_F(Modularity, NegativeSimilaritiesAreClipped) {
  // Rows 0 and 1 point in opposite directions (cosine -1), as do rows 2 and 3: once clipped, the
  // same graph as the one-hots.
  std::vector<torch::Tensor> rows;
  for (int k = 0; k < 16; ++k) {
    const int row = k / 4;
    torch::Tensor v = torch::zeros({2}, torch::kFloat64);
    v[row / 2] = row % 2 == 0 ? 1.0 : -1.0;
    rows.push_back(v);
  }
  EXPECT_NEAR(run({snapshot({torch::stack(rows)})}).scalars.at("q"), 0.75, 1e-12);
}

TEST_F(Modularity, PerBlockAndMean) {
  const ProbeResult result =
      run({snapshot({row_one_hots(), torch::ones({16, 4}, torch::kFloat64)})});
  EXPECT_NEAR(result.scalars.at("q_block0"), 0.75, 1e-12);
  // A complete graph (degree 15, 2m = 240): Q = 4 (12/240 - (60/240)^2) = -1/20.
  EXPECT_NEAR(result.scalars.at("q_block1"), -0.05, 1e-12);
  EXPECT_NEAR(result.scalars.at("q"), 0.35, 1e-12);
}

TEST_F(Modularity, BadPartitions) {
  PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "modularity");
  spec.params.set("partition", std::string("diagonals"));
  EXPECT_THROW(registry_.create_probe(spec), Error);
  EXPECT_THROW(run({snapshot({row_one_hots()})}, "axis2"), Error);         // a 2D grid
  EXPECT_THROW(run({snapshot({row_one_hots()})}, "rows", {0, 1}), Error);  // 2 labels, 16 tokens
}

}  // namespace
}  // namespace pelab
