// string: Cayley-STRING, RoPE-Mixed in a learned orthogonal basis P = (I - S)(I + S)^-1. Checked
// against independent mathematics: with S = 0 it is rope_mixed; P is orthogonal, so norms are
// kept; a rotated score is q^T P^T R(<f_i, p_u - p_t>) P k computed here in double precision from
// the parameters (P by an explicit inverse), so it depends on p_u - p_t alone; gradients of the
// positions, the frequencies and S against central differences in double precision; bad shapes
// refused naming the key.

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

class StringTest : public ::testing::Test {
 protected:
  PluginSpec spec(const std::string& positions, const std::string& frequencies, double basis_std) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "string");
    spec.params.set("positions", positions);
    spec.params.set("frequencies", frequencies);
    spec.params.set("base", 10.0);
    auto initializer = std::make_shared<PluginSpec>(
        registry_.default_spec(PluginKind::kInitializer, basis_std == 0.0 ? "zeros" : "normal"));
    if (basis_std != 0.0) initializer->params.set("std", basis_std);
    spec.params.set("basis_init", std::shared_ptr<const PluginSpec>(initializer));
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

TEST_F(StringTest, PositionsFrequenciesAndTheBasisAreParameters) {
  const auto pe = make(spec("learned", "mixed", 0.0), Layout::sequence(7, false), 16, 2);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kRotary));
  EXPECT_EQ(parameter(*pe, "positions").sizes(), (std::vector<std::int64_t>{7, 2}));
  EXPECT_EQ(parameter(*pe, "frequencies").sizes(), (std::vector<std::int64_t>{2, 4, 2}));
  EXPECT_EQ(parameter(*pe, "basis").sizes(), (std::vector<std::int64_t>{2, 28}));
  EXPECT_EQ(parameter(*pe, "basis").abs().max().item<double>(), 0.0);  // zeros: P = I
}

// S = 0: P = I, and the rotation is rope_mixed's with the same positions and frequencies.
TEST_F(StringTest, AZeroBasisIsRopeMixed) {
  PluginSpec mixed = registry_.default_spec(PluginKind::kPositionalEncoding, "rope_mixed");
  mixed.params.set("frequencies", std::string("axial"));
  mixed.params.set("base", 10.0);
  const auto reference = make(mixed, grid(), 32, 2);
  const auto string = make(spec("coordinates", "axial", 0.0), grid(), 32, 2);
  const torch::Tensor q = torch::randn({2, 2, 12, 16});
  const torch::Tensor k = torch::randn({2, 2, 12, 16});
  const auto [rq, rk] = reference->rotate(q, k);
  const auto [sq, sk] = string->rotate(q, k);
  EXPECT_TRUE(torch::allclose(sq, rq, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(sk, rk, 1e-5, 1e-5));
}

// (R_t P q) . (R_u P k) = (P q)^T R(<f, p_u - p_t>) (P k) pair by pair, with P = (I - S)(I + S)^-1.
TEST_F(StringTest, ScoresAreTheBasisTurnedContentAtThePositionDifference) {
  torch::manual_seed(2);
  const std::int64_t tokens = 5, head_dim = 8;
  const auto pe = make(spec("learned", "mixed", 0.3), Layout::sequence(tokens, false), 8, 1);
  const torch::Tensor q = torch::randn({1, 1, tokens, head_dim});
  const torch::Tensor k = torch::randn({1, 1, tokens, head_dim});
  const auto [rq, rk] = pe->rotate(q, k);
  EXPECT_TRUE(torch::allclose(rq.norm(2, -1), q.norm(2, -1), 1e-5, 1e-5));
  const torch::Tensor scores = torch::matmul(rq, rk.transpose(-2, -1))[0][0];

  const torch::Tensor p = parameter(*pe, "positions").detach().to(torch::kFloat64);
  const torch::Tensor f = parameter(*pe, "frequencies").detach().to(torch::kFloat64)[0];
  const torch::Tensor upper = parameter(*pe, "basis").detach().to(torch::kFloat64)[0];
  torch::Tensor s = torch::zeros({head_dim, head_dim}, torch::kFloat64);
  std::int64_t entry = 0;
  for (std::int64_t i = 0; i < head_dim; ++i) {
    for (std::int64_t j = i + 1; j < head_dim; ++j, ++entry) {
      s[i][j] = upper[entry];
      s[j][i] = -upper[entry];
    }
  }
  const torch::Tensor identity = torch::eye(head_dim, torch::kFloat64);
  const torch::Tensor basis = torch::matmul(identity - s, torch::inverse(identity + s));
  EXPECT_TRUE(torch::allclose(torch::matmul(basis.t(), basis), identity, 1e-9, 1e-9));
  const torch::Tensor pq = torch::matmul(q[0][0].to(torch::kFloat64), basis.t());
  const torch::Tensor pk = torch::matmul(k[0][0].to(torch::kFloat64), basis.t());
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (std::int64_t u = 0; u < tokens; ++u) {
      double expected = 0.0;
      for (std::int64_t i = 0; i < head_dim / 2; ++i) {
        const double d = torch::dot(f[i], p[u] - p[t]).item<double>();
        const double q0 = pq[t][2 * i].item<double>(), q1 = pq[t][2 * i + 1].item<double>();
        const double k0 = pk[u][2 * i].item<double>(), k1 = pk[u][2 * i + 1].item<double>();
        expected +=
            q0 * (std::cos(d) * k0 - std::sin(d) * k1) + q1 * (std::sin(d) * k0 + std::cos(d) * k1);
      }
      EXPECT_NEAR(scores[t][u].item<double>(), expected, 1e-4) << "t " << t << " u " << u;
    }
  }
}

TEST_F(StringTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(4);
  const auto pe = make(spec("learned", "mixed", 0.3), Layout::sequence(4, false), 16, 2);
  test::expect_rotary_gradients_match_finite_differences(*pe, {"positions", "frequencies", "basis"},
                                                         2, 4, 8);
}

TEST_F(StringTest, TrainsInAModel) {
  test::expect_trains_in_model(registry_, spec("learned", "mixed", 0.3), Layout::sequence(6, false),
                               16, 2);
}

TEST_F(StringTest, ShapesItCannotTurnAreRefusedNamingTheKeys) {
  const auto error_of = [&](const PluginSpec& s, const Layout& layout, std::int64_t d_model,
                            std::int64_t heads) {
    return test::refusal(registry_, s, layout, d_model, heads);
  };
  EXPECT_THAT(error_of(spec("index", "mixed", 0.0), Layout::sequence(4), 6, 2),
              HasSubstr("string: head_dim (3 = d_model 6 / heads 2) must be even"));
  EXPECT_THAT(error_of(spec("coordinates", "mixed", 0.0),
                       Layout::grid({4, 4}, {"row", "column"}, false), 16, 1),
              HasSubstr("use_hidden_coordinates"));
}

}  // namespace
}  // namespace pelab
