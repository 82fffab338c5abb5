// Axial RoPE over the layout's coordinates: rotated scores depend only on the coordinate
// difference (2D and 3D), per-axis formula, optional learnable frequencies.

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class RotaryNDTest : public ::testing::Test {
 protected:
  PluginSpec spec(bool learnable = false, bool use_hidden = false, double base = 10000.0) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "rotary_nd");
    spec.params.set("learnable_frequencies", learnable);
    spec.params.set("use_hidden_coordinates", use_hidden);
    spec.params.set("base", base);
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const Layout& layout, std::int64_t d_model,
                                           std::int64_t heads, bool learnable = false,
                                           bool use_hidden = false) {
    return registry_.create_positional_encoding(spec(learnable, use_hidden), layout,
                                                ModelShape{d_model, heads, 1, 0});
  }

  Registry registry_{Registry::default_search_path()};
};

// Scores of one random query and key content, the same at every token, after rotation.
torch::Tensor constant_content_scores(PositionalEncoding& pe, std::int64_t tokens,
                                      std::int64_t head_dim) {
  const torch::Tensor q = torch::randn({1, 1, 1, head_dim}).expand({1, 1, tokens, head_dim});
  const torch::Tensor k = torch::randn({1, 1, 1, head_dim}).expand({1, 1, tokens, head_dim});
  const auto [rq, rk] = pe.rotate(q, k);
  return torch::matmul(rq, rk.transpose(-2, -1))[0][0];
}

// Checks that scores[t][u] is a function of coordinates[u] - coordinates[t], and not a constant.
void expect_function_of_difference(const torch::Tensor& scores, const torch::Tensor& coordinates) {
  std::map<std::vector<std::int64_t>, double> seen;
  const std::int64_t tokens = coordinates.size(0);
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t u = 0; u < tokens; ++u) {
      std::vector<std::int64_t> difference;
      for (std::int64_t a = 0; a < coordinates.size(1); ++a)
        difference.push_back(
            static_cast<std::int64_t>((coordinates[u][a] - coordinates[t][a]).item<double>()));
      const double score = scores[t][u].item<double>();
      const auto [it, inserted] = seen.emplace(difference, score);
      if (!inserted) {
        EXPECT_NEAR(score, it->second, 1e-4) << "tokens " << t << ", " << u;
      }
    }
  }
  double lowest = 1e300, highest = -1e300;
  for (const auto& [difference, score] : seen) {
    lowest = std::min(lowest, score);
    highest = std::max(highest, score);
  }
  EXPECT_GT(highest - lowest, 1e-2) << "the scores do not depend on position at all";
}

TEST_F(RotaryNDTest, DeclaresItsParameters) {
  const ParamSchema& schema = registry_.schema(PluginKind::kPositionalEncoding, "rotary_nd");
  EXPECT_EQ(schema.names(),
            (std::vector<std::string>{"base", "learnable_frequencies", "use_hidden_coordinates"}));
}

TEST_F(RotaryNDTest, TwoDimensionalScoreDependsOnlyOnTheCoordinateDifference) {
  const Layout grid = Layout::grid({3, 4}, {"row", "column"}, /*coordinates_visible=*/true);
  const auto pe = make(grid, 16, 2);  // head_dim 8: 4 channels per axis
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kRotary));
  EXPECT_TRUE(pe->parameters().empty());
  torch::manual_seed(1);
  expect_function_of_difference(constant_content_scores(*pe, 12, 8), grid.coordinates);
}

TEST_F(RotaryNDTest, ThreeDimensionalScoreDependsOnlyOnTheCoordinateDifference) {
  const Layout cube = Layout::grid({2, 3, 3}, {"x", "y", "z"}, /*coordinates_visible=*/true);
  const auto pe = make(cube, 12, 1);  // head_dim 12: 4 channels per axis
  torch::manual_seed(2);
  expect_function_of_difference(constant_content_scores(*pe, 18, 12), cube.coordinates);
  // Irregular coordinates too (like a brain's): the score still sees only differences.
  Layout points;
  points.tokens = 5;
  points.coordinates =
      torch::tensor({0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 1.0, 0.0, 3.0, 2.0, 2.0, 3.0, 0.0, 2.0, 0.0},
                    torch::kFloat64)
          .view({5, 3});
  points.coordinates_visible = true;
  const auto irregular = make(points, 12, 1);
  torch::manual_seed(3);
  const torch::Tensor scores = constant_content_scores(*irregular, 5, 12);
  expect_function_of_difference(scores, points.coordinates);
  // Tokens 0 -> 2 and 1 -> 3 both step by (1, 0, 3).
  EXPECT_NEAR(scores[1][3].item<double>(), scores[0][2].item<double>(), 1e-4);
}

TEST_F(RotaryNDTest, EachAxisTurnsItsOwnChunk) {
  // 2D, head_dim 8: channels 0-3 follow axis 0 (row), 4-7 axis 1 (column); pair i of a chunk has
  // theta_i = base^(-2i / 4), so the first pair of each chunk turns one radian per unit.
  const Layout grid = Layout::grid({3, 4}, {"row", "column"}, /*coordinates_visible=*/true);
  const auto pe = make(grid, 8, 1);
  auto unit = [](std::int64_t channel) {
    return torch::zeros({8}).index_put_({channel}, 1.0).expand({1, 1, 12, 8});
  };
  const auto [row_q, row_k] = pe->rotate(unit(0), unit(0));
  const auto [col_q, col_k] = pe->rotate(unit(4), unit(4));
  const auto [slow_q, slow_k] = pe->rotate(unit(2), unit(2));
  const torch::Tensor row_scores = torch::matmul(row_q, row_k.transpose(-2, -1))[0][0];
  const torch::Tensor col_scores = torch::matmul(col_q, col_k.transpose(-2, -1))[0][0];
  const torch::Tensor slow_scores = torch::matmul(slow_q, slow_k.transpose(-2, -1))[0][0];
  for (std::int64_t t = 0; t < 12; ++t) {
    for (std::int64_t u = 0; u < 12; ++u) {
      const double rows = u / 4 - t / 4;
      const double columns = u % 4 - t % 4;
      EXPECT_NEAR(row_scores[t][u].item<double>(), std::cos(rows), 1e-5) << t << " " << u;
      EXPECT_NEAR(col_scores[t][u].item<double>(), std::cos(columns), 1e-5) << t << " " << u;
      EXPECT_NEAR(slow_scores[t][u].item<double>(), std::cos(rows / 100.0), 1e-5);
    }
  }
  // Norms are preserved.
  torch::manual_seed(4);
  const torch::Tensor q = torch::randn({2, 1, 12, 8});
  EXPECT_TRUE(torch::allclose(pe->rotate(q, q).first.norm(2, -1), q.norm(2, -1), 1e-5, 1e-5));
}

TEST_F(RotaryNDTest, OnASequenceItIsRotary1D) {
  const Layout sequence = Layout::sequence(7);
  PluginSpec one_d = registry_.default_spec(PluginKind::kPositionalEncoding, "rotary_1d");
  const auto reference =
      registry_.create_positional_encoding(one_d, sequence, ModelShape{16, 2, 1, 0});
  const auto pe = make(sequence, 16, 2);
  torch::manual_seed(5);
  const torch::Tensor q = torch::randn({2, 2, 7, 8});
  const torch::Tensor k = torch::randn({2, 2, 7, 8});
  EXPECT_TRUE(torch::allclose(pe->rotate(q, k).first, reference->rotate(q, k).first, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(pe->rotate(q, k).second, reference->rotate(q, k).second, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(pe->kernel(), reference->kernel(), 1e-5, 1e-6));
}

TEST_F(RotaryNDTest, LearnableFrequenciesStartAtTheLadderAndGetGradients) {
  const Layout grid = Layout::grid({3, 4}, {"row", "column"}, /*coordinates_visible=*/true);
  const auto pe = make(grid, 16, 2, /*learnable=*/true);  // head_dim 8, c = 4
  const auto named = pe->named_parameters();
  ASSERT_EQ(named.size(), 1u);
  ASSERT_TRUE(named.contains("frequencies"));
  const torch::Tensor frequencies = named["frequencies"];
  EXPECT_TRUE(torch::allclose(frequencies, torch::tensor({{1.0f, 0.01f}, {1.0f, 0.01f}})));
  // Same rotation as the fixed PE at initialisation.
  torch::manual_seed(6);
  const torch::Tensor q = torch::randn({2, 2, 12, 8});
  const torch::Tensor k = torch::randn({2, 2, 12, 8});
  const auto [rq, rk] = pe->rotate(q, k);
  EXPECT_TRUE(torch::allclose(rq, make(grid, 16, 2)->rotate(q, k).first, 1e-5, 1e-5));
  torch::matmul(rq, rk.transpose(-2, -1)).pow(2).sum().backward();
  const torch::Tensor grad = frequencies.grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_EQ(grad.sizes(), frequencies.sizes());
  EXPECT_GT(grad.abs().min().item<double>(), 0.0);
  // Changing a frequency changes the rotation of that axis only.
  {
    torch::NoGradGuard no_grad;
    frequencies[1][0] = 0.5;
  }
  const torch::Tensor moved = pe->rotate(q, k).first;
  EXPECT_TRUE(torch::allclose(moved.narrow(-1, 0, 4), rq.narrow(-1, 0, 4)));
  EXPECT_FALSE(torch::allclose(moved.narrow(-1, 4, 2), rq.narrow(-1, 4, 2)));
  EXPECT_NEAR(pe->kernel()[0][1].item<double>(), (2 * std::cos(0.5) + 2 * std::cos(0.01) + 4) / 8,
              1e-5);
}

// Learnable frequencies turn by the same angles as the fixed ladder, both computed in double
// precision: at coordinates up to 127 a float32 product would be off by up to ~4e-6 rad.
TEST_F(RotaryNDTest, LearnableAndFixedAnglesAgreeFarFromTheOrigin) {
  const Layout far = Layout::grid({128, 2}, {"row", "column"}, /*coordinates_visible=*/true);
  const torch::Tensor q = torch::ones({1, 1, 256, 32});
  const torch::Tensor fixed = make(far, 32, 1)->rotate(q, q).first;
  const torch::Tensor learnable = make(far, 32, 1, /*learnable=*/true)->rotate(q, q).first;
  EXPECT_LT((fixed - learnable).abs().max().item<double>(), 1e-6);
}

TEST_F(RotaryNDTest, RefusesHiddenCoordinatesUnlessAskedTo) {
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  try {
    make(grid, 8, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use_hidden_coordinates = true"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(make(grid, 8, 1, false, /*use_hidden=*/true)->kernel().size(0), 16);
}

TEST_F(RotaryNDTest, RefusesAHeadWidthThatDoesNotSplitOverTheAxes) {
  const Layout cube = Layout::grid({2, 2, 2}, {"x", "y", "z"}, /*coordinates_visible=*/true);
  try {
    make(cube, 16, 2);  // head_dim 8 is not a multiple of 2 x 3
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim (8 = d_model 16 / heads 2) must be a multiple "
                                         "of 2 x the 3 coordinate axes"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(make(cube, 24, 2)->kernel().size(0), 8);  // head_dim 12
}

TEST_F(RotaryNDTest, TrainsInsideTheModel) {
  const Layout grid = Layout::grid({2, 3}, {"row", "column"}, /*coordinates_visible=*/true);
  test::expect_trains_in_model(registry_, spec(/*learnable=*/true), grid, 8, 2);
  test::expect_trains_in_model(registry_, spec(), grid, 8, 2);
}

}  // namespace
}  // namespace pelab
