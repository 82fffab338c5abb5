// ALiBi: the paper's geometric slopes, a symmetric bias -slope x |i - j|, and its Euclidean form
// on 2D and 3D layouts.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class ALiBiTest : public ::testing::Test {
 protected:
  PluginSpec spec(const std::string& distance = "index", bool use_hidden = false) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "alibi");
    spec.params.set("distance", distance);
    spec.params.set("use_hidden_coordinates", use_hidden);
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const Layout& layout, std::int64_t heads,
                                           const std::string& distance = "index",
                                           bool use_hidden = false) {
    return registry_.create_positional_encoding(spec(distance, use_hidden), layout,
                                                ModelShape{4 * heads, heads, 1, 0});
  }
  // The slopes, read off the bias between neighbours: bias[h, 0, 1] = -m_h.
  std::vector<double> slopes(std::int64_t heads) {
    const torch::Tensor bias = make(Layout::sequence(3), heads)->attention_bias();
    std::vector<double> result;
    for (std::int64_t h = 0; h < heads; ++h)
      result.push_back(-bias[h][0][1].item<double>());
    return result;
  }

  Registry registry_{Registry::default_search_path()};
};

void expect_slopes(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t h = 0; h < expected.size(); ++h)
    EXPECT_NEAR(actual[h], expected[h], 1e-7 * expected[h]) << "head " << h;
}

TEST_F(ALiBiTest, EightHeadsHaveThePapersSlopes) {
  // Exactly representable powers of two: compared for equality.
  const std::vector<double> actual = slopes(8);
  const std::vector<double> expected = {1.0 / 2,  1.0 / 4,  1.0 / 8,   1.0 / 16,
                                        1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256};
  EXPECT_EQ(actual, expected);
  const auto pe = make(Layout::sequence(3), 8);
  EXPECT_TRUE(torch::equal(pe->named_buffers()["slopes"],
                           torch::tensor(expected, torch::kFloat64).to(torch::kFloat32)));
}

TEST_F(ALiBiTest, OtherPowersOfTwo) {
  expect_slopes(slopes(1), {1.0 / 256});
  expect_slopes(slopes(2), {1.0 / 16, 1.0 / 256});
  expect_slopes(slopes(4), {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256});
  // 16 heads: 2^(-0.5 (h + 1)).
  const std::vector<double> sixteen = slopes(16);
  for (std::int64_t h = 0; h < 16; ++h)
    EXPECT_NEAR(sixteen[h], std::pow(2.0, -0.5 * (h + 1)), 1e-7) << h;
}

TEST_F(ALiBiTest, NonPowersOfTwoInterleaveTheNextPowerOfTwo) {
  // The reference get_slopes: the slopes of the largest power of two p below n, then slopes 1, 3,
  // 5, ... of 2p heads.
  expect_slopes(slopes(3), {1.0 / 16, 1.0 / 256, 1.0 / 4});
  expect_slopes(slopes(6), {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256, 1.0 / 2, 1.0 / 8});
  const double r = std::sqrt(0.5);  // 16 heads' ratio
  expect_slopes(slopes(12), {1.0 / 2, 1.0 / 4, 1.0 / 8, 1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128,
                             1.0 / 256, r, r * r * r, std::pow(r, 5), std::pow(r, 7)});
}

TEST_F(ALiBiTest, IndexBiasIsMinusSlopeTimesDistanceAndSymmetric) {
  const auto pe = make(Layout::sequence(9), 4);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kAttentionBias));
  EXPECT_TRUE(pe->parameters().empty());
  const torch::Tensor bias = pe->attention_bias();
  ASSERT_EQ(bias.sizes(), (std::vector<std::int64_t>{4, 9, 9}));
  const std::vector<double> m = {1.0 / 4, 1.0 / 16, 1.0 / 64, 1.0 / 256};
  for (std::int64_t h = 0; h < 4; ++h) {
    for (std::int64_t i = 0; i < 9; ++i) {
      for (std::int64_t j = 0; j < 9; ++j)
        EXPECT_EQ(bias[h][i][j].item<double>(), -m[h] * std::abs(i - j)) << h << i << j;
    }
  }
  EXPECT_TRUE(torch::equal(bias, bias.transpose(1, 2)));
  EXPECT_TRUE(torch::allclose(pe->kernel(), bias.mean(0)));
}

TEST_F(ALiBiTest, IndexDistanceNeedsNoVisibleCoordinates) {
  const Layout grid = Layout::grid({3, 3}, {"row", "column"}, /*coordinates_visible=*/false);
  EXPECT_TRUE(torch::equal(make(grid, 2)->attention_bias(),
                           make(Layout::sequence(9), 2)->attention_bias()));
}

TEST_F(ALiBiTest, EuclideanOnAGridIsMinusSlopeTimesDistance) {
  const Layout grid = Layout::grid({3, 4}, {"row", "column"}, /*coordinates_visible=*/true);
  const torch::Tensor bias = make(grid, 2, "euclidean")->attention_bias();  // slopes 1/16, 1/256
  ASSERT_EQ(bias.sizes(), (std::vector<std::int64_t>{2, 12, 12}));
  auto token = [](std::int64_t row, std::int64_t column) { return row * 4 + column; };
  // (0, 0)-(2, 3): sqrt(13); (1, 1)-(1, 3): 2; (0, 1)-(2, 1): 2; (2, 2)-(1, 3): sqrt(2).
  EXPECT_NEAR(bias[0][token(0, 0)][token(2, 3)].item<double>(), -std::sqrt(13.0) / 16, 1e-7);
  EXPECT_NEAR(bias[1][token(0, 0)][token(2, 3)].item<double>(), -std::sqrt(13.0) / 256, 1e-8);
  EXPECT_NEAR(bias[0][token(1, 1)][token(1, 3)].item<double>(), -2.0 / 16, 1e-7);
  EXPECT_NEAR(bias[0][token(0, 1)][token(2, 1)].item<double>(), -2.0 / 16, 1e-7);
  EXPECT_NEAR(bias[0][token(2, 2)][token(1, 3)].item<double>(), -std::sqrt(2.0) / 16, 1e-7);
  EXPECT_EQ(bias[0][token(1, 2)][token(1, 2)].item<double>(), 0.0);
  EXPECT_TRUE(torch::equal(bias, bias.transpose(1, 2)));
  // It differs from the index distance: (0, 3) and (1, 0) are 3 tokens apart, but sqrt(10) away.
  EXPECT_NEAR(bias[0][token(0, 3)][token(1, 0)].item<double>(), -std::sqrt(10.0) / 16, 1e-7);
}

TEST_F(ALiBiTest, EuclideanInThreeDimensions) {
  const Layout cube = Layout::grid({2, 3, 4}, {"x", "y", "z"}, /*coordinates_visible=*/true);
  const torch::Tensor bias = make(cube, 1, "euclidean")->attention_bias();  // slope 1/256
  auto token = [](std::int64_t x, std::int64_t y, std::int64_t z) { return x * 12 + y * 4 + z; };
  EXPECT_NEAR(bias[0][token(0, 0, 0)][token(1, 2, 3)].item<double>(), -std::sqrt(14.0) / 256, 1e-8);
  EXPECT_NEAR(bias[0][token(1, 1, 0)][token(0, 1, 2)].item<double>(), -std::sqrt(5.0) / 256, 1e-8);
}

TEST_F(ALiBiTest, EuclideanRefusesHiddenCoordinatesUnlessAskedTo) {
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  try {
    make(grid, 2, "euclidean");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use_hidden_coordinates = true"), std::string::npos)
        << e.what();
  }
  const torch::Tensor bias = make(grid, 2, "euclidean", /*use_hidden=*/true)->attention_bias();
  EXPECT_NEAR(bias[0][0][5].item<double>(), -std::sqrt(2.0) / 16, 1e-7);
  Layout bare;
  bare.tokens = 3;
  EXPECT_THROW(make(bare, 2, "euclidean"), Error);
}

TEST_F(ALiBiTest, TrainsInsideTheModel) {
  test::expect_trains_in_model(registry_, spec(), Layout::sequence(6), 8, 2);
  const Layout grid = Layout::grid({2, 3}, {"row", "column"}, /*coordinates_visible=*/true);
  test::expect_trains_in_model(registry_, spec("euclidean"), grid, 8, 2);
}

}  // namespace
}  // namespace pelab
