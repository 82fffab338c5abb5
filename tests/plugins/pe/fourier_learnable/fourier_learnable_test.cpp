// Learnable Fourier features (Li et al. 2021): the table is the MLP of the Fourier features of the
// coordinates, recomputed every forward pass, trained end to end.

#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class FourierLearnableTest : public ::testing::Test {
 protected:
  PluginSpec spec(std::int64_t fourier_dim = 16, std::int64_t hidden_dim = 8, double gamma = 1.0,
                  bool use_hidden = false) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "fourier_learnable");
    spec.params.set("fourier_dim", fourier_dim);
    spec.params.set("hidden_dim", hidden_dim);
    spec.params.set("gamma", gamma);
    spec.params.set("use_hidden_coordinates", use_hidden);
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const PluginSpec& spec, const Layout& layout,
                                           std::int64_t d_model = 12) {
    return registry_.create_positional_encoding(spec, layout, ModelShape{d_model, 1, 1, 0});
  }

  Registry registry_{Registry::default_search_path()};
};

Layout grid_layout() {
  return Layout::grid({3, 4}, {"row", "column"}, /*coordinates_visible=*/true);
}

TEST_F(FourierLearnableTest, DeclaresItsParameters) {
  const PluginSpec defaults =
      registry_.default_spec(PluginKind::kPositionalEncoding, "fourier_learnable");
  EXPECT_EQ(defaults.params.integer("fourier_dim"), 64);
  EXPECT_EQ(defaults.params.integer("hidden_dim"), 32);
  EXPECT_EQ(defaults.params.real("gamma"), 1.0);
  EXPECT_FALSE(defaults.params.boolean("use_hidden_coordinates"));
}

TEST_F(FourierLearnableTest, ShapesAndParameters) {
  const auto pe = make(spec(16, 8), grid_layout(), 12);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kAdditive));
  EXPECT_EQ(pe->table().sizes(), (std::vector<std::int64_t>{12, 12}));
  const auto named = pe->named_parameters();
  EXPECT_EQ(named["frequencies"].sizes(), (std::vector<std::int64_t>{8, 2}));  // W_r [F/2, D]
  EXPECT_EQ(named["hidden.weight"].sizes(), (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(named["hidden.bias"].sizes(), (std::vector<std::int64_t>{8}));
  EXPECT_EQ(named["output.weight"].sizes(), (std::vector<std::int64_t>{12, 8}));
  EXPECT_EQ(named["output.bias"].sizes(), (std::vector<std::int64_t>{12}));
  EXPECT_EQ(named.size(), 5u);
}

TEST_F(FourierLearnableTest, TableIsTheMlpOfTheFourierFeatures) {
  torch::manual_seed(1);
  const Layout grid = grid_layout();
  const auto pe = make(spec(16, 8), grid, 12);
  auto named = pe->named_parameters();
  const torch::Tensor x = grid.coordinates;  // float64 [12, 2]
  const torch::Tensor w = named["frequencies"].detach().to(torch::kFloat64);
  const torch::Tensor projected = x.matmul(w.t());
  const torch::Tensor features =
      torch::cat({projected.cos(), projected.sin()}, 1) / std::sqrt(16.0);
  auto linear = [&](const std::string& name, const torch::Tensor& input) {
    return input.matmul(named[name + ".weight"].detach().to(torch::kFloat64).t()) +
           named[name + ".bias"].detach().to(torch::kFloat64);
  };
  const torch::Tensor expected = linear("output", torch::gelu(linear("hidden", features)));
  EXPECT_TRUE(torch::allclose(pe->table().to(torch::kFloat64), expected, 1e-5, 1e-6));
  // Written out for one entry of the features: token 6 is (row 1, column 2).
  const double angle = 1.0 * w[3][0].item<double>() + 2.0 * w[3][1].item<double>();
  EXPECT_NEAR(features[6][3].item<double>(), std::cos(angle) / 4.0, 1e-12);
  EXPECT_NEAR(features[6][11].item<double>(), std::sin(angle) / 4.0, 1e-12);
  // Additive: embed adds the table.
  const torch::Tensor tokens = torch::randn({2, 12, 12});
  EXPECT_TRUE(torch::allclose(pe->embed(tokens), tokens + pe->table()));
}

TEST_F(FourierLearnableTest, FrequenciesHaveStdOneOverGamma) {
  torch::manual_seed(2);
  for (double gamma : {0.5, 4.0}) {
    const torch::Tensor w =
        make(spec(2000, 4, gamma), grid_layout())->named_parameters()["frequencies"];
    // 2000 draws: the sample std is within ~1.6% of 1 / gamma (1 s.e.), the mean near 0.
    EXPECT_NEAR(w.std().item<double>(), 1.0 / gamma, 0.08 / gamma) << gamma;
    EXPECT_NEAR(w.mean().item<double>(), 0.0, 0.1 / gamma) << gamma;
  }
}

TEST_F(FourierLearnableTest, GradientsReachTheFrequenciesAndTheMlp) {
  torch::manual_seed(3);
  const auto pe = make(spec(), grid_layout());
  pe->embed(torch::randn({2, 12, 12})).pow(2).sum().backward();
  for (const auto& parameter : pe->named_parameters()) {
    const torch::Tensor grad = parameter.value().grad();
    ASSERT_TRUE(grad.defined()) << parameter.key();
    EXPECT_GT(grad.abs().sum().item<double>(), 0.0) << parameter.key();
  }
  // The table follows the parameters: changing W_r changes it.
  const torch::Tensor before = pe->table().detach().clone();
  {
    torch::NoGradGuard no_grad;
    pe->named_parameters()["frequencies"].mul_(2.0);
  }
  EXPECT_FALSE(torch::allclose(before, pe->table()));
}

TEST_F(FourierLearnableTest, TableDependsOnlyOnTheCoordinates) {
  const Layout grid = grid_layout();
  const torch::Tensor permutation =
      torch::tensor({3, 7, 0, 11, 5, 1, 9, 2, 10, 4, 8, 6}, torch::kLong);
  Layout shuffled = grid;
  shuffled.coordinates = grid.coordinates.index_select(0, permutation);
  shuffled.grid_shape = {};
  torch::manual_seed(4);
  const torch::Tensor table = make(spec(), grid)->table().detach();
  torch::manual_seed(4);
  const torch::Tensor permuted = make(spec(), shuffled)->table().detach();
  EXPECT_TRUE(torch::allclose(permuted, table.index_select(0, permutation), 1e-6, 1e-7));
  EXPECT_FALSE(torch::allclose(permuted, table));
  // Tokens at the same place get the same row, to the rounding of the products: the rows come out
  // of one GEMM, whose kernel may sum an edge row in another order than an inner one (OpenBLAS's
  // generic kernel does), so equal inputs give rows equal to a few float ulps, not bit for bit.
  Layout twins;
  twins.tokens = 3;
  twins.coordinates = torch::tensor({0.5, 1.0, 2.0, -1.0, 0.5, 1.0}, torch::kFloat64).view({3, 2});
  twins.coordinates_visible = true;
  const torch::Tensor rows = make(spec(), twins)->table();
  EXPECT_TRUE(torch::allclose(rows[0], rows[2], 1e-5, 1e-6));
  EXPECT_FALSE(torch::allclose(rows[0], rows[1]));
}

TEST_F(FourierLearnableTest, SameSeedSameTable) {
  torch::manual_seed(5);
  const torch::Tensor a = make(spec(), grid_layout())->table().detach();
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(a, make(spec(), grid_layout())->table()));
  torch::manual_seed(6);
  EXPECT_FALSE(torch::allclose(a, make(spec(), grid_layout())->table()));
}

TEST_F(FourierLearnableTest, RefusesHiddenCoordinatesUnlessAskedTo) {
  const Layout hidden = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  try {
    make(spec(), hidden);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use_hidden_coordinates = true"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(make(spec(16, 8, 1.0, /*use_hidden=*/true), hidden)->table().size(0), 16);
}

TEST_F(FourierLearnableTest, RefusesAnOddFourierDim) {
  try {
    make(spec(15), grid_layout());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fourier_dim (15) must be even"), std::string::npos)
        << e.what();
  }
}

TEST_F(FourierLearnableTest, TrainsInsideTheModel) {
  test::expect_trains_in_model(registry_, spec(), grid_layout(), 8, 2);
  // A 3D layout as well.
  const Layout cube = Layout::grid({2, 2, 3}, {"x", "y", "z"}, /*coordinates_visible=*/true);
  test::expect_trains_in_model(registry_, spec(), cube, 8, 2);
}

}  // namespace
}  // namespace pelab
