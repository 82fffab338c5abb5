// The He/Kaiming uniform initializer: std = gain / sqrt(fan) with torch's gains and fans, the
// same draws as torch::nn::init::kaiming_uniform_, and no tensor without fans.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "init_test_support.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

using test::Kaiming;

class KaimingUniformInit : public ::testing::Test {
 protected:
  KaimingUniformInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(const Kaiming& p) {
    return test::make_kaiming(registry_, "kaiming_uniform", p);
  }

  torch::Tensor filled(const Kaiming& p, const test::Shape& shape) {
    return test::filled_by(*make(p), shape);
  }

  Registry registry_;
};

TEST_F(KaimingUniformInit, DeclaresTorchsDefaults) {
  test::expect_kaiming_declares_torchs_defaults(registry_, "kaiming_uniform");
}

// A non-square 2000 x 500 matrix (fan_in 500, fan_out 2000, 1e6 draws), so that the mode shows.
TEST_F(KaimingUniformInit, StdIsTheFormula) {
  torch::manual_seed(1);
  for (const auto& [params, expected] : test::kaiming_std_cases()) {
    const torch::Tensor t = filled(params, {2000, 500}).to(torch::kFloat64);
    SCOPED_TRACE(params.nonlinearity + " a=" + std::to_string(params.a) + " " + params.mode);
    test::expect_zero_mean_and_std(t, expected);
    test::expect_uniform(t, expected);
  }
}

TEST_F(KaimingUniformInit, DrawsWhatTorchDraws) {
  using namespace torch::nn::init;
  test::expect_draws_like_torch(
      [&](const test::Shape& shape) {
        return filled({"leaky_relu", 0.1, "fan_out"}, shape);
      },
      [](torch::Tensor& t) { kaiming_uniform_(t, 0.1, torch::kFanOut, torch::kLeakyReLU); }, 7);
  test::expect_draws_like_torch(
      [&](const test::Shape& shape) {
        return filled({"tanh", 0.0, "fan_in"}, shape);
      },
      [](torch::Tensor& t) { kaiming_uniform_(t, 0.0, torch::kFanIn, torch::kTanh); }, 8);
}

TEST_F(KaimingUniformInit, ATensorWithoutFansIsRefusedByName) {
  for (const std::string mode : {"fan_in", "fan_out"}) {
    test::expect_refuses_1d(*make({"relu", 0.0, mode}), "pe.bias (block 1)",
                            {"pe.bias (block 1): kaiming_uniform needs a tensor with fans",
                             "shape [5] (" + mode + " 0)", "use an initializer without fans"});
  }
}

TEST_F(KaimingUniformInit, ASlopeWithoutLeakyReluIsRefused) {
  test::expect_kaiming_refuses_slope_without_leaky_relu(registry_, "kaiming_uniform");
}

TEST_F(KaimingUniformInit, SameSeedSameTensorOtherSeedOther) {
  test::expect_seed_decides([&] { return filled({}, {16, 16}); });
}

TEST_F(KaimingUniformInit, FillsAParameterWithoutRecordingAGraph) {
  test::expect_fills_parameter_without_graph(*make({}), {3, 4});
}

}  // namespace
}  // namespace pelab
