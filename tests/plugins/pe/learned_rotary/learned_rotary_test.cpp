// learned_rotary: a learned angle table turns the channel pairs of queries and keys. Checked
// against closed forms: rotations keep norms, a rotated score is q . R(Theta_u - Theta_t) k pair by
// pair, zero angles are the identity, the kernel's formula, and the gradient of the angles against
// central differences in double precision.

#include <cmath>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class LearnedRotaryTest : public ::testing::Test {
 protected:
  PluginSpec spec(const std::string& init = "normal", double std = 1.0, bool per_head = false) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "learned_rotary");
    auto initializer =
        std::make_shared<PluginSpec>(registry_.default_spec(PluginKind::kInitializer, init));
    if (init == "normal") initializer->params.set("std", std);
    spec.params.set("init", std::shared_ptr<const PluginSpec>(initializer));
    spec.params.set("per_head", per_head);
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const PluginSpec& spec, std::int64_t tokens,
                                           std::int64_t d_model, std::int64_t heads) {
    return registry_.create_positional_encoding(spec, Layout::sequence(tokens, false),
                                                ModelShape{d_model, heads, 1, 0});
  }
  static torch::Tensor parameter(PositionalEncoding& pe) { return pe.named_parameters()["angles"]; }
  // The angles as [tables, N, pairs]: the parameter is [N, tables, pairs], tokens first, so that
  // the layout probes read it as a position table.
  static torch::Tensor angles(PositionalEncoding& pe) { return parameter(pe).permute({1, 0, 2}); }

  Registry registry_{Registry::default_search_path()};
};

TEST_F(LearnedRotaryTest, OneAngleTableSharedOrPerHeadDrawnByItsInitializer) {
  torch::manual_seed(1);
  const auto shared = make(spec("normal", 0.2), 30, 32, 2);  // head_dim 16: 8 pairs
  EXPECT_EQ(shared->hooks(), static_cast<unsigned>(PositionalEncoding::kRotary));
  ASSERT_EQ(shared->named_parameters().size(), 1u);
  EXPECT_EQ(parameter(*shared).sizes(), (std::vector<std::int64_t>{30, 1, 8}));
  EXPECT_NEAR(angles(*shared).std().item<double>(), 0.2, 0.03);
  const auto per_head = make(spec("normal", 2.0, true), 30, 32, 2);
  EXPECT_EQ(parameter(*per_head).sizes(), (std::vector<std::int64_t>{30, 2, 8}));
  EXPECT_NEAR(angles(*per_head).std().item<double>(), 2.0, 0.2);
  EXPECT_FALSE(shared->table().defined());
}

// (R_t q) . (R_u k) = sum_i q_i^T R(Theta[u, i] - Theta[t, i]) k_i over the pairs i, with
// R(d) = [[cos d, -sin d], [sin d, cos d]]; and every rotation keeps a vector's norm.
TEST_F(LearnedRotaryTest, ScoresAreContentTurnedByTheAngleDifferences) {
  torch::manual_seed(2);
  const std::int64_t tokens = 5, head_dim = 8;
  const auto pe = make(spec("normal", 1.5, true), tokens, 2 * head_dim, 2);
  const torch::Tensor q = torch::randn({3, 2, tokens, head_dim});
  const torch::Tensor k = torch::randn({3, 2, tokens, head_dim});
  const auto [rq, rk] = pe->rotate(q, k);
  EXPECT_TRUE(torch::allclose(rq.norm(2, -1), q.norm(2, -1), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(rk.norm(2, -1), k.norm(2, -1), 1e-5, 1e-5));
  const torch::Tensor scores = torch::matmul(rq, rk.transpose(-2, -1));
  const torch::Tensor theta = angles(*pe).detach().to(torch::kFloat64);
  const auto qd = q.to(torch::kFloat64), kd = k.to(torch::kFloat64);
  for (std::int64_t b : {0, 2}) {
    for (std::int64_t h : {0, 1}) {
      for (std::int64_t t = 0; t < tokens; ++t) {
        for (std::int64_t u = 0; u < tokens; ++u) {
          double expected = 0.0;
          for (std::int64_t i = 0; i < head_dim / 2; ++i) {
            const double d = (theta[h][u][i] - theta[h][t][i]).item<double>();
            const double q0 = qd[b][h][t][2 * i].item<double>();
            const double q1 = qd[b][h][t][2 * i + 1].item<double>();
            const double k0 = kd[b][h][u][2 * i].item<double>();
            const double k1 = kd[b][h][u][2 * i + 1].item<double>();
            expected += q0 * (std::cos(d) * k0 - std::sin(d) * k1) +
                        q1 * (std::sin(d) * k0 + std::cos(d) * k1);
          }
          EXPECT_NEAR(scores[b][h][t][u].item<double>(), expected, 1e-4)
              << "b " << b << " h " << h << " t " << t << " u " << u;
        }
      }
    }
  }
}

TEST_F(LearnedRotaryTest, ZeroAnglesAreNoPositionalEncoding) {
  const auto pe = make(spec("zeros"), 6, 16, 2);
  const torch::Tensor q = torch::randn({2, 2, 6, 8});
  const torch::Tensor k = torch::randn({2, 2, 6, 8});
  const auto [rq, rk] = pe->rotate(q, k);
  EXPECT_TRUE(torch::equal(rq, q));
  EXPECT_TRUE(torch::equal(rk, k));
  EXPECT_TRUE(torch::allclose(pe->kernel(), torch::ones({6, 6})));
}

// K[t, u] = (2 / head_dim) sum_i cos(Theta[u, i] - Theta[t, i]), averaged over the heads' tables.
TEST_F(LearnedRotaryTest, TheKernelIsTheMeanCosineOfTheAngleDifferences) {
  torch::manual_seed(3);
  const auto pe = make(spec("normal", 1.0, true), 7, 12, 2);  // head_dim 6: 3 pairs
  const torch::Tensor theta = angles(*pe).detach().to(torch::kFloat64);
  const torch::Tensor difference = theta.unsqueeze(1) - theta.unsqueeze(2);  // [h, t, u, i]
  const torch::Tensor expected = difference.cos().mean(-1).mean(0);
  const torch::Tensor kernel = pe->kernel();
  EXPECT_EQ(kernel.sizes(), (std::vector<std::int64_t>{7, 7}));
  EXPECT_TRUE(torch::allclose(kernel.to(torch::kFloat64), expected, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(kernel.diagonal(), torch::ones({7}), 1e-6, 1e-6));
}

// The angles' gradient against central differences, in double precision.
TEST_F(LearnedRotaryTest, TheAnglesGradientMatchesFiniteDifferences) {
  torch::manual_seed(4);
  const auto pe = make(spec("normal", 1.0), 4, 8, 1);
  test::expect_rotary_gradients_match_finite_differences(*pe, {"angles"}, 1, 4, 8, /*stride=*/1);
}

TEST_F(LearnedRotaryTest, AnOddHeadDimIsRefusedNamingTheKeys) {
  try {
    make(spec(), 4, 6, 2);  // head_dim 3
    FAIL() << "an odd head_dim was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("learned_rotary"));
    EXPECT_THAT(e.what(), HasSubstr("head_dim (3 = d_model 6 / heads 2) must be even"));
    EXPECT_THAT(e.what(), HasSubstr("model.d_model or model.heads"));
  }
}

}  // namespace
}  // namespace pelab
