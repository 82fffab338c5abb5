#pragma once

// What pelab's rotary PEs share (header-only: each plugin is its own .so): turning channel pairs
// by angles, and the kernel a rotary PE shows the probes.

#include <cstdint>

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab::plugin_common {

/// The invariant of every rotary hook: q and k are [..., tokens, head_dim] as the PE was built.
inline void check_rotary_inputs(const char* plugin, const torch::Tensor& q, const torch::Tensor& k,
                                std::int64_t tokens, std::int64_t head_dim) {
  PELAB_INTERNAL_ASSERT(q.size(-2) == tokens && k.size(-2) == tokens && q.size(-1) == head_dim &&
                            k.size(-1) == head_dim,
                        "{} was built for {} tokens of head_dim {}, got q {} and k {}", plugin,
                        tokens, head_dim, fmt::join(q.sizes(), "x"), fmt::join(k.sizes(), "x"));
}

/// Turns the first 2 * cos.size(-1) channels of x [..., N, head_dim] pair by pair, (2i, 2i+1) by
/// the angle whose cosine and sine are cos[..., i] and sin[..., i] (they broadcast against
/// [..., N, pairs]); the other channels pass unchanged (a partial rotary).
inline torch::Tensor rotate_pairs(const torch::Tensor& x, const torch::Tensor& cos,
                                  const torch::Tensor& sin) {
  const std::int64_t rotated = 2 * cos.size(-1);
  const std::int64_t head_dim = x.size(-1);
  const torch::Tensor pairs = x.narrow(-1, 0, rotated).unflatten(-1, {rotated / 2, 2});
  const torch::Tensor even = pairs.select(-1, 0);
  const torch::Tensor odd = pairs.select(-1, 1);
  const torch::Tensor out =
      torch::stack({even * cos - odd * sin, even * sin + odd * cos}, -1).flatten(-2);
  if (rotated == head_dim) return out;
  return torch::cat({out, x.narrow(-1, rotated, head_dim - rotated)}, -1);
}

/// A rotary PE's kernel: the rotated scores of an all-ones query and key over head_dim,
/// K[t, u] = (R_t 1) . (R_u 1) / head_dim, averaged over `heads` (the heads whose rotations
/// differ; 1 when they share one): 1 on the diagonal for a full rotation.
inline torch::Tensor rotary_kernel(PositionalEncoding& pe, std::int64_t heads, std::int64_t tokens,
                                   std::int64_t head_dim, const torch::TensorOptions& options) {
  torch::NoGradGuard no_grad;
  const torch::Tensor ones = torch::ones({1, heads, tokens, head_dim}, options);
  const auto [q, k] = pe.rotate(ones, ones);
  return torch::matmul(q, k.transpose(-2, -1))[0].mean(0) / static_cast<double>(head_dim);
}

}  // namespace pelab::plugin_common
