#pragma once

// Checks shared by the initializer plugin tests (Kaiming, Xavier, orthogonal): filling a tensor,
// the sample moments of many draws, refusals by name, seeding, and filling a parameter.

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"

namespace pelab::test {

using Shape = std::vector<std::int64_t>;

/// A fresh tensor of `shape` filled by `init`, as a tensor named "test".
inline torch::Tensor filled_by(const Initializer& init, const Shape& shape,
                               torch::Dtype dtype = torch::kFloat32) {
  torch::Tensor tensor = torch::empty(shape, dtype);
  init.fill(tensor, InitContext::for_tensor(tensor, "test"));
  return tensor;
}

/// The sample mean is 0 and the sample std `expected`, within five standard errors
/// (sigma / sqrt(n) bounds the sample mean's and the sample std's).
inline void expect_zero_mean_and_std(const torch::Tensor& t, double expected) {
  const double tolerance = 5.0 * expected / std::sqrt(static_cast<double>(t.numel()));
  EXPECT_NEAR(t.mean().item<double>(), 0.0, tolerance);
  EXPECT_NEAR(t.std().item<double>(), expected, tolerance);
}

/// Gaussian, not uniform: about 68.27% of the draws within one std (5 binomial standard errors).
inline void expect_gaussian(const torch::Tensor& t, double std) {
  const double n = static_cast<double>(t.numel());
  EXPECT_NEAR(t.abs().le(std).to(torch::kFloat64).mean().item<double>(), 0.6827,
              5.0 * std::sqrt(0.6827 * 0.3173 / n));
}

/// Uniform on [-bound, bound], bound = sqrt(3) std: the whole interval and no further.
inline void expect_uniform(const torch::Tensor& t, double std) {
  const double bound = std::sqrt(3.0) * std;
  EXPECT_LE(t.abs().max().item<double>(), bound * (1 + 1e-6));  // float32 rounding
  EXPECT_GT(t.abs().max().item<double>(), bound * (1 - 1e-4));
}

/// Under the same seed, `ours` draws what `theirs` (torch's own initializer) draws, for tall,
/// wide and 3D shapes.
inline void expect_draws_like_torch(const std::function<torch::Tensor(const Shape&)>& ours,
                                    const std::function<void(torch::Tensor&)>& theirs,
                                    std::uint64_t seed) {
  for (const Shape& shape : std::vector<Shape>{{30, 70}, {70, 30}, {8, 4, 3}}) {
    torch::manual_seed(seed);
    const torch::Tensor our_draw = ours(shape);
    torch::manual_seed(seed);
    torch::Tensor their_draw = torch::empty(shape);
    theirs(their_draw);
    EXPECT_TRUE(torch::allclose(our_draw, their_draw, 1e-6, 1e-7)) << torch::IntArrayRef(shape);
  }
}

/// `init` refuses a 1D tensor named `what` with a message holding every one of `substrings`, and
/// leaves it untouched.
inline void expect_refuses_1d(const Initializer& init, const std::string& what,
                              const std::vector<std::string>& substrings) {
  torch::Tensor bias = torch::zeros({5});
  try {
    init.fill(bias, InitContext::for_tensor(bias, what));
    ADD_FAILURE() << "a 1D tensor was filled";
  } catch (const Error& e) {
    for (const std::string& substring : substrings)
      EXPECT_THAT(e.what(), ::testing::HasSubstr(substring));
  }
  EXPECT_EQ(bias.abs().sum().item<double>(), 0.0);  // untouched
}

/// The same seed gives the same tensor, another seed another.
inline void expect_seed_decides(const std::function<torch::Tensor()>& fill) {
  torch::manual_seed(9);
  const torch::Tensor a = fill();
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(a, fill()));
  torch::manual_seed(10);
  EXPECT_FALSE(torch::equal(a, fill()));
}

/// `init` fills a zero parameter of `shape` (not all zeros afterwards) without recording a
/// graph; returns it, detached, in float64.
inline torch::Tensor expect_fills_parameter_without_graph(const Initializer& init,
                                                          const Shape& shape) {
  torch::Tensor parameter = torch::zeros(shape, torch::requires_grad());
  init.fill(parameter, InitContext::for_tensor(parameter, "weight"));
  EXPECT_EQ(parameter.grad_fn(), nullptr);
  EXPECT_TRUE(parameter.requires_grad());
  EXPECT_GT(parameter.abs().sum().item<double>(), 0.0);
  return parameter.detach().to(torch::kFloat64);
}

/// The Kaiming initializers' parameters.
struct Kaiming {
  std::string nonlinearity = "leaky_relu";
  double a = 0.0;
  std::string mode = "fan_in";
};

/// The Kaiming initializer `name` (kaiming_normal or kaiming_uniform) with parameters `p`.
inline std::shared_ptr<Initializer> make_kaiming(Registry& registry, const std::string& name,
                                                 const Kaiming& p) {
  PluginSpec spec = registry.default_spec(PluginKind::kInitializer, name);
  spec.params.set("nonlinearity", p.nonlinearity);
  spec.params.set("a", p.a);
  spec.params.set("mode", p.mode);
  return registry.create_initializer(spec);
}

/// Parameters and the std torch gives them for a 2000 x 500 matrix (fan_in 500, fan_out 2000):
/// non-square, so that the mode shows.
inline std::vector<std::pair<Kaiming, double>> kaiming_std_cases() {
  return {
      {{}, std::sqrt(2.0) / std::sqrt(500.0)},  // torch's default: leaky_relu, a = 0, fan_in
      {{"leaky_relu", 0.0, "fan_out"}, std::sqrt(2.0) / std::sqrt(2000.0)},
      {{"leaky_relu", 0.2, "fan_in"}, std::sqrt(2.0 / 1.04) / std::sqrt(500.0)},
      {{"relu", 0.0, "fan_in"}, std::sqrt(2.0) / std::sqrt(500.0)},
      {{"tanh", 0.0, "fan_out"}, 5.0 / 3.0 / std::sqrt(2000.0)},
      {{"linear", 0.0, "fan_in"}, 1.0 / std::sqrt(500.0)},
      {{"selu", 0.0, "fan_in"}, 0.75 / std::sqrt(500.0)},
  };
}

/// A Kaiming initializer declares torch's defaults: leaky_relu, a = 0, fan_in.
inline void expect_kaiming_declares_torchs_defaults(Registry& registry, const std::string& name) {
  const ParamSchema& schema = registry.schema(PluginKind::kInitializer, name);
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"nonlinearity", "a", "mode"}));
  EXPECT_EQ(std::get<std::string>(schema.find("nonlinearity")->default_value), "leaky_relu");
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("a")->default_value), 0.0);
  EXPECT_EQ(std::get<std::string>(schema.find("mode")->default_value), "fan_in");
  EXPECT_EQ(schema.find("mode")->choices, (std::vector<std::string>{"fan_in", "fan_out"}));
}

/// A Kaiming initializer refuses a slope `a` unless the nonlinearity is leaky_relu.
inline void expect_kaiming_refuses_slope_without_leaky_relu(Registry& registry,
                                                            const std::string& name) {
  try {
    make_kaiming(registry, name, {"relu", 0.2, "fan_in"});
    ADD_FAILURE() << "a = 0.2 with relu was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("a = 0.2 is the negative slope of a leaky_relu"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("nonlinearity = \"relu\""));
  }
}

/// An initializer with a single `gain` parameter, 1 by default.
inline void expect_declares_gain(Registry& registry, const std::string& name) {
  const ParamSchema& schema = registry.schema(PluginKind::kInitializer, name);
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"gain"}));
  EXPECT_DOUBLE_EQ(std::get<double>(schema.find("gain")->default_value), 1.0);
}

/// The initializer `name` with its `gain` set.
inline std::shared_ptr<Initializer> make_with_gain(Registry& registry, const std::string& name,
                                                   double gain) {
  PluginSpec spec = registry.default_spec(PluginKind::kInitializer, name);
  spec.params.set("gain", gain);
  return registry.create_initializer(spec);
}

}  // namespace pelab::test
