// The He/Kaiming normal initializer: std = gain / sqrt(fan) with torch's gains and fans, the
// same draws as torch::nn::init::kaiming_normal_, and no tensor without fans.

#include <cmath>
#include <memory>
#include <string>
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

struct Kaiming {
  std::string nonlinearity = "leaky_relu";
  double a = 0.0;
  std::string mode = "fan_in";
};

class KaimingNormalInit : public ::testing::Test {
 protected:
  KaimingNormalInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(const Kaiming& p) {
    PluginSpec spec = registry_.default_spec(PluginKind::kInitializer, "kaiming_normal");
    spec.params.set("nonlinearity", p.nonlinearity);
    spec.params.set("a", p.a);
    spec.params.set("mode", p.mode);
    return registry_.create_initializer(spec);
  }

  torch::Tensor filled(const Kaiming& p, std::vector<std::int64_t> shape) {
    torch::Tensor tensor = torch::empty(shape);
    make(p)->fill(tensor, InitContext::for_tensor(tensor, "test"));
    return tensor;
  }

  Registry registry_;
};

TEST_F(KaimingNormalInit, DeclaresTorchsDefaults) {
  const ParamSchema& schema = registry_.schema(PluginKind::kInitializer, "kaiming_normal");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"nonlinearity", "a", "mode"}));
  EXPECT_EQ(std::get<std::string>(schema.find("nonlinearity")->default_value), "leaky_relu");
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("a")->default_value), 0.0);
  EXPECT_EQ(std::get<std::string>(schema.find("mode")->default_value), "fan_in");
  EXPECT_EQ(schema.find("mode")->choices, (std::vector<std::string>{"fan_in", "fan_out"}));
}

// A non-square 2000 x 500 matrix (fan_in 500, fan_out 2000, 1e6 draws), so that the mode shows.
TEST_F(KaimingNormalInit, StdIsTheFormula) {
  struct Case {
    Kaiming params;
    double expected;
  };
  const std::vector<Case> cases = {
      {{}, std::sqrt(2.0) / std::sqrt(500.0)},  // torch's default: leaky_relu, a = 0, fan_in
      {{"leaky_relu", 0.0, "fan_out"}, std::sqrt(2.0) / std::sqrt(2000.0)},
      {{"leaky_relu", 0.2, "fan_in"}, std::sqrt(2.0 / 1.04) / std::sqrt(500.0)},
      {{"relu", 0.0, "fan_in"}, std::sqrt(2.0) / std::sqrt(500.0)},
      {{"tanh", 0.0, "fan_out"}, 5.0 / 3.0 / std::sqrt(2000.0)},
      {{"linear", 0.0, "fan_in"}, 1.0 / std::sqrt(500.0)},
      {{"selu", 0.0, "fan_in"}, 0.75 / std::sqrt(500.0)},
  };
  torch::manual_seed(1);
  for (const Case& c : cases) {
    const torch::Tensor t = filled(c.params, {2000, 500}).to(torch::kFloat64);
    const double n = static_cast<double>(t.numel());
    const double expected = c.expected;
    // Five standard errors: sigma / sqrt(n) bounds the sample mean's and the sample std's.
    const double tolerance = 5.0 * expected / std::sqrt(n);
    SCOPED_TRACE(c.params.nonlinearity + " a=" + std::to_string(c.params.a) + " " + c.params.mode);
    EXPECT_NEAR(t.mean().item<double>(), 0.0, tolerance);
    EXPECT_NEAR(t.std().item<double>(), expected, tolerance);
    EXPECT_NEAR(t.abs().le(expected).to(torch::kFloat64).mean().item<double>(), 0.6827,
                5.0 * std::sqrt(0.6827 * 0.3173 / n));
  }
}

TEST_F(KaimingNormalInit, DrawsWhatTorchDraws) {
  using namespace torch::nn::init;
  const std::vector<std::vector<std::int64_t>> shapes = {{30, 70}, {70, 30}, {8, 4, 3}};
  for (const auto& shape : shapes) {
    torch::manual_seed(7);
    const torch::Tensor ours = filled({"leaky_relu", 0.1, "fan_out"}, shape);
    torch::manual_seed(7);
    torch::Tensor theirs = torch::empty(shape);
    kaiming_normal_(theirs, 0.1, torch::kFanOut, torch::kLeakyReLU);
    EXPECT_TRUE(torch::allclose(ours, theirs, 1e-6, 1e-7)) << torch::IntArrayRef(shape);

    torch::manual_seed(8);
    const torch::Tensor ours_tanh = filled({"tanh", 0.0, "fan_in"}, shape);
    torch::manual_seed(8);
    kaiming_normal_(theirs, 0.0, torch::kFanIn, torch::kTanh);
    EXPECT_TRUE(torch::allclose(ours_tanh, theirs, 1e-6, 1e-7)) << torch::IntArrayRef(shape);
  }
}

TEST_F(KaimingNormalInit, ATensorWithoutFansIsRefusedByName) {
  for (const std::string mode : {"fan_in", "fan_out"}) {
    torch::Tensor bias = torch::zeros({5});
    try {
      make({"relu", 0.0, mode})->fill(bias, InitContext::for_tensor(bias, "pe.bias (block 1)"));
      FAIL() << "a 1D tensor was filled";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(),
                  HasSubstr("pe.bias (block 1): kaiming_normal needs a tensor with fans"));
      EXPECT_THAT(e.what(), HasSubstr("shape [5] (" + mode + " 0)"));
      EXPECT_THAT(e.what(), HasSubstr("use an initializer without fans"));
    }
    EXPECT_EQ(bias.abs().sum().item<double>(), 0.0);  // untouched
  }
}

TEST_F(KaimingNormalInit, ASlopeWithoutLeakyReluIsRefused) {
  try {
    make({"relu", 0.2, "fan_in"});
    FAIL() << "a = 0.2 with relu was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a = 0.2 is the negative slope of a leaky_relu"));
    EXPECT_THAT(e.what(), HasSubstr("nonlinearity = \"relu\""));
  }
}

TEST_F(KaimingNormalInit, SameSeedSameTensorOtherSeedOther) {
  torch::manual_seed(9);
  const torch::Tensor a = filled({}, {16, 16});
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, filled({}, {16, 16})));
  torch::manual_seed(10);
  EXPECT_FALSE(torch::equal(a, filled({}, {16, 16})));
}

TEST_F(KaimingNormalInit, FillsAParameterWithoutRecordingAGraph) {
  torch::Tensor parameter = torch::zeros({3, 4}, torch::requires_grad());
  make({})->fill(parameter, InitContext::for_tensor(parameter, "weight"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_GT(parameter.abs().sum().item<double>(), 0.0);
}

}  // namespace
}  // namespace pelab
