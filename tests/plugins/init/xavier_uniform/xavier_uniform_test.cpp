// The Glorot/Xavier uniform initializer: std = gain sqrt(2 / (fan_in + fan_out)), torch's fans,
// the same draws as torch::nn::init::xavier_uniform_, and no tensor without fans.

#include <cmath>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/error.h"
#include "pelab/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class XavierUniformInit : public ::testing::Test {
 protected:
  XavierUniformInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(double gain) {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "xavier_uniform");
    spec.params.set("gain", gain);
    return registry_.create_initializer(spec);
  }

  torch::Tensor filled(double gain, std::vector<std::int64_t> shape) {
    torch::Tensor tensor = torch::empty(shape);
    make(gain)->fill(tensor, InitContext::for_tensor(tensor, "test"));
    return tensor;
  }

  Registry registry_;
};

TEST_F(XavierUniformInit, DeclaresGain) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "xavier_uniform");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"gain"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("gain")->default_value), 1.0);
}

// A non-square 2000 x 500 matrix: fan_in 500, fan_out 2000, 1e6 draws.
TEST_F(XavierUniformInit, StdIsTheFormula) {
  torch::manual_seed(1);
  const double gain = 1.5;
  const torch::Tensor t = filled(gain, {2000, 500}).to(torch::kFloat64);
  const double n = static_cast<double>(t.numel());
  const double expected = gain * std::sqrt(2.0 / (500 + 2000));
  // Five standard errors: sigma / sqrt(n) bounds the sample mean's and the sample std's.
  const double tolerance = 5.0 * expected / std::sqrt(n);
  EXPECT_NEAR(t.mean().item<double>(), 0.0, tolerance);
  EXPECT_NEAR(t.std().item<double>(), expected, tolerance);
  // Uniform on [-bound, bound], bound = sqrt(3) std: the whole interval and no further.
  const double bound = std::sqrt(3.0) * expected;
  EXPECT_LE(t.abs().max().item<double>(), bound * (1 + 1e-6));  // float32 rounding
  EXPECT_GT(t.abs().max().item<double>(), bound * (1 - 1e-4));
}

// fan_in = 32 x 9 and fan_out = 64 x 9 for a [64, 32, 9] tensor (torch's receptive field).
TEST_F(XavierUniformInit, FansIncludeTheReceptiveField) {
  torch::manual_seed(2);
  const torch::Tensor t = filled(1.0, {64, 32, 9}).to(torch::kFloat64);
  const double expected = std::sqrt(2.0 / (32 * 9 + 64 * 9));
  EXPECT_NEAR(t.std().item<double>(), expected,
              5.0 * expected / std::sqrt(static_cast<double>(t.numel())));
}

TEST_F(XavierUniformInit, DrawsWhatTorchDraws) {
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{30, 70}, {70, 30}, {8, 4, 3}}) {
    torch::manual_seed(7);
    const torch::Tensor ours = filled(0.8, shape);
    torch::manual_seed(7);
    torch::Tensor theirs = torch::empty(shape);
    torch::nn::init::xavier_uniform_(theirs, 0.8);
    EXPECT_TRUE(torch::allclose(ours, theirs, 1e-6, 1e-7)) << torch::IntArrayRef(shape);
  }
}

TEST_F(XavierUniformInit, ATensorWithoutFansIsRefusedByName) {
  torch::Tensor bias = torch::zeros({5});
  try {
    make(1.0)->fill(bias, InitContext::for_tensor(bias, "pe.bias (block 1)"));
    FAIL() << "a 1D tensor was filled";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("pe.bias (block 1): xavier_uniform needs a tensor with fans"));
    EXPECT_THAT(e.what(), HasSubstr("shape [5]"));
    EXPECT_THAT(e.what(), HasSubstr("use an initializer without fans"));
  }
  EXPECT_EQ(bias.abs().sum().item<double>(), 0.0);  // untouched
}

TEST_F(XavierUniformInit, SameSeedSameTensorOtherSeedOther) {
  torch::manual_seed(9);
  const torch::Tensor a = filled(1.0, {16, 16});
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, filled(1.0, {16, 16})));
  torch::manual_seed(10);
  EXPECT_FALSE(torch::equal(a, filled(1.0, {16, 16})));
}

TEST_F(XavierUniformInit, FillsAParameterWithoutRecordingAGraph) {
  torch::Tensor parameter = torch::zeros({3, 4}, torch::requires_grad());
  make(1.0)->fill(parameter, InitContext::for_tensor(parameter, "weight"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_GT(parameter.abs().sum().item<double>(), 0.0);
}

}  // namespace
}  // namespace pelab
