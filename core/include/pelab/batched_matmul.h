#pragma once

#include <cstdint>

#include <torch/types.h>

namespace pelab {

/// Batched matrix product a·b for 3D [batch, m, k]·[batch, k, n] or 4D [batch, heads, m, k]·
/// [batch, heads, k, n] tensors of any strides, differentiable in both arguments.
///
/// Attention multiplies many tiny matrices (16 tokens × 16 tokens × head_dim in the paper's model).
/// ATen's CPU bmm hands each one to BLAS in its own call, after a select, a view and a conj check
/// per sample, and that bookkeeping costs several times the arithmetic. Below
/// `kSmallMatmulMaxWork` multiply-adds per matrix this runs a direct kernel over the whole batch,
/// parallel over its matrices; above it, or for other dtypes, it is torch::matmul. Each output
/// element is summed in the order of k, so the result does not depend on the thread count.
torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b);

/// The largest m·k·n handled by the direct kernel; larger matrices amortise BLAS's call cost.
inline constexpr std::int64_t kSmallMatmulMaxWork = 64 * 64 * 64;

}  // namespace pelab
