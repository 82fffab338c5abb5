#pragma once

#include <cstdint>

#include <torch/types.h>

namespace pelab {

/// Batched matrix product a·b for 3D [batch, m, k]·[batch, k, n] or 4D [batch, heads, m, k]·
/// [batch, heads, k, n] tensors of any strides, differentiable in both arguments.
///
/// Attention multiplies many tiny matrices (16 tokens × 16 tokens × head_dim in the paper's model).
/// ATen's CPU bmm (without MKL) hands each one to BLAS in its own call, after a select, a view
/// and a conj check per matrix, and that bookkeeping costs as much as the arithmetic. Below
/// `kSmallMatmulMaxWork` multiply-adds per matrix this makes the same BLAS calls directly,
/// parallel over the batch's matrices, so its products equal torch::matmul's bit for bit; above
/// it, with broadcasting, or for other dtypes, it is torch::matmul.
torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b);

/// The largest m·k·n handled by the direct kernel; larger matrices amortise BLAS's call cost.
inline constexpr std::int64_t kSmallMatmulMaxWork = 64 * 64 * 64;

}  // namespace pelab
