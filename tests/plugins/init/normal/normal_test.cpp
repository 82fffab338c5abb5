// The Gaussian initializer: N(mean, std^2) from torch's default generator.

#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class NormalInit : public ::testing::Test {
 protected:
  NormalInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(double std, double mean) {
    PluginSpec spec;
    spec.kind = PluginKind::kInitializer;
    spec.name = "normal";
    spec.params.set("std", std);
    spec.params.set("mean", mean);
    return registry_.create_initializer(spec);
  }

  torch::Tensor filled(double std, double mean, std::vector<std::int64_t> shape = {1000, 100}) {
    torch::Tensor tensor = torch::empty(shape);
    make(std, mean)->fill(tensor, InitContext::for_tensor(tensor, "test"));
    return tensor;
  }

  Registry registry_;
};

TEST_F(NormalInit, DeclaresStdAndMean) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "normal");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"std", "mean"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("std")->default_value), 1.0);
  EXPECT_EQ(schema.find("std")->min, 0.0);  // a standard deviation cannot be negative
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("mean")->default_value), 0.0);
}

TEST_F(NormalInit, MeanAndStdWithinTolerance) {
  torch::manual_seed(1);
  // 100000 draws: the sample mean is within 0.002 and the std within 0.3% (1 sigma).
  const torch::Tensor t = filled(0.5, 3.0);
  EXPECT_NEAR(t.mean().item<double>(), 3.0, 0.01);
  EXPECT_NEAR(t.std().item<double>(), 0.5, 0.01);
  // Gaussian, not uniform: about 68% within one std.
  const double inside = (t - 3.0).abs().le(0.5).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(inside, 0.6827, 0.01);
}

TEST_F(NormalInit, ZeroStdIsConstant) {
  EXPECT_TRUE(torch::equal(filled(0.0, 1.5, {4, 4}), torch::full({4, 4}, 1.5)));
}

TEST_F(NormalInit, SameSeedSameValues) {
  torch::manual_seed(9);
  const torch::Tensor a = filled(1.0, 0.0, {8, 8});
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, filled(1.0, 0.0, {8, 8})));
  EXPECT_FALSE(torch::equal(a, filled(1.0, 0.0, {8, 8})));  // the generator moved on
}

TEST_F(NormalInit, FillsParametersWithoutRecordingAGraph) {
  torch::Tensor parameter = torch::zeros({3, 4}, torch::requires_grad());
  make(0.2, 0.0)->fill(parameter, InitContext::for_tensor(parameter, "weight"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_GT(parameter.abs().sum().item<double>(), 0.0);
  // Any shape, fans or not.
  torch::Tensor bias = torch::zeros({5});
  make(0.2, 0.0)->fill(bias, InitContext::for_tensor(bias, "bias"));
  EXPECT_GT(bias.abs().sum().item<double>(), 0.0);
}

TEST(InitContext, FansFollowTorch) {
  const InitContext matrix = InitContext::for_tensor(torch::empty({3, 4}), "w");
  EXPECT_EQ(matrix.fan_in, 4);
  EXPECT_EQ(matrix.fan_out, 3);
  EXPECT_EQ(matrix.what, "w");
  EXPECT_EQ(matrix.layout, nullptr);
  const InitContext conv = InitContext::for_tensor(torch::empty({8, 2, 3, 3}), "conv");
  EXPECT_EQ(conv.fan_in, 2 * 9);
  EXPECT_EQ(conv.fan_out, 8 * 9);
  const InitContext vector = InitContext::for_tensor(torch::empty({5}), "b");
  EXPECT_EQ(vector.fan_in, 0);
  EXPECT_EQ(vector.fan_out, 0);
}

}  // namespace
}  // namespace pelab
