#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/export.h"
#include "pelab/layout.h"

namespace pelab {

class TransformerEncoder;
class Task;
class Registry;

/// The positional encodings of every block at one moment of training.
struct PELAB_API PESnapshot {
  std::int64_t epoch = 0;
  /// [pes, tokens, d_model] tables of additive PEs, or undefined. One entry per distinct PE: per
  /// block, or a single one when it is shared or input-only.
  torch::Tensor tables;
  /// [pes, tokens, tokens] positional kernels of PEs without a table, or undefined.
  torch::Tensor kernels;
};

/// What a probe may read. The snapshots are in training order: the first is the initial PE.
struct PELAB_API ProbeContext {
  const Layout& layout;
  const std::vector<PESnapshot>& snapshots;
  TransformerEncoder* model = nullptr;  // the trained model, when available
  Task* task = nullptr;                 // the task, to read its splits
  Registry* registry = nullptr;         // to build reference PEs
};

/// Named scalars (aggregated over seeds by reports) and arrays (written as .npy), and a one-line
/// note for the reader, e.g. why a probe has nothing to report for a PE without a table.
struct PELAB_API ProbeResult {
  std::map<std::string, double> scalars;
  std::map<std::string, torch::Tensor> arrays;
  std::string note;
};

/// Measures something about a trained model's positional encodings.
class PELAB_API Probe {
 public:
  virtual ~Probe() = default;
  virtual ProbeResult run(const ProbeContext& context) = 0;
};

}  // namespace pelab
