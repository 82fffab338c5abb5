#pragma once

// A training workload for benchmarks: a manifest's task, model and trainer, built as `pelab run`
// builds them, with a fixed batch; and the GEMMs one training step performs.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/config/manifest.h"
#include "pelab/interfaces/task.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "pelab/training/trainer.h"

namespace pelab::bench {

/// Matrix products of a training step: `repeat` calls (one per block), each a batch of `batch`
/// products of [m, k] x [k, n] (batch > 1 for attention, one product per sequence and head).
struct Gemm {
  std::string what;  // "block qkv forward", ...
  std::int64_t m = 0, k = 0, n = 0;
  std::int64_t batch = 1, repeat = 1;
  double flops() const { return 2.0 * static_cast<double>(m * k * n * batch * repeat); }
};

/// The GEMMs of one step (forward and backward, no recomputation) of `config`'s encoder on a batch
/// of `batch` sequences of `tokens` tokens: the "useful FLOPs" of a step. Element-wise work
/// (LayerNorm, GELU, softmax, the optimizer) is not counted.
std::vector<Gemm> training_step_gemms(const ModelConfig& config, std::int64_t batch,
                                      std::int64_t tokens, std::int64_t input_size,
                                      std::int64_t num_classes);
double total_flops(const std::vector<Gemm>& gemms);

class TrainingWorkload {
 public:
  /// Reads `manifest` (its first run) with `overrides` (`--set` strings, e.g. another PE), seeds
  /// torch with the run's seed and builds everything; the batch is the first `train.batch_size`
  /// samples of the task's training split.
  TrainingWorkload(const std::string& manifest, Registry& registry,
                   const std::vector<std::string>& overrides = {});

  double step() { return trainer_->train_step(inputs_, targets_); }
  void evaluate() { trainer_->evaluate(0); }

  TransformerEncoder& model() { return *model_; }
  const Task& task() const { return *task_; }
  Trainer& trainer() { return *trainer_; }
  const RunConfig& config() const { return config_; }
  const torch::Tensor& inputs() const { return inputs_; }
  const torch::Tensor& targets() const { return targets_; }
  std::vector<Gemm> gemms() const;
  /// The evaluation work: how many samples one evaluate() forwards.
  std::int64_t evaluation_samples() const;

 private:
  RunConfig config_;
  std::shared_ptr<Task> task_;
  std::shared_ptr<TransformerEncoder> model_;
  std::unique_ptr<Trainer> trainer_;
  torch::Tensor inputs_, targets_;
};

/// benchmarks/workloads/<name>.toml in the source tree.
std::string workload_manifest(const std::string& name);

}  // namespace pelab::bench
