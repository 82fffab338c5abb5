// The Glorot/Xavier normal initializer: std = gain sqrt(2 / (fan_in + fan_out)), torch's fans,
// the same draws as torch::nn::init::xavier_normal_, and no tensor without fans.

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "init_test_support.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class XavierNormalInit : public ::testing::Test {
 protected:
  XavierNormalInit() : registry_(test::builtin_registry()) {}

  std::shared_ptr<Initializer> make(double gain) {
    return test::make_with_gain(registry_, "xavier_normal", gain);
  }

  torch::Tensor filled(double gain, const test::Shape& shape) {
    return test::filled_by(*make(gain), shape);
  }

  Registry registry_;
};

TEST_F(XavierNormalInit, DeclaresGain) {
  test::expect_declares_gain(registry_, "xavier_normal");
}

// A non-square 2000 x 500 matrix: fan_in 500, fan_out 2000, 1e6 draws.
TEST_F(XavierNormalInit, StdIsTheFormula) {
  torch::manual_seed(1);
  const double gain = 1.5;
  const torch::Tensor t = filled(gain, {2000, 500}).to(torch::kFloat64);
  const double expected = gain * std::sqrt(2.0 / (500 + 2000));
  test::expect_zero_mean_and_std(t, expected);
  test::expect_gaussian(t, expected);
}

// fan_in = 32 x 9 and fan_out = 64 x 9 for a [64, 32, 9] tensor (torch's receptive field).
TEST_F(XavierNormalInit, FansIncludeTheReceptiveField) {
  torch::manual_seed(2);
  const torch::Tensor t = filled(1.0, {64, 32, 9}).to(torch::kFloat64);
  const double expected = std::sqrt(2.0 / (32 * 9 + 64 * 9));
  EXPECT_NEAR(t.std().item<double>(), expected,
              5.0 * expected / std::sqrt(static_cast<double>(t.numel())));
}

TEST_F(XavierNormalInit, DrawsWhatTorchDraws) {
  test::expect_draws_like_torch([&](const test::Shape& shape) { return filled(0.8, shape); },
                                [](torch::Tensor& t) { torch::nn::init::xavier_normal_(t, 0.8); },
                                7);
}

TEST_F(XavierNormalInit, ATensorWithoutFansIsRefusedByName) {
  test::expect_refuses_1d(*make(1.0), "pe.bias (block 1)",
                          {"pe.bias (block 1): xavier_normal needs a tensor with fans", "shape [5]",
                           "use an initializer without fans"});
}

TEST_F(XavierNormalInit, SameSeedSameTensorOtherSeedOther) {
  test::expect_seed_decides([&] { return filled(1.0, {16, 16}); });
}

TEST_F(XavierNormalInit, FillsAParameterWithoutRecordingAGraph) {
  test::expect_fills_parameter_without_graph(*make(1.0), {3, 4});
}

}  // namespace
}  // namespace pelab
