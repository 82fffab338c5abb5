// liere: rotations exp(sum_a p_a A_a) by learnable skew-symmetric generators in blocks. Checked
// against independent mathematics: the axial start is rotary_nd (with 2 x 2 blocks, in closed form,
// and with one whole-head block, through the matrix exponential); the rotation equals a Taylor
// series of the exponential computed here in double precision; rotations keep norms; scores are
// relative where the generators commute (2 x 2 blocks) and not otherwise; gradients of the
// positions and the generators against central differences in double precision; bad shapes
// refused naming the key.

#include <cmath>
#include <memory>
#include <string>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class LiereTest : public ::testing::Test {
 protected:
  PluginSpec spec(const std::string& positions, const std::string& generators,
                  std::int64_t block_size, double std = 0.5) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "liere");
    spec.params.set("positions", positions);
    spec.params.set("generators", generators);
    spec.params.set("block_size", block_size);
    auto initializer =
        std::make_shared<PluginSpec>(registry_.default_spec(PluginKind::kInitializer, "normal"));
    initializer->params.set("std", std);
    spec.params.set("generators_init", std::shared_ptr<const PluginSpec>(initializer));
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const PluginSpec& spec, const Layout& layout,
                                           std::int64_t d_model, std::int64_t heads) {
    return registry_.create_positional_encoding(spec, layout, ModelShape{d_model, heads, 1, 0});
  }
  static torch::Tensor parameter(PositionalEncoding& pe, const std::string& name) {
    return pe.named_parameters()[name];
  }
  static Layout grid() { return Layout::grid({3, 4}, {"row", "column"}, true); }

  Registry registry_{Registry::default_search_path()};
};

// exp(A) by scaling and squaring a 30-term Taylor series, in double: independent of
// torch::matrix_exp.
torch::Tensor taylor_exp(const torch::Tensor& a) {
  const int squarings = 6;
  const torch::Tensor scaled = a / std::pow(2.0, squarings);
  torch::Tensor term = torch::eye(a.size(-1), a.options()).expand_as(a).clone();
  torch::Tensor sum = term.clone();
  for (int n = 1; n <= 30; ++n) {
    term = torch::matmul(term, scaled) / n;
    sum = sum + term;
  }
  for (int i = 0; i < squarings; ++i)
    sum = torch::matmul(sum, sum);
  return sum;
}

TEST_F(LiereTest, GeneratorsAreUpperTrianglesPerHeadPositionDimensionAndBlock) {
  torch::manual_seed(1);
  const auto full = make(spec("coordinates", "liere", 0), grid(), 16, 2);  // one 8 x 8 block
  EXPECT_EQ(full->hooks(), static_cast<unsigned>(PositionalEncoding::kRotary));
  const torch::Tensor generators = parameter(*full, "generators");
  EXPECT_EQ(generators.sizes(), (std::vector<std::int64_t>{2, 2, 1, 28}));
  // LieRE's reference start: uniform on [0, 2 pi).
  EXPECT_GE(generators.min().item<double>(), 0.0);
  EXPECT_LT(generators.max().item<double>(), 2.0 * M_PI);
  EXPECT_NEAR(generators.mean().item<double>(), M_PI, 0.6);
  EXPECT_EQ(full->named_parameters().size(), 1u);  // the coordinates are a buffer
  const auto learned = make(spec("learned", "init", 4), Layout::sequence(6, false), 16, 2);
  EXPECT_EQ(parameter(*learned, "generators").sizes(), (std::vector<std::int64_t>{2, 2, 2, 6}));
  EXPECT_EQ(parameter(*learned, "positions").sizes(), (std::vector<std::int64_t>{6, 2}));
}

// The axial start holds rotary_nd's ladder: with 2 x 2 blocks (the closed form) and with one
// whole-head block (the matrix exponential), the rotation is rotary_nd's.
TEST_F(LiereTest, TheAxialStartIsRotaryNdForEveryBlockSize) {
  const auto reference =
      make(registry_.default_spec(PluginKind::kPositionalEncoding, "rotary_nd"), grid(), 32, 2);
  const torch::Tensor q = torch::randn({2, 2, 12, 16});
  const torch::Tensor k = torch::randn({2, 2, 12, 16});
  const auto [rq, rk] = reference->rotate(q, k);
  for (const std::int64_t block : {2, 4, 16}) {
    const auto liere = make(spec("coordinates", "axial", block), grid(), 32, 2);
    const auto [lq, lk] = liere->rotate(q, k);
    EXPECT_TRUE(torch::allclose(lq, rq, 1e-4, 1e-4)) << "block " << block;
    EXPECT_TRUE(torch::allclose(lk, rk, 1e-4, 1e-4)) << "block " << block;
  }
}

// R_t = exp(sum_a p_{t,a} (U_a - U_a^T)) block by block, against the Taylor series.
TEST_F(LiereTest, TheRotationIsTheExponentialOfThePositionWeightedGenerators) {
  torch::manual_seed(2);
  const std::int64_t tokens = 5, block = 4, head_dim = 8;
  const auto pe = make(spec("learned", "init", block), Layout::sequence(tokens, false), 8, 1);
  const torch::Tensor q = torch::randn({1, 1, tokens, head_dim});
  const auto [rq, rk] = pe->rotate(q, q);
  EXPECT_TRUE(torch::allclose(rq.norm(2, -1), q.norm(2, -1), 1e-5, 1e-5));
  const torch::Tensor p = parameter(*pe, "positions").detach().to(torch::kFloat64);
  const torch::Tensor u = parameter(*pe, "generators").detach().to(torch::kFloat64)[0];
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t b = 0; b < head_dim / block; ++b) {
      torch::Tensor a = torch::zeros({block, block}, torch::kFloat64);
      std::int64_t entry = 0;
      for (std::int64_t i = 0; i < block; ++i) {
        for (std::int64_t j = i + 1; j < block; ++j, ++entry) {
          const double value = (p[t][0] * u[0][b][entry] + p[t][1] * u[1][b][entry]).item<double>();
          a[i][j] = value;
          a[j][i] = -value;
        }
      }
      const torch::Tensor expected =
          torch::matmul(taylor_exp(a), q[0][0][t].narrow(0, b * block, block).to(torch::kFloat64));
      EXPECT_TRUE(torch::allclose(rq[0][0][t].narrow(0, b * block, block).to(torch::kFloat64),
                                  expected, 1e-5, 1e-5))
          << "token " << t << " block " << b;
    }
  }
}

// Scores depend on p_u - p_t alone when the generators commute (2 x 2 blocks), not in general: on
// the grid, (0,0)->(0,1) and (1,1)->(1,2) are the same step, and a whole-head block with random
// generators scores them differently (LieRE is not relative; docs/pe-catalogue.md says so).
TEST_F(LiereTest, ScoresAreRelativeOnlyWhereTheGeneratorsCommute) {
  torch::manual_seed(3);
  const torch::Tensor q = torch::randn({8}).expand({1, 1, 12, 8});
  const torch::Tensor k = torch::randn({8}).expand({1, 1, 12, 8});
  const auto scores = [&](PositionalEncoding& pe) {
    const auto [rq, rk] = pe.rotate(q, k);
    return torch::matmul(rq, rk.transpose(-2, -1))[0][0];
  };
  // grid({3, 4}): token r * 4 + c sits at (r, c).
  const auto pairs = make(spec("coordinates", "init", 2, 1.0), grid(), 8, 1);
  const torch::Tensor commuting = scores(*pairs);
  EXPECT_NEAR(commuting[0][1].item<double>(), commuting[5][6].item<double>(), 1e-4);
  EXPECT_NEAR(commuting[0][5].item<double>(), commuting[6][11].item<double>(), 1e-4);
  const auto full = make(spec("coordinates", "init", 0, 1.0), grid(), 8, 1);
  const torch::Tensor general = scores(*full);
  EXPECT_GT(std::abs(general[0][5].item<double>() - general[6][11].item<double>()), 1e-3);
}

TEST_F(LiereTest, GradientsMatchFiniteDifferencesThroughTheMatrixExponential) {
  for (const std::int64_t block : {2, 4}) {
    SCOPED_TRACE(block);
    torch::manual_seed(4);
    const auto pe = make(spec("learned", "init", block), Layout::sequence(4, false), 16, 2);
    test::expect_rotary_gradients_match_finite_differences(*pe, {"positions", "generators"}, 2, 4,
                                                           8);
  }
}

// Under bf16 autocast the generators and their exponential stay in the parameters' precision
// (in bf16 the exponential of LieRE's uniform [0, 2 pi) generators was NaN, and every run with
// train.precision = "bf16" failed at its first step): only the turn itself, a product, runs in
// bf16, so q and k come out as in fp32 to bf16's rounding.
TEST_F(LiereTest, UnderBf16AutocastTheRotationsStayInFullPrecision) {
  torch::manual_seed(4);
  PluginSpec liere = registry_.default_spec(PluginKind::kPositionalEncoding, "liere");
  liere.params.set("positions", std::string("learned"));
  liere.params.set("block_size", std::int64_t{8});
  const auto pe = make(liere, Layout::sequence(6, false), 32, 2);
  const torch::Tensor q = torch::randn({2, 2, 6, 16});
  const torch::Tensor k = torch::randn({2, 2, 6, 16});
  const auto [fq, fk] = pe->rotate(q, k);
  torch::Tensor aq, ak;
  {
    const test::Bf16AutocastScope autocast;
    std::tie(aq, ak) = pe->rotate(q, k);
  }
  ASSERT_TRUE(torch::isfinite(aq).all().item<bool>());
  ASSERT_TRUE(torch::isfinite(ak).all().item<bool>());
  EXPECT_TRUE(torch::allclose(aq.to(torch::kFloat), fq, 0.05, 0.05));
  EXPECT_TRUE(torch::allclose(ak.to(torch::kFloat), fk, 0.05, 0.05));
}

TEST_F(LiereTest, TrainsInAModel) {
  test::expect_trains_in_model(registry_, spec("learned", "init", 4), Layout::sequence(6, false),
                               16, 2);
}

TEST_F(LiereTest, ShapesItCannotTurnAreRefusedNamingTheKeys) {
  const auto error_of = [&](const PluginSpec& s, const Layout& layout, std::int64_t d_model,
                            std::int64_t heads) {
    return test::refusal(registry_, s, layout, d_model, heads);
  };
  EXPECT_THAT(error_of(spec("index", "liere", 0), Layout::sequence(4), 6, 2),
              HasSubstr("liere: head_dim (3 = d_model 6 / heads 2) must be even"));
  EXPECT_THAT(error_of(spec("index", "liere", 3), Layout::sequence(4), 16, 2),
              HasSubstr("liere: block_size (3) must be at least 2 and divide head_dim (8"));
  EXPECT_THAT(error_of(spec("index", "liere", 1), Layout::sequence(4), 16, 2),
              HasSubstr("block_size (1) must be at least 2"));
  PluginSpec four_dims = spec("learned", "axial", 4);
  four_dims.params.set("position_dims", std::int64_t{4});
  EXPECT_THAT(error_of(four_dims, Layout::sequence(4), 24, 2),  // head_dim 12: 6 pairs
              HasSubstr("pairs a multiple of the 4 position dimension(s)"));
  Layout without_coordinates;
  without_coordinates.tokens = 4;
  EXPECT_THAT(error_of(spec("coordinates", "liere", 0), without_coordinates, 16, 2),
              HasSubstr("liere: positions = \"coordinates\", but the task's layout has none"));
  EXPECT_THAT(error_of(spec("coordinates", "liere", 0),
                       Layout::grid({4, 4}, {"row", "column"}, false), 16, 1),
              HasSubstr("use_hidden_coordinates"));
  EXPECT_EQ(error_of(spec("learned", "init", 6), Layout::sequence(4), 24, 2), "accepted");
}

}  // namespace
}  // namespace pelab
