// The uniform initializer: U(a, b) from torch's default generator.

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

class UniformInit : public ::testing::Test {
 protected:
  UniformInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(double a, double b) {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "uniform");
    spec.params.set("a", a);
    spec.params.set("b", b);
    return registry_.create_initializer(spec);
  }

  torch::Tensor filled(double a, double b, std::vector<std::int64_t> shape = {1000, 1000}) {
    torch::Tensor tensor = torch::empty(shape);
    make(a, b)->fill(tensor, InitContext::for_tensor(tensor, "test"));
    return tensor;
  }

  Registry registry_;
};

TEST_F(UniformInit, DeclaresAAndB) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "uniform");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("a")->default_value), 0.0);
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("b")->default_value), 1.0);
}

TEST_F(UniformInit, BoundsMeanStdAndFlatness) {
  torch::manual_seed(1);
  const double a = -0.5, b = 1.5;
  const torch::Tensor t = filled(a, b).to(torch::kFloat64);
  const double n = static_cast<double>(t.numel());
  const double sigma = (b - a) / std::sqrt(12.0);
  // Five standard errors: the sample mean's is sigma / sqrt(n), the sample std's
  // sigma sqrt(0.8 / (4 n)) < sigma / sqrt(n) for a uniform (kurtosis 1.8).
  const double tolerance = 5.0 * sigma / std::sqrt(n);
  EXPECT_NEAR(t.mean().item<double>(), (a + b) / 2, tolerance);
  EXPECT_NEAR(t.std().item<double>(), sigma, tolerance);
  EXPECT_GE(t.min().item<double>(), a);
  EXPECT_LE(t.max().item<double>(), b);
  // The whole interval is used: 1e6 draws come within 1e-4 of both ends.
  EXPECT_LT(t.min().item<double>(), a + 1e-4);
  EXPECT_GT(t.max().item<double>(), b - 1e-4);
  // Flat: each tenth of the interval holds 10% of the draws, within 5 binomial standard errors.
  const torch::Tensor bins = ((t - a) / (b - a) * 10).floor().clamp(0, 9).to(torch::kLong);
  const torch::Tensor counts = torch::bincount(bins.flatten(), {}, 10).to(torch::kFloat64) / n;
  const double bin_tolerance = 5.0 * std::sqrt(0.1 * 0.9 / n);
  for (std::int64_t k = 0; k < 10; ++k)
    EXPECT_NEAR(counts[k].item<double>(), 0.1, bin_tolerance) << "bin " << k;
}

TEST_F(UniformInit, DefaultIsTheUnitInterval) {
  torch::manual_seed(2);
  torch::Tensor t = torch::empty({1000, 1000});
  registry_.create_initializer(registry_.default_spec(PluginKind::kInitializer, "uniform"))
      ->fill(t, InitContext::for_tensor(t, "test"));
  EXPECT_GE(t.min().item<double>(), 0.0);
  EXPECT_LE(t.max().item<double>(), 1.0);
  EXPECT_NEAR(t.mean().item<double>(), 0.5, 5.0 / std::sqrt(12.0) / 1000);
}

TEST_F(UniformInit, EmptyIntervalIsRefused) {
  try {
    make(1.0, -1.0);
    FAIL() << "a > b was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a = 1 is greater than b = -1"));
    EXPECT_THAT(e.what(), HasSubstr("swap them"));
  }
  // a == b is a constant.
  EXPECT_TRUE(torch::equal(filled(0.25, 0.25, {3, 3}), torch::full({3, 3}, 0.25)));
}

TEST_F(UniformInit, AnyShape) {
  EXPECT_GT(filled(-1, 1, {7}).abs().sum().item<double>(), 0.0);
  EXPECT_GT(filled(-1, 1, {2, 3, 4}).abs().sum().item<double>(), 0.0);
}

TEST_F(UniformInit, SameSeedSameTensorOtherSeedOther) {
  torch::manual_seed(9);
  const torch::Tensor a = filled(0, 1, {16, 16});
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, filled(0, 1, {16, 16})));
  torch::manual_seed(10);
  EXPECT_FALSE(torch::equal(a, filled(0, 1, {16, 16})));
}

TEST_F(UniformInit, FillsAParameterWithoutRecordingAGraph) {
  torch::Tensor parameter = torch::zeros({3, 4}, torch::requires_grad());
  make(1, 2)->fill(parameter, InitContext::for_tensor(parameter, "weight"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_GE(parameter.min().item<double>(), 1.0);
}

}  // namespace
}  // namespace pelab
