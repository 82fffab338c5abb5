// RoPE on the token index: rotated scores depend on the offset only, norms are kept, partial
// rotation leaves the other channels alone.

#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class Rotary1DTest : public ::testing::Test {
 protected:
  PluginSpec spec(double fraction = 1.0, double base = 10000.0) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "rotary_1d");
    spec.params.set("fraction", fraction);
    spec.params.set("base", base);
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(std::int64_t tokens, std::int64_t d_model,
                                           std::int64_t heads, double fraction = 1.0,
                                           double base = 10000.0) {
    return registry_.create_positional_encoding(spec(fraction, base), Layout::sequence(tokens),
                                                ModelShape{d_model, heads, 1, 0});
  }

  Registry registry_{Registry::default_search_path()};
};

// RoFormer's rotation, written out in double precision: pair i of the first `rotated` channels
// turns by position * base^(-2i / rotated).
torch::Tensor reference_rotation(const torch::Tensor& x, std::int64_t position,
                                 std::int64_t rotated, double base) {
  torch::Tensor out = x.to(torch::kFloat64).clone();
  for (std::int64_t i = 0; i < rotated / 2; ++i) {
    const double angle = position * std::pow(base, -2.0 * i / rotated);
    const double a = x[2 * i].item<double>();
    const double b = x[2 * i + 1].item<double>();
    out[2 * i] = a * std::cos(angle) - b * std::sin(angle);
    out[2 * i + 1] = a * std::sin(angle) + b * std::cos(angle);
  }
  return out;
}

TEST_F(Rotary1DTest, DeclaresBaseAndFraction) {
  const ParamSchema& schema = registry_.schema(PluginKind::kPositionalEncoding, "rotary_1d");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"base", "fraction"}));
  EXPECT_EQ(std::get<double>(schema.find("base")->default_value), 10000.0);
  EXPECT_EQ(std::get<double>(schema.find("fraction")->default_value), 1.0);
}

TEST_F(Rotary1DTest, RotatesEachPairByPositionTimesItsFrequency) {
  const auto pe = make(7, 16, 2);  // head_dim 8
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kRotary));
  EXPECT_TRUE(pe->parameters().empty());
  torch::manual_seed(1);
  const torch::Tensor q = torch::randn({2, 2, 7, 8});
  const torch::Tensor k = torch::randn({2, 2, 7, 8});
  const auto [rq, rk] = pe->rotate(q, k);
  ASSERT_EQ(rq.sizes(), q.sizes());
  for (std::int64_t t : {0, 1, 4, 6}) {
    EXPECT_TRUE(torch::allclose(rq[1][0][t].to(torch::kFloat64),
                                reference_rotation(q[1][0][t], t, 8, 10000.0), 1e-5, 1e-5))
        << t;
    EXPECT_TRUE(torch::allclose(rk[0][1][t].to(torch::kFloat64),
                                reference_rotation(k[0][1][t], t, 8, 10000.0), 1e-5, 1e-5))
        << t;
  }
  // Written out: head_dim 2, theta_0 = 1: (1, 0) at token t becomes (cos t, sin t).
  const auto pe2 = make(4, 2, 1);
  const torch::Tensor e0 = torch::tensor({1.0f, 0.0f}).expand({1, 1, 4, 2});
  const torch::Tensor r = pe2->rotate(e0, e0).first[0][0];
  EXPECT_NEAR(r[3][0].item<double>(), -0.9899924966, 1e-6);
  EXPECT_NEAR(r[3][1].item<double>(), 0.1411200081, 1e-6);
  EXPECT_NEAR(r[0][0].item<double>(), 1.0, 1e-7);
}

TEST_F(Rotary1DTest, ScoreDependsOnlyOnTheOffset) {
  const std::int64_t tokens = 12;
  const auto pe = make(tokens, 8, 1, 1.0, 100.0);
  torch::manual_seed(2);
  // The same query and key content at every token: any change of score is positional.
  const torch::Tensor q = torch::randn({1, 1, 1, 8}).expand({1, 1, tokens, 8});
  const torch::Tensor k = torch::randn({1, 1, 1, 8}).expand({1, 1, tokens, 8});
  const auto [rq, rk] = pe->rotate(q, k);
  const torch::Tensor scores = torch::matmul(rq, rk.transpose(-2, -1))[0][0];
  for (std::int64_t i = 0; i < tokens; ++i) {
    for (std::int64_t j = 0; j < tokens; ++j) {
      for (std::int64_t s : {1, 3, 5}) {
        if (i + s >= tokens || j + s >= tokens) continue;
        EXPECT_NEAR(scores[i][j].item<double>(), scores[i + s][j + s].item<double>(), 1e-4)
            << i << " " << j << " " << s;
      }
    }
  }
  // ... and it does depend on the offset, in both directions.
  EXPECT_GT(std::abs(scores[0][1].item<double>() - scores[0][3].item<double>()), 1e-2);
  EXPECT_GT(std::abs(scores[2][1].item<double>() - scores[2][3].item<double>()), 1e-2);
  // The score is q^T R_{j - i} k: for j - i = 0 the rotation cancels.
  EXPECT_NEAR(scores[5][5].item<double>(), q[0][0][0].dot(k[0][0][0]).item<double>(), 1e-4);
}

TEST_F(Rotary1DTest, PreservesNorms) {
  const auto pe = make(9, 24, 2);
  torch::manual_seed(3);
  const torch::Tensor q = torch::randn({3, 2, 9, 12});
  const torch::Tensor k = torch::randn({3, 2, 9, 12});
  const auto [rq, rk] = pe->rotate(q, k);
  EXPECT_TRUE(torch::allclose(rq.norm(2, -1), q.norm(2, -1), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(rk.norm(2, -1), k.norm(2, -1), 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(rq, q));
}

TEST_F(Rotary1DTest, FractionRotatesOnlyTheFirstChannels) {
  torch::manual_seed(4);
  const torch::Tensor q = torch::randn({2, 1, 6, 8});
  // Half of head_dim 8: channels 0-3 turn (frequencies base^(-2i/4)), 4-7 pass unchanged.
  const auto [rq, rk] = make(6, 8, 1, 0.5)->rotate(q, q);
  EXPECT_TRUE(torch::equal(rq.narrow(-1, 4, 4), q.narrow(-1, 4, 4)));
  EXPECT_FALSE(torch::allclose(rq.narrow(-1, 0, 4), q.narrow(-1, 0, 4)));
  EXPECT_TRUE(torch::allclose(rq[1][0][5].to(torch::kFloat64),
                              reference_rotation(q[1][0][5], 5, 4, 10000.0), 1e-5, 1e-5));
  // 0.3 x 10 = 3 channels, rounded down to one pair.
  const torch::Tensor p = torch::randn({1, 1, 6, 10});
  const torch::Tensor rp = make(6, 10, 1, 0.3)->rotate(p, p).first;
  EXPECT_TRUE(torch::equal(rp.narrow(-1, 2, 8), p.narrow(-1, 2, 8)));
  EXPECT_FALSE(torch::allclose(rp.narrow(-1, 0, 2), p.narrow(-1, 0, 2)));
}

TEST_F(Rotary1DTest, KernelIsTheAllOnesScoreOverHeadDim) {
  const torch::Tensor kernel = make(5, 8, 2)->kernel();  // head_dim 4: theta = 1, 1/100
  ASSERT_EQ(kernel.sizes(), (std::vector<std::int64_t>{5, 5}));
  EXPECT_TRUE(torch::allclose(kernel.diagonal(), torch::ones({5})));
  // K[i, j] = (2 cos(j - i) + 2 cos((j - i) / 100)) / 4.
  EXPECT_NEAR(kernel[1][3].item<double>(), (2 * std::cos(2.0) + 2 * std::cos(0.02)) / 4, 1e-5);
  EXPECT_NEAR(kernel[4][1].item<double>(), (2 * std::cos(3.0) + 2 * std::cos(0.03)) / 4, 1e-5);
  // Half rotated: the two untouched channels add a constant 2 / 4.
  EXPECT_NEAR(make(5, 4, 1, 0.5)->kernel()[0][2].item<double>(), (2 * std::cos(2.0) + 2) / 4, 1e-5);
}

TEST_F(Rotary1DTest, RefusesAFractionBelowOnePair) {
  try {
    make(4, 16, 2, 0.2);  // 0.2 x 8 = 1.6 channels
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than one pair"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make(4, 10, 4), Error);  // 4 heads do not divide 10
}

TEST_F(Rotary1DTest, TrainsInsideTheModel) {
  test::expect_trains_in_model(registry_, spec(), Layout::sequence(6), 8, 2);
}

}  // namespace
}  // namespace pelab
