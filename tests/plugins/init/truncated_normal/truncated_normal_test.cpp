// The truncated-normal initializer: N(mean, std^2) conditioned on the absolute bounds [a, b].

#include <cmath>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

double phi(double x) {
  return std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
}
double cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

// Moments of N(mean, std^2) truncated to [a, b] (the standard formulas).
struct Truncated {
  double mean, std, a, b;
  double alpha() const { return (a - mean) / std; }
  double beta() const { return (b - mean) / std; }
  double mass() const { return cdf(beta()) - cdf(alpha()); }
  double expected_mean() const { return mean + std * (phi(alpha()) - phi(beta())) / mass(); }
  double expected_std() const {
    const double shift = (phi(alpha()) - phi(beta())) / mass();
    const double variance =
        1.0 + (alpha() * phi(alpha()) - beta() * phi(beta())) / mass() - shift * shift;
    return std * std::sqrt(variance);
  }
  // P(X <= x) after truncation.
  double probability_below(double x) const {
    return (cdf((x - mean) / std) - cdf(alpha())) / mass();
  }
};

class TruncatedNormalInit : public ::testing::Test {
 protected:
  TruncatedNormalInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(const Truncated& p) {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "truncated_normal");
    spec.params.set("mean", p.mean);
    spec.params.set("std", p.std);
    spec.params.set("a", p.a);
    spec.params.set("b", p.b);
    return registry_.create_initializer(spec);
  }

  torch::Tensor filled(const Truncated& p, std::vector<std::int64_t> shape = {1000, 1000}) {
    torch::Tensor tensor = torch::empty(shape);
    make(p)->fill(tensor, InitContext::for_tensor(tensor, "test"));
    return tensor;
  }

  std::string refusal(const Truncated& p) {
    try {
      make(p);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted mean " << p.mean << " std " << p.std << " [" << p.a << ", " << p.b
                  << "]";
    return "";
  }

  Registry registry_;
};

TEST_F(TruncatedNormalInit, DeclaresTorchsDefaults) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "truncated_normal");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"mean", "std", "a", "b"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("mean")->default_value), 0.0);
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("std")->default_value), 1.0);
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("a")->default_value), -2.0);
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("b")->default_value), 2.0);
  EXPECT_EQ(schema.find("std")->min, 0.0);
}

// An asymmetric truncation (alpha = -1, beta = 2) so that a wrong mean, std or bound shows.
TEST_F(TruncatedNormalInit, StaysInBoundsWithTheTruncatedMoments) {
  torch::manual_seed(3);
  const Truncated p{0.5, 2.0, -1.5, 4.5};  // bounds exactly representable in float32
  const torch::Tensor t = filled(p).to(torch::kFloat64);
  const double n = static_cast<double>(t.numel());
  EXPECT_GE(t.min().item<double>(), p.a);
  EXPECT_LE(t.max().item<double>(), p.b);
  // Both bounds are reached (the density there is positive): 1e6 draws come within 0.01.
  EXPECT_LT(t.min().item<double>(), p.a + 0.01);
  EXPECT_GT(t.max().item<double>(), p.b - 0.01);
  // Five standard errors (sigma / sqrt(n) bounds both the mean's and the std's here).
  const double sigma = p.expected_std();
  const double tolerance = 5.0 * sigma / std::sqrt(n);
  EXPECT_NEAR(t.mean().item<double>(), p.expected_mean(), tolerance);
  EXPECT_NEAR(t.std().item<double>(), sigma, tolerance);
  // The shape: the fraction below the untruncated mean, within 5 binomial standard errors.
  const double below = p.probability_below(p.mean);
  EXPECT_NEAR(t.le(p.mean).to(torch::kFloat64).mean().item<double>(), below,
              5.0 * std::sqrt(below * (1 - below) / n));
}

TEST_F(TruncatedNormalInit, DefaultIsTwoStdOfAStandardNormal) {
  torch::manual_seed(4);
  torch::Tensor t = torch::empty({1000, 1000});
  registry_
      .create_initializer(registry_.default_spec(PluginKind::kInitializer, "truncated_normal"))
      ->fill(t, InitContext::for_tensor(t, "test"));
  const Truncated p{0.0, 1.0, -2.0, 2.0};
  EXPECT_GE(t.min().item<double>(), -2.0);
  EXPECT_LE(t.max().item<double>(), 2.0);
  EXPECT_NEAR(t.mean().item<double>(), 0.0, 5.0 / 1000);
  EXPECT_NEAR(t.std().item<double>(), p.expected_std(), 5.0 * p.expected_std() / 1000);
}

TEST_F(TruncatedNormalInit, BoundsAreAbsoluteNotInUnitsOfStd) {
  torch::manual_seed(5);
  // std 0.02 with the default bounds +-2 truncates nothing that matters: +-100 std.
  const torch::Tensor t = filled({0.0, 0.02, -2.0, 2.0}, {1000, 100});
  EXPECT_NEAR(t.std().item<double>(), 0.02, 5 * 0.02 / std::sqrt(1e5));
  EXPECT_GT(t.abs().max().item<double>(), 0.04);  // beyond 2 std: untruncated
}

TEST_F(TruncatedNormalInit, ZeroStdIsTheMean) {
  EXPECT_TRUE(torch::equal(filled({0.5, 0.0, -1.0, 1.0}, {3, 3}), torch::full({3, 3}, 0.5)));
}

TEST_F(TruncatedNormalInit, RefusesBoundsItCannotSample) {
  EXPECT_THAT(refusal({0.0, 1.0, 1.0, -1.0}), HasSubstr("a < b"));
  EXPECT_THAT(refusal({0.0, 1.0, 1.0, 1.0}), HasSubstr("a < b"));
  EXPECT_THAT(refusal({2.0, 0.0, -1.0, 1.0}), HasSubstr("outside [a, b]"));
  // [1, 2] is 50 to 100 std above the mean: the timm mistake of bounds in units of std.
  const std::string far = refusal({0.0, 0.02, 1.0, 2.0});
  EXPECT_THAT(far, HasSubstr("more than 5 std from the mean"));
  EXPECT_THAT(far, HasSubstr("absolute values, not multiples of std"));
  EXPECT_THAT(far, HasSubstr("a = -0.04, b = 0.04"));
  // 4 std away is still fine.
  torch::manual_seed(6);
  const torch::Tensor tail = filled({0.0, 1.0, 4.0, 5.0}, {100, 100});
  EXPECT_GE(tail.min().item<double>(), 4.0);
  EXPECT_LE(tail.max().item<double>(), 5.0);
}

TEST_F(TruncatedNormalInit, SameSeedSameTensorOtherSeedOther) {
  const Truncated p{0.0, 1.0, -2.0, 2.0};
  torch::manual_seed(9);
  const torch::Tensor a = filled(p, {16, 16});
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, filled(p, {16, 16})));
  torch::manual_seed(10);
  EXPECT_FALSE(torch::equal(a, filled(p, {16, 16})));
}

TEST_F(TruncatedNormalInit, AnyShapeAndDtypeWithoutAGraph) {
  torch::Tensor parameter = torch::zeros({3, 4}, torch::requires_grad());
  make({0.0, 1.0, -2.0, 2.0})->fill(parameter, InitContext::for_tensor(parameter, "w"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_GT(parameter.abs().sum().item<double>(), 0.0);
  const torch::Tensor vector = filled({0.0, 1.0, -0.5, 0.5}, {1000});
  EXPECT_LE(vector.abs().max().item<double>(), 0.5);
  torch::Tensor doubles = torch::empty({10, 10}, torch::kFloat64);
  make({0.0, 1.0, -0.1, 0.1})->fill(doubles, InitContext::for_tensor(doubles, "d"));
  EXPECT_LE(doubles.abs().max().item<double>(), 0.1);
}

}  // namespace
}  // namespace pelab
