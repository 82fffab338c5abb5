// rope_mixed: learnable per-head frequency vectors over coordinates, the index or learned
// positions. Checked against closed forms and against rotary_nd: axial frequencies over the
// coordinates are rotary_nd; every rotated score is q . R(<f_i, p_u - p_t>) k pair by pair, so it
// depends on p_u - p_t only; Heo et al.'s mixed start per head; gradients of the positions and the
// frequencies against central differences in double precision; bad shapes refused.

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

class RopeMixedTest : public ::testing::Test {
 protected:
  PluginSpec spec(const std::string& positions, const std::string& frequencies = "mixed",
                  double base = 100.0, std::int64_t position_dims = 2) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "rope_mixed");
    spec.params.set("positions", positions);
    spec.params.set("frequencies", frequencies);
    spec.params.set("base", base);
    spec.params.set("position_dims", position_dims);
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

TEST_F(RopeMixedTest, LearnedPositionsAndFrequenciesAreParameters) {
  torch::manual_seed(1);
  const auto pe = make(spec("learned", "mixed", 100.0, 3), Layout::sequence(10, false), 48, 2);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kRotary));
  EXPECT_EQ(parameter(*pe, "positions").sizes(), (std::vector<std::int64_t>{10, 3}));
  EXPECT_EQ(parameter(*pe, "frequencies").sizes(), (std::vector<std::int64_t>{2, 12, 3}));
  const auto on_grid = make(spec("coordinates"), grid(), 32, 4);
  EXPECT_EQ(on_grid->named_parameters().size(), 1u);  // the coordinates are a buffer
  EXPECT_EQ(parameter(*on_grid, "frequencies").sizes(), (std::vector<std::int64_t>{4, 4, 2}));
}

// Axial frequencies over the coordinates are rotary_nd's axial RoPE (same pairs, same ladder).
TEST_F(RopeMixedTest, AxialFrequenciesOverTheCoordinatesAreRotaryNd) {
  PluginSpec axial = registry_.default_spec(PluginKind::kPositionalEncoding, "rotary_nd");
  const auto reference = make(axial, grid(), 32, 2);
  const auto mixed = make(spec("coordinates", "axial", 10000.0), grid(), 32, 2);
  const torch::Tensor q = torch::randn({2, 2, 12, 16});
  const torch::Tensor k = torch::randn({2, 2, 12, 16});
  const auto [rq, rk] = reference->rotate(q, k);
  const auto [mq, mk] = mixed->rotate(q, k);
  EXPECT_TRUE(torch::allclose(mq, rq, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(mk, rk, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(mixed->kernel(), reference->kernel(), 1e-5, 1e-5));
}

// (R_t q) . (R_u k) = sum_i q_i^T R(<f_hi, p_u - p_t>) k_i: relative in the positions.
TEST_F(RopeMixedTest, ScoresTurnByTheFrequenciesTimesThePositionDifference) {
  torch::manual_seed(2);
  const std::int64_t tokens = 5, head_dim = 8;
  const auto pe =
      make(spec("learned", "mixed", 10.0, 2), Layout::sequence(tokens, false), 2 * head_dim, 2);
  const torch::Tensor q = torch::randn({1, 2, tokens, head_dim});
  const torch::Tensor k = torch::randn({1, 2, tokens, head_dim});
  const auto [rq, rk] = pe->rotate(q, k);
  EXPECT_TRUE(torch::allclose(rq.norm(2, -1), q.norm(2, -1), 1e-5, 1e-5));
  const torch::Tensor scores = torch::matmul(rq, rk.transpose(-2, -1));
  const torch::Tensor p = parameter(*pe, "positions").detach().to(torch::kFloat64);
  const torch::Tensor f = parameter(*pe, "frequencies").detach().to(torch::kFloat64);
  const auto qd = q.to(torch::kFloat64), kd = k.to(torch::kFloat64);
  for (std::int64_t h = 0; h < 2; ++h) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t u = 0; u < tokens; ++u) {
        double expected = 0.0;
        for (std::int64_t i = 0; i < head_dim / 2; ++i) {
          const double d = torch::dot(f[h][i], p[u] - p[t]).item<double>();
          const double q0 = qd[0][h][t][2 * i].item<double>();
          const double q1 = qd[0][h][t][2 * i + 1].item<double>();
          const double k0 = kd[0][h][u][2 * i].item<double>();
          const double k1 = kd[0][h][u][2 * i + 1].item<double>();
          expected += q0 * (std::cos(d) * k0 - std::sin(d) * k1) +
                      q1 * (std::sin(d) * k0 + std::cos(d) * k1);
        }
        EXPECT_NEAR(scores[0][h][t][u].item<double>(), expected, 1e-4)
            << "h " << h << " t " << t << " u " << u;
      }
    }
  }
}

// Heo et al.'s start for k = 2 (timm's init_random_2d_freqs): per head an angle theta; the first
// half of the pairs along (cos theta, sin theta), the second along theta + pi/2, magnitudes
// base^(-i/g) over each half's g pairs.
TEST_F(RopeMixedTest, TheMixedStartIsARandomRotationOfTheLadderPerHead) {
  torch::manual_seed(3);
  const auto pe = make(spec("coordinates", "mixed", 10.0), grid(), 64, 4);  // 8 pairs, g = 4
  const torch::Tensor f = parameter(*pe, "frequencies").detach().to(torch::kFloat64);
  for (std::int64_t h = 0; h < 4; ++h) {
    const torch::Tensor first = f[h][0] / f[h][0].norm();
    const torch::Tensor second = f[h][4] / f[h][4].norm();
    EXPECT_NEAR(torch::dot(first, second).item<double>(), 0.0, 1e-6) << h;
    for (std::int64_t i = 0; i < 4; ++i) {
      const double magnitude = std::pow(10.0, -i / 4.0);
      EXPECT_NEAR(f[h][i].norm().item<double>(), magnitude, 1e-6);
      EXPECT_NEAR(f[h][4 + i].norm().item<double>(), magnitude, 1e-6);
      EXPECT_TRUE(torch::allclose(f[h][i] / magnitude, first, 1e-5, 1e-6));
      EXPECT_TRUE(torch::allclose(f[h][4 + i] / magnitude, second, 1e-5, 1e-6));
    }
  }
  // Random per head: the heads' axes differ.
  EXPECT_FALSE(torch::allclose(f[0][0], f[1][0], 1e-3, 1e-3));
}

// Both parameters' gradients against central differences, in double precision.
// Under bf16 autocast the angles stay in the parameters' precision: a bf16 angle of about 3 would
// be off by up to 0.008, and the turned q and k with it. The same q and k turn exactly as in fp32.
TEST_F(RopeMixedTest, UnderBf16AutocastTheAnglesStayInFullPrecision) {
  torch::manual_seed(3);
  const auto pe = make(spec("coordinates"), grid(), 32, 2);
  const torch::Tensor q = torch::randn({2, 2, 12, 16});
  const torch::Tensor k = torch::randn({2, 2, 12, 16});
  const auto [fq, fk] = pe->rotate(q, k);
  torch::Tensor aq, ak;
  {
    const test::Bf16AutocastScope autocast;
    std::tie(aq, ak) = pe->rotate(q, k);
  }
  EXPECT_TRUE(torch::equal(aq, fq));
  EXPECT_TRUE(torch::equal(ak, fk));
}

TEST_F(RopeMixedTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(4);
  const auto pe =
      make(spec("learned", "mixed", 10.0, 2), Layout::sequence(4, false), 16, 2);  // 4 pairs
  test::expect_rotary_gradients_match_finite_differences(*pe, {"positions", "frequencies"}, 2, 4,
                                                         8);
}

TEST_F(RopeMixedTest, ShapesItCannotTurnAreRefusedNamingTheKeys) {
  const auto error_of = [&](const PluginSpec& s, const Layout& layout, std::int64_t d_model,
                            std::int64_t heads) {
    return test::refusal(registry_, s, layout, d_model, heads);
  };
  EXPECT_THAT(error_of(spec("index"), Layout::sequence(4), 6, 2),
              HasSubstr("head_dim (3 = d_model 6 / heads 2) must be even"));
  EXPECT_THAT(error_of(spec("learned", "mixed", 100.0, 3), Layout::sequence(4), 16, 2),
              HasSubstr("its 4 pairs a multiple of the 3 position dimension(s)"));
  // The Latin Square's grid is ground truth only.
  EXPECT_THAT(error_of(spec("coordinates"), Layout::grid({4, 4}, {"row", "column"}, false), 16, 1),
              HasSubstr("use_hidden_coordinates"));
  EXPECT_EQ(error_of(spec("learned", "init", 100.0, 3), Layout::sequence(4), 16, 2), "accepted");
}

}  // namespace
}  // namespace pelab
