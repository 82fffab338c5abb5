// The fixed 1D sinusoidal table of the token index (Vaswani et al. 2017), loaded as a run loads it.

#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class Sinusoidal1DTest : public ::testing::Test {
 protected:
  PluginSpec spec(double base = 10000.0) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "sinusoidal_1d");
    spec.params.set("base", base);
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(std::int64_t tokens, std::int64_t d_model,
                                           double base = 10000.0) {
    return registry_.create_positional_encoding(spec(base), Layout::sequence(tokens),
                                                ModelShape{d_model, 1, 1, 0});
  }

  Registry registry_{Registry::default_search_path()};
};

TEST_F(Sinusoidal1DTest, DeclaresItsBase) {
  const ParamSchema& schema = registry_.schema(PluginKind::kPositionalEncoding, "sinusoidal_1d");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"base"}));
  EXPECT_EQ(std::get<double>(schema.find("base")->default_value), 10000.0);
}

TEST_F(Sinusoidal1DTest, EntriesAreVaswanisFormula) {
  const std::int64_t d = 12;
  const torch::Tensor table = make(20, d)->table();
  ASSERT_EQ(table.sizes(), (std::vector<std::int64_t>{20, d}));
  EXPECT_EQ(table.scalar_type(), torch::kFloat32);
  for (std::int64_t t : {0, 1, 2, 7, 19}) {
    for (std::int64_t i = 0; i < d / 2; ++i) {
      const double angle = t / std::pow(10000.0, 2.0 * i / d);
      EXPECT_NEAR(table[t][2 * i].item<double>(), std::sin(angle), 1e-6) << t << " " << i;
      EXPECT_NEAR(table[t][2 * i + 1].item<double>(), std::cos(angle), 1e-6) << t << " " << i;
    }
  }
}

TEST_F(Sinusoidal1DTest, WrittenOutValues) {
  // d = 4, base 10000: frequencies 1 and 1/100.
  const torch::Tensor table = make(3, 4)->table();
  const std::vector<std::vector<double>> expected = {
      {0.0, 1.0, 0.0, 1.0},
      {0.8414709848, 0.5403023059, 0.0099998333, 0.9999500004},
      {0.9092974268, -0.4161468365, 0.0199986667, 0.9998000067}};
  for (std::int64_t t = 0; t < 3; ++t) {
    for (std::int64_t c = 0; c < 4; ++c)
      EXPECT_NEAR(table[t][c].item<double>(), expected[t][c], 1e-6) << t << " " << c;
  }
  // base = 16, d = 4: the second pair turns at 1/4 per token.
  EXPECT_NEAR(make(3, 4, 16.0)->table()[2][2].item<double>(), std::sin(0.5), 1e-6);
}

TEST_F(Sinusoidal1DTest, IsFixedAndAdditive) {
  const auto pe = make(6, 8);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kAdditive));
  EXPECT_TRUE(pe->parameters().empty());
  EXPECT_EQ(pe->buffers().size(), 1u);
  const torch::Tensor x = torch::randn({3, 6, 8});
  EXPECT_TRUE(torch::allclose(pe->embed(x), x + pe->table()));
  // The Gram kernel depends on |i - j| only: every row of the table has norm sqrt(d / 2).
  const torch::Tensor kernel = pe->kernel();
  EXPECT_TRUE(torch::allclose(kernel.diagonal(), torch::full({6}, 4.0)));
  EXPECT_NEAR(kernel[0][2].item<double>(), kernel[3][5].item<double>(), 1e-5);
  EXPECT_NEAR(kernel[2][0].item<double>(), kernel[5][3].item<double>(), 1e-5);
}

TEST_F(Sinusoidal1DTest, IgnoresTheCoordinates) {
  // It reads the token index only, so hidden grid coordinates are no obstacle.
  const Layout grid = Layout::grid({3, 4}, {"row", "column"}, /*coordinates_visible=*/false);
  const auto pe = registry_.create_positional_encoding(spec(), grid, ModelShape{8, 1, 1, 0});
  EXPECT_TRUE(torch::equal(pe->table(), make(12, 8)->table()));
}

TEST_F(Sinusoidal1DTest, RefusesAnOddWidth) {
  try {
    make(4, 7);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("d_model (7) must be even"), std::string::npos)
        << e.what();
  }
}

TEST_F(Sinusoidal1DTest, TrainsInsideTheModel) {
  test::expect_trains_in_model(registry_, spec(), Layout::sequence(6), 8, 2);
}

}  // namespace
}  // namespace pelab
