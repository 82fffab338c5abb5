// The from_layout oracle: the tokens' true coordinates, centred, through a random isometry into
// d dimensions, times scale. Every pairwise distance (hence their ordering) is kept.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class FromLayoutInit : public ::testing::Test {
 protected:
  FromLayoutInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(double scale) {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "from_layout");
    spec.params.set("scale", scale);
    return registry_.create_initializer(spec);
  }

  torch::Tensor filled(double scale, const Layout& layout, std::int64_t d,
                       torch::Dtype dtype = torch::kFloat32) {
    torch::Tensor tensor = torch::empty({layout.tokens, d}, dtype);
    make(scale)->fill(tensor, InitContext::for_tensor(tensor, "pe.table (block 0)", &layout));
    return tensor;
  }

  std::string refusal(const Layout* layout, std::vector<std::int64_t> shape) {
    torch::Tensor tensor = torch::zeros(shape);
    try {
      make(1.0)->fill(tensor, InitContext::for_tensor(tensor, "pe.table (block 2)", layout));
    } catch (const Error& e) {
      EXPECT_EQ(tensor.abs().sum().item<double>(), 0.0) << "filled before refusing";
      return e.what();
    }
    ADD_FAILURE() << "accepted";
    return "";
  }

  Registry registry_;
};

TEST_F(FromLayoutInit, DeclaresScaleAndSaysItIsAnOracle) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "from_layout");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"scale"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("scale")->default_value), 1.0);
  const LoadedPlugin& plugin = registry_.get(PluginKind::kInitializer, "from_layout");
  EXPECT_THAT(plugin.info->summary, HasSubstr("ORACLE"));
  EXPECT_THAT(plugin.info->summary, HasSubstr("leaks ground truth on purpose"));
}

// The 4x4 Latin square grid (its coordinates hidden from the model: this is the oracle) into
// d = 16: distances are scale x the grid's, so their ordering is the grid's.
TEST_F(FromLayoutInit, RowsKeepTheGridsDistances) {
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  const double scale = 0.3;
  torch::manual_seed(1);
  const torch::Tensor table = filled(scale, grid, 16).to(torch::kFloat64);
  const torch::Tensor truth = torch::cdist(grid.coordinates, grid.coordinates);
  const torch::Tensor learned = torch::cdist(table, table);
  EXPECT_LT((learned - scale * truth).abs().max().item<double>(), 1e-6);
  // The ordering of all 256 x 256 pairs of distances (ties in the grid excepted).
  const torch::Tensor t = truth.flatten(), l = learned.flatten();
  const torch::Tensor truth_order = t.unsqueeze(1) - t.unsqueeze(0);
  const torch::Tensor learned_order = l.unsqueeze(1) - l.unsqueeze(0);
  const torch::Tensor distinct = truth_order.abs() > 1e-9;
  EXPECT_TRUE(torch::equal(truth_order.sign().masked_select(distinct),
                           learned_order.sign().masked_select(distinct)));
  // Centred: every column sums to 0. A plane in R^16: the Gram matrix has rank D = 2.
  EXPECT_LT(table.sum(0).abs().max().item<double>(), 1e-5);
  EXPECT_EQ(
      torch::linalg_matrix_rank(table.mm(table.t()), 1e-4, /*hermitian=*/true).item<std::int64_t>(),
      2);
}

TEST_F(FromLayoutInit, AnyDimensionAndTheGramMatrixIsTheCoordinates) {
  const Layout cube = Layout::grid({3, 3, 3}, {"x", "y", "z"}, /*coordinates_visible=*/true);
  torch::manual_seed(2);
  const torch::Tensor table = filled(2.0, cube, 3, torch::kFloat64);  // d = D: a rotation
  EXPECT_EQ(torch::linalg_matrix_rank(table, 1e-9).item<std::int64_t>(), 3);
  const torch::Tensor centred = cube.coordinates - cube.coordinates.mean(0, true);
  // table = 2 X P with P P^T = I, so table table^T = 4 X X^T whatever the seed drew.
  EXPECT_TRUE(torch::allclose(table.mm(table.t()), 4.0 * centred.mm(centred.t()), 1e-10, 1e-10));
  // A sequence: a line.
  const torch::Tensor line = filled(1.0, Layout::sequence(10), 8).to(torch::kFloat64);
  EXPECT_EQ(torch::linalg_matrix_rank(line, 1e-5).item<std::int64_t>(), 1);
}

TEST_F(FromLayoutInit, TheSeedChoosesOnlyTheOrientation) {
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  torch::manual_seed(9);
  const torch::Tensor a = filled(1.0, grid, 32, torch::kFloat64);
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, filled(1.0, grid, 32, torch::kFloat64)));
  torch::manual_seed(10);
  const torch::Tensor b = filled(1.0, grid, 32, torch::kFloat64);
  EXPECT_FALSE(torch::allclose(a, b));
  EXPECT_TRUE(torch::allclose(a.mm(a.t()), b.mm(b.t()), 1e-10, 1e-10));
}

TEST_F(FromLayoutInit, RefusesWithoutAGeometryNamingTheTensor) {
  const Layout grid = Layout::grid({2, 3}, {"row", "column"}, /*coordinates_visible=*/false);
  Layout bare;  // tokens but no coordinates
  bare.tokens = 6;

  std::string message = refusal(nullptr, {6, 8});
  EXPECT_THAT(message,
              HasSubstr("pe.table (block 2): from_layout needs a tensor indexed by token"));
  EXPECT_THAT(message, HasSubstr("has no layout"));
  message = refusal(&bare, {6, 8});
  EXPECT_THAT(message, HasSubstr("pe.table (block 2): from_layout projects the tokens' "
                                 "coordinates, but the task's layout has none"));
  EXPECT_THAT(refusal(&grid, {5, 8}),
              HasSubstr("one row per token (N = 6), but it has shape [5, 8]"));
  EXPECT_THAT(refusal(&grid, {6}), HasSubstr("but it has shape [6]"));
  EXPECT_THAT(refusal(&grid, {6, 1}), HasSubstr("needs d >= the 2 coordinate axes"));
}

TEST_F(FromLayoutInit, FillsAParameterWithoutRecordingAGraph) {
  const Layout line = Layout::sequence(4);
  torch::Tensor parameter = torch::zeros({4, 6}, torch::requires_grad());
  make(1.0)->fill(parameter, InitContext::for_tensor(parameter, "pe.table", &line));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_NEAR(parameter.detach().norm().item<double>(), std::sqrt(1.5 * 1.5 * 2 + 0.5 * 0.5 * 2),
              1e-5);
}

}  // namespace
}  // namespace pelab
