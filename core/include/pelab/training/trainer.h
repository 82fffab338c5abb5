#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/base/export.h"
#include "pelab/interfaces/params.h"
#include "pelab/interfaces/task.h"
#include "pelab/interfaces/trained_model.h"
#include "pelab/model/transformer_encoder.h"

namespace pelab {

class Collective;

/// The [train] section as train_schema() resolves it.
struct PELAB_API TrainConfig {
  /// The defaults of train_schema().
  TrainConfig();
  /// A resolved [train] section.
  static TrainConfig from_params(const Params& params);

  std::string optimizer;  // adamw | adam | sgd
  double lr;
  double weight_decay;
  double momentum;  // sgd only
  std::int64_t batch_size;
  std::int64_t epochs;
  std::int64_t eval_every;        // evaluate (and snapshot the PE) every k epochs
  std::int64_t checkpoint_every;  // 0: at every evaluation
  bool shuffle;
  std::int64_t eval_batch_size;
  /// The learning rate over training: constant, or a cosine or linear decay from lr to min_lr
  /// over the run's steps, after `warmup_epochs` of linear warm-up from 0 (fractions allowed).
  std::string lr_schedule;  // constant | cosine | linear
  double warmup_epochs;
  double min_lr;
  /// Training forward passes under bfloat16 autocast (ATen's CPU autocast lists: matrix products
  /// in bf16, reductions and the loss in fp32); parameters, gradients and AdamW stay fp32.
  /// Evaluation runs in the same precision.
  bool bf16_autocast;
  /// Whether evaluation keeps the model's dropout active: off, on (the paper's published code),
  /// or both (each split evaluated twice, the second as "<split>_dropout"). Evaluation restores
  /// the generator it draws from, so training is the same whichever is chosen.
  enum class EvalDropout { kOff, kOn, kBoth };
  EvalDropout eval_dropout;
  /// Where the model trains: "cpu", "cuda" or "cuda:N" (checked by build_run). The datasets stay
  /// in host memory and go to the device a batch at a time.
  std::string device;

 private:
  explicit TrainConfig(const Params& params);
};

/// Makes glibc keep freed memory in the heap for reuse instead of returning it to the kernel, so
/// that a loop of training steps does not page-fault its activations in again each step (the
/// Trainer calls it; benchmarks of training-like loops should too). Process-wide, idempotent.
PELAB_API void keep_freed_memory_for_reuse();

/// Trains a TransformerEncoder on a task's first split and evaluates it on every split, on the
/// configured device (the model is moved there). Randomness (shuffling, masks) comes from torch's
/// default CPU generator, seeded by the run; dropout on a GPU from the device's own.
///
/// With `ranks` of more than one rank the training is data-parallel: every rank holds the whole
/// model and the same batches, takes its share of each batch (Collective::share), and the
/// gradients, weighted by the shares, are summed over the ranks, so that a step is the
/// single-process step up to floating-point order. Evaluation is sharded the same way. Every
/// rank calls the same methods in the same order.
class PELAB_API Trainer {
 public:
  using Perturb = std::function<torch::Tensor(const torch::Tensor&)>;

  /// Loads and checks every split of `task`; `task_name` (the plugin's) names it in an error.
  Trainer(TransformerEncoder& model, Task& task, const TrainConfig& config,
          Collective* ranks = nullptr, const std::string& task_name = "");

  /// One pass over the training split; returns the mean training loss.
  double train_epoch();
  /// One optimizer step on a batch (inputs [batch, tokens, input_size], targets as the split's;
  /// for masked-token regression the batch's token masks [batch, tokens], drawn from the run's
  /// generator at the training split's mask ratio when undefined); returns the batch's mean loss.
  /// Throws pelab::Error when the loss is not finite. Data-parallel, every rank passes the whole
  /// batch and trains on its share.
  double train_step(const torch::Tensor& inputs, const torch::Tensor& targets,
                    const torch::Tensor& masks = {});
  /// The objective's metrics (loss and accuracy; or mse and r over the masked values) on every
  /// split, overall and per group.
  std::vector<MetricRow> evaluate(std::int64_t epoch);

  const TrainConfig& config() const { return config_; }
  const std::vector<std::string>& split_names() const { return split_names_; }
  const Dataset& dataset(const std::string& split) const { return datasets_.at(split); }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  std::int64_t steps_per_epoch() const;
  /// The learning rate of optimizer step `step` (0-based over the whole run) under the schedule.
  double learning_rate(std::int64_t step) const;
  /// The learning rate of the last step taken (lr before the first).
  double current_learning_rate() const {
    return learning_rate(std::max<std::int64_t>(0, step_ - 1));
  }
  /// After loading a checkpoint: the schedule continues from the end of that epoch.
  void resume_after_epoch(std::int64_t completed_epochs) {
    step_ = completed_epochs * steps_per_epoch();
  }
  /// Data-parallel: gives every rank rank 0's parameters, buffers, optimizer state, generator
  /// state and step, so that a run rank 0 resumed (or a plugin that initialises differently per
  /// process) trains from one state. A no-op on one rank.
  void synchronize_ranks();

 private:
  std::vector<MetricRow> evaluate_classification(std::int64_t epoch, const std::string& split,
                                                 const Dataset& data);
  std::vector<MetricRow> evaluate_masked(std::int64_t epoch, const std::string& split,
                                         const Dataset& data);
  bool data_parallel() const;
  // Sums the ranks' gradients (bucketed) together with `loss`, this rank's share of the batch's
  // loss; returns the batch's loss.
  double all_reduce_gradients(double loss);
  // This rank's rows of a split of `rows` evaluated in batches; on one rank, all of them.
  std::pair<std::int64_t, std::int64_t> evaluation_share(std::int64_t rows) const;
  // Per-sample values of this rank's share [share, k] -> all of them [rows, k].
  torch::Tensor gather_samples(const torch::Tensor& local, std::int64_t rows) const;

  TransformerEncoder& model_;
  Task& task_;
  TrainConfig config_;
  Objective objective_;
  std::vector<std::string> split_names_;
  std::map<std::string, Dataset> datasets_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::int64_t step_ = 0;  // optimizer steps taken over the run
  Collective* ranks_ = nullptr;
  torch::Device device_;
};

}  // namespace pelab
