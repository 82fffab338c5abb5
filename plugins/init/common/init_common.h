#pragma once

// Helpers shared by pelab's initializer plugins (header-only: each initializer is its own .so):
// torch's gains and fans, the check that a tensor has fans, and the sign-fixed QR that makes a
// Gaussian matrix's Q Haar-distributed.

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab::init_common {

/// The tensor's shape as torch prints it, e.g. "[3, 4]".
inline std::string shape_of(const torch::Tensor& tensor) {
  std::ostringstream shape;
  shape << tensor.sizes();
  return shape.str();
}

/// The layout of a tensor indexed by token (a PE table); a tensor without one is refused, naming
/// the initializer `name`.
inline const Layout& token_layout(const torch::Tensor& tensor, const InitContext& context,
                                  const char* name) {
  PELAB_CHECK(context.layout != nullptr,
              "{}: {} needs a tensor indexed by token (a PE table, N x d, with the task's "
              "layout), but this tensor of shape {} has no layout; use it as a PE's table "
              "initializer, e.g. pe = {{ plugin = \"learned\", init = \"{}\" }}",
              context.what, name, shape_of(tensor), name);
  return *context.layout;
}

/// Refuses a tensor that is not N x d with one row per token of `layout`, naming the initializer
/// `name`.
inline void check_token_rows(const torch::Tensor& tensor, const Layout& layout,
                             const InitContext& context, const char* name) {
  PELAB_CHECK(tensor.dim() == 2 && tensor.size(0) == layout.tokens,
              "{}: {} needs an N x d tensor with one row per token (N = {}), but it has shape {}",
              context.what, name, layout.tokens, shape_of(tensor));
}

/// torch.nn.init.calculate_gain, including the nonlinearities the C++ API lacks (selu).
inline double calculate_gain(const std::string& nonlinearity, double a) {
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + a * a));
  if (nonlinearity == "selu") return 3.0 / 4;
  return 1.0;  // linear, sigmoid
}

/// Kaiming's parameters: `nonlinearity`, its leaky_relu slope `a`, and `mode`.
inline void declare_kaiming(ParamSchema& schema) {
  schema.choice("nonlinearity", "leaky_relu",
                {"linear", "sigmoid", "tanh", "relu", "leaky_relu", "selu"},
                "The nonlinearity after the layer; its gain (torch's calculate_gain) multiplies "
                "the standard deviation: 1 for linear and sigmoid (torch's conv* gains are also "
                "1: use linear), 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + a^2)) for "
                "leaky_relu, 3/4 for selu.");
  schema.real("a", 0.0,
              "Negative slope of the leaky_relu (only with nonlinearity = \"leaky_relu\"; the "
              "default 0 gives relu's gain sqrt(2)).");
  schema.choice("mode", "fan_in", {"fan_in", "fan_out"},
                "fan_in preserves the variance of the activations in the forward pass, fan_out "
                "that of the gradients in the backward pass.");
}

/// The gain of Kaiming's parameters (declare_kaiming); `a` is refused unless the nonlinearity is
/// leaky_relu.
inline double kaiming_gain(const Params& params) {
  const std::string& nonlinearity = params.string("nonlinearity");
  const double a = params.real("a");
  PELAB_CHECK(a == 0.0 || nonlinearity == "leaky_relu",
              "a = {} is the negative slope of a leaky_relu, but nonlinearity = \"{}\"; set "
              "nonlinearity = \"leaky_relu\" or remove a",
              a, nonlinearity);
  return calculate_gain(nonlinearity, a);
}

/// Kaiming's standard deviation, gain / sqrt(fan), fan being fan_in or fan_out; a tensor without
/// fans is refused, naming the initializer `name`.
inline double kaiming_std(const torch::Tensor& tensor, const InitContext& context, double gain,
                          bool fan_in, const char* name) {
  const std::int64_t fan = fan_in ? context.fan_in : context.fan_out;
  if (fan <= 0) {
    throw Error(fmt::format(
        "{}: {} needs a tensor with fans (at least 2 dimensions, none of size 0), but this one "
        "has shape {} ({} {}); use an initializer without fans for it, e.g. normal, uniform or "
        "truncated_normal",
        context.what, name, shape_of(tensor), fan_in ? "fan_in" : "fan_out", fan));
  }
  return gain / std::sqrt(static_cast<double>(fan));
}

/// Xavier's `gain` parameter.
inline void declare_xavier(ParamSchema& schema) {
  schema
      .real("gain", 1.0,
            "Multiplies the standard deviation; torch::nn::init::calculate_gain gives the "
            "usual values (1 for linear/sigmoid, 5/3 for tanh, sqrt(2) for relu).")
      .at_least(0.0)
      .is_init_scale();
}

/// Xavier's standard deviation, gain * sqrt(2 / (fan_in + fan_out)); a tensor without fans is
/// refused, naming the initializer `name`.
inline double xavier_std(const torch::Tensor& tensor, const InitContext& context, double gain,
                         const char* name) {
  if (context.fan_in <= 0 || context.fan_out <= 0) {
    throw Error(fmt::format(
        "{}: {} needs a tensor with fans (at least 2 dimensions, none of size 0), but this one "
        "has shape {} (fan_in {}, fan_out {}); use an initializer without fans for it, e.g. "
        "normal, uniform or truncated_normal",
        context.what, name, shape_of(tensor), context.fan_in, context.fan_out));
  }
  return gain * std::sqrt(2.0 / static_cast<double>(context.fan_in + context.fan_out));
}

/// The Q of a tall (or square) Gaussian matrix's reduced QR, with the signs of R's diagonal folded
/// in: unique, and Haar-distributed (orthonormal columns).
inline torch::Tensor haar_orthonormal_columns(const torch::Tensor& gaussian) {
  torch::Tensor q, r;
  std::tie(q, r) = torch::linalg_qr(gaussian);  // reduced: q [max, min], r [min, min]
  return q * torch::diagonal(r).sign();
}

}  // namespace pelab::init_common
