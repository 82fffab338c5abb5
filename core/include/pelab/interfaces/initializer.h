#pragma once

#include <cstdint>
#include <string>

#include <torch/types.h>

#include "pelab/base/export.h"
#include "pelab/interfaces/layout.h"

namespace pelab {

/// What an initializer may know about the tensor it fills.
struct PELAB_API InitContext {
  /// The layout of the tokens when the tensor is indexed by token (a PE table), else null.
  const Layout* layout = nullptr;
  /// Fans as torch computes them for the tensor's shape; 0 when the shape has none (1D).
  std::int64_t fan_in = 0;
  std::int64_t fan_out = 0;
  /// What is being filled, for error messages: "pe.table (block 2)".
  std::string what;
  /// The block whose PE this tensor is (0-based); -1 when the PE is shared by every block or the
  /// tensor is not a PE's. An initializer that reads per-block state (from_run) needs it.
  std::int64_t block = -1;

  /// Fans of a tensor following torch's convention (dim 1 is fan_in, dim 0 fan_out, times the
  /// receptive field); both 0 for tensors of fewer than 2 dimensions.
  static InitContext for_tensor(const torch::Tensor& tensor, std::string what,
                                const Layout* layout = nullptr, std::int64_t block = -1);
};

/// Fills a tensor in place. Randomness comes from torch's default generator, which the run seeds,
/// so the same manifest and seed give the same tensor.
class PELAB_API Initializer {
 public:
  virtual ~Initializer() = default;
  /// Fills `tensor` (no autograd is recorded). Throws pelab::Error when the tensor's shape does not
  /// suit this initializer (e.g. a fan-based init on a tensor without fans).
  virtual void fill(torch::Tensor& tensor, const InitContext& context) const = 0;
};

}  // namespace pelab
