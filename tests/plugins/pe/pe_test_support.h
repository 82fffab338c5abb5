// Checks shared by the PE plugin tests.

#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"

namespace pelab::test {

/// bf16 autocast on the CPU for one scope, as the trainer's train.precision = "bf16" sets it.
class Bf16AutocastScope {
 public:
  Bf16AutocastScope() : previous_(at::autocast::get_autocast_cpu_dtype()) {
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~Bf16AutocastScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(false);
    at::autocast::set_autocast_cpu_dtype(previous_);
  }
  Bf16AutocastScope(const Bf16AutocastScope&) = delete;
  Bf16AutocastScope& operator=(const Bf16AutocastScope&) = delete;

 private:
  at::ScalarType previous_;
};

// One training step of a small encoder with this PE in every block: the loss is finite, every PE
// parameter gets a finite, nonzero gradient, and the PE makes the model position-aware (with no
// PE, swapping two tokens other than the readout token would leave the output unchanged).
inline void expect_trains_in_model(Registry& registry, const PluginSpec& spec, const Layout& layout,
                                   std::int64_t d_model, std::int64_t heads) {
  ModelConfig config;
  config.layers = 2;
  config.d_model = d_model;
  config.heads = heads;
  config.mlp_ratio = 2;
  torch::manual_seed(3);
  TransformerEncoder model(config, /*input_size=*/3, Objective::classification(4),
                           [&](const ModelShape& shape) {
                             return registry.create_positional_encoding(spec, layout, shape);
                           });
  ASSERT_EQ(model.positional_encodings().size(), 2u);
  const torch::Tensor x = torch::randn({5, layout.tokens, 3});
  const torch::Tensor loss =
      torch::nll_loss(model.forward(x), torch::randint(4, {5}, torch::kLong));
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  for (const auto& pe : model.positional_encodings()) {
    for (const auto& parameter : pe->named_parameters()) {
      const torch::Tensor grad = parameter.value().grad();
      ASSERT_TRUE(grad.defined()) << parameter.key();
      EXPECT_TRUE(torch::isfinite(grad).all().item<bool>()) << parameter.key();
      EXPECT_GT(grad.abs().sum().item<double>(), 0.0) << parameter.key();
    }
  }
  for (const auto& parameter : model.parameters())
    EXPECT_TRUE(!parameter.grad().defined() ||
                torch::isfinite(parameter.grad()).all().item<bool>());

  torch::NoGradGuard no_grad;
  torch::Tensor swapped = x.clone();
  swapped.select(1, 0).copy_(x.select(1, 1));
  swapped.select(1, 1).copy_(x.select(1, 0));
  EXPECT_GT((model.forward(x) - model.forward(swapped)).abs().max().item<double>(), 1e-6);
}

// A rotary PE's gradients against central differences, in double precision (the PE moved to
// double first): for each named parameter, every `stride`-th entry of the gradient of
// sum(scores * weights) over random q and k [2, heads, tokens, head_dim].
inline void expect_rotary_gradients_match_finite_differences(
    PositionalEncoding& pe, const std::vector<std::string>& names, std::int64_t heads,
    std::int64_t tokens, std::int64_t head_dim, std::int64_t stride = 3, double tolerance = 1e-6) {
  pe.to(torch::kFloat64);
  const torch::Tensor q = torch::randn({2, heads, tokens, head_dim}, torch::kFloat64);
  const torch::Tensor k = torch::randn({2, heads, tokens, head_dim}, torch::kFloat64);
  const torch::Tensor weights = torch::randn({2, heads, tokens, tokens}, torch::kFloat64);
  const auto loss = [&] {
    const auto [rq, rk] = pe.rotate(q, k);
    return (torch::matmul(rq, rk.transpose(-2, -1)) * weights).sum();
  };
  loss().backward();
  const auto parameters = pe.named_parameters();
  for (const std::string& name : names) {
    ASSERT_TRUE(parameters.contains(name)) << name;
    torch::Tensor value = parameters[name];
    const torch::Tensor analytic = value.grad().clone().flatten();
    torch::Tensor flat = value.view({-1});
    for (std::int64_t j = 0; j < flat.numel(); j += stride) {
      torch::NoGradGuard no_grad;
      const double original = flat[j].item<double>(), step = 1e-6;
      flat[j] = original + step;
      const double up = loss().item<double>();
      flat[j] = original - step;
      const double down = loss().item<double>();
      flat[j] = original;
      EXPECT_NEAR(analytic[j].item<double>(), (up - down) / (2 * step), tolerance)
          << name << " entry " << j;
    }
  }
}

// The message of the pelab::Error that building `spec` for this layout and shape raises, or
// "accepted" when it builds.
inline std::string refusal(Registry& registry, const PluginSpec& spec, const Layout& layout,
                           std::int64_t d_model, std::int64_t heads) {
  try {
    registry.create_positional_encoding(spec, layout, ModelShape{d_model, heads, 1, 0});
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace pelab::test
