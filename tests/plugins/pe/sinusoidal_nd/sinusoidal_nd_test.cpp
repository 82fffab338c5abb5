#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class SinusoidalNDTest : public ::testing::Test {
 protected:
  std::shared_ptr<PositionalEncoding> make(const Layout& layout, std::int64_t d_model,
                                           bool use_hidden = true) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "sinusoidal_nd");
    spec.params.set("use_hidden_coordinates", use_hidden);
    return registry_.create_positional_encoding(spec, layout, ModelShape{d_model, 1, 1, 0});
  }

  Registry registry_{Registry::default_search_path()};
};

// The paper's 2D table (the common positionalencoding2d): the first half of d encodes the
// column, the second half the row, sin/cos interleaved, frequencies 10000^(-2i / (d/2)).
double paper_entry(std::int64_t row, std::int64_t column, std::int64_t channel, std::int64_t d) {
  const std::int64_t half = d / 2;
  const double position = channel < half ? column : row;
  const std::int64_t within = channel % half;
  const double frequency = std::exp(-(within - within % 2) * std::log(10000.0) / half);
  return within % 2 == 0 ? std::sin(position * frequency) : std::cos(position * frequency);
}

TEST_F(SinusoidalNDTest, TwoDimensionalTableIsThePapersFormula) {
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  const torch::Tensor table = make(grid, 160)->table();
  ASSERT_EQ(table.sizes(), (std::vector<std::int64_t>{16, 160}));
  for (std::int64_t token : {0, 1, 5, 11, 14, 15}) {
    for (std::int64_t channel : {0, 1, 2, 3, 40, 79, 80, 81, 100, 159}) {
      const double expected = paper_entry(token / 4, token % 4, channel, 160);
      EXPECT_NEAR(table[token][channel].item<double>(), expected, 1e-6)
          << "token " << token << " channel " << channel;
    }
  }
}

TEST_F(SinusoidalNDTest, OneDimensionalTableIsTheTransformersFormula) {
  const torch::Tensor table = make(Layout::sequence(10), 8)->table();
  for (std::int64_t position = 0; position < 10; ++position) {
    for (std::int64_t i = 0; i < 4; ++i) {
      const double angle = position / std::pow(10000.0, 2.0 * i / 8.0);
      EXPECT_NEAR(table[position][2 * i].item<double>(), std::sin(angle), 1e-6);
      EXPECT_NEAR(table[position][2 * i + 1].item<double>(), std::cos(angle), 1e-6);
    }
  }
}

TEST_F(SinusoidalNDTest, IsFixedAndAdditive) {
  auto pe = make(Layout::sequence(6), 12);
  EXPECT_TRUE(pe->parameters().empty());
  EXPECT_EQ(pe->hooks(), PositionalEncoding::kAdditive);
  const torch::Tensor x = torch::randn({3, 6, 12});
  EXPECT_TRUE(torch::allclose(pe->embed(x), x + pe->table()));
}

TEST_F(SinusoidalNDTest, RefusesHiddenCoordinatesUnlessAskedTo) {
  const Layout grid = Layout::grid({4, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  try {
    make(grid, 16, /*use_hidden=*/false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use_hidden_coordinates = true"), std::string::npos)
        << e.what();
  }
}

// 16 channels over 3 axes: 3 chunks of 4 (two frequencies each), the last 4 channels zero; the
// 12 it uses are the table of width 12.
TEST_F(SinusoidalNDTest, AWidthThatDoesNotSplitOverTheAxesIsPaddedWithZeros) {
  const Layout cube = Layout::grid({2, 2, 2}, {"x", "y", "z"}, /*coordinates_visible=*/true);
  const torch::Tensor padded = make(cube, 16)->table();
  EXPECT_EQ(padded.size(1), 16);
  EXPECT_TRUE(torch::equal(padded.slice(1, 0, 12), make(cube, 12)->table()));
  EXPECT_TRUE(padded.slice(1, 12).eq(0).all().item<bool>());
  EXPECT_THROW(make(cube, 4), Error);  // fewer than a sine and a cosine per axis
}

}  // namespace
}  // namespace pelab
