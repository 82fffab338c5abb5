#include "training_workload.h"

#include <filesystem>

#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/runs/run.h"

namespace pelab::bench {

std::vector<Gemm> training_step_gemms(const ModelConfig& config, std::int64_t batch,
                                      std::int64_t tokens, std::int64_t input_size,
                                      std::int64_t num_classes) {
  const std::int64_t rows = batch * tokens;
  const std::int64_t d = config.d_model;
  const std::int64_t hidden = d * config.mlp_ratio;
  const std::int64_t head_dim = d / config.heads;
  std::vector<Gemm> gemms;
  // A linear layer [rows, in] -> [rows, out]: forward, input gradient (unless its input is the
  // data), weight gradient.
  auto linear = [&](const std::string& what, std::int64_t m, std::int64_t in, std::int64_t out,
                    std::int64_t repeat, bool input_gradient) {
    gemms.push_back({what + " forward", m, in, out, 1, repeat});
    if (input_gradient) gemms.push_back({what + " input grad", m, out, in, 1, repeat});
    gemms.push_back({what + " weight grad", out, m, in, 1, repeat});
  };
  const std::int64_t blocks = config.layers;
  linear("input projection", rows, input_size, d, 1, /*input_gradient=*/false);
  linear("block qkv", rows, d, 3 * d, blocks, true);
  linear("block out proj", rows, d, d, blocks, true);
  linear("block mlp1", rows, d, hidden, blocks, true);
  linear("block mlp2", rows, hidden, d, blocks, true);
  // Attention, per sequence and head: scores q k^T and context p v, and their four gradients.
  const std::int64_t b = batch * config.heads;
  gemms.push_back({"attention scores forward", tokens, head_dim, tokens, b, blocks});
  gemms.push_back({"attention context forward", tokens, tokens, head_dim, b, blocks});
  gemms.push_back({"attention grad q", tokens, tokens, head_dim, b, blocks});
  gemms.push_back({"attention grad k", tokens, tokens, head_dim, b, blocks});
  gemms.push_back({"attention grad probabilities", tokens, head_dim, tokens, b, blocks});
  gemms.push_back({"attention grad v", tokens, tokens, head_dim, b, blocks});
  // The head reads one d-vector per sequence (the last token, or the mean over tokens).
  linear("head", batch, d, num_classes, 1, true);
  return gemms;
}

double total_flops(const std::vector<Gemm>& gemms) {
  double flops = 0.0;
  for (const auto& gemm : gemms)
    flops += gemm.flops();
  return flops;
}

TrainingWorkload::TrainingWorkload(const std::string& manifest, Registry& registry,
                                   const std::vector<std::string>& overrides) {
  const Manifest parsed = Manifest::from_file(manifest, registry, overrides);
  PELAB_CHECK(!parsed.runs().empty(), "{} defines no run", manifest);
  config_ = parsed.runs().front();
  // As `pelab run` builds a run: the seed, train.device's check, the task, the model, the trainer.
  BuiltRun run = build_run(config_, registry);
  task_ = std::move(run.task);
  model_ = std::move(run.model);
  trainer_ = std::move(run.trainer);
  const TrainConfig train = TrainConfig::from_params(config_.train);
  const Dataset& data = trainer_->dataset(trainer_->split_names().front());
  PELAB_CHECK(data.size() >= train.batch_size,
              "{}: the training split has {} samples, fewer than "
              "one batch of {}",
              manifest, data.size(), train.batch_size);
  // The batch lives where the model does, as a PyTorch script would keep it: on a GPU the step
  // then times the device's work, not the copy of a batch from the host.
  const torch::Device device = model_->parameters().front().device();
  inputs_ = data.inputs.slice(0, 0, train.batch_size).contiguous().to(device);
  targets_ = data.targets.slice(0, 0, train.batch_size).contiguous().to(device);
}

std::vector<Gemm> TrainingWorkload::gemms() const {
  return training_step_gemms(ModelConfig::from_params(config_.model), inputs_.size(0),
                             inputs_.size(1), inputs_.size(2), task_->objective().outputs);
}

std::int64_t TrainingWorkload::evaluation_samples() const {
  std::int64_t samples = 0;
  for (const auto& split : trainer_->split_names())
    samples += trainer_->dataset(split).size();
  return samples;
}

std::string workload_manifest(const std::string& name) {
  const std::string relative = "benchmarks/workloads/" + name + ".toml";
  const std::string in_source_tree = std::string(PELAB_SOURCE_DIR) + "/" + relative;
  // A build copied to another machine (a GPU host) runs from a checkout elsewhere: its root.
  if (!std::filesystem::exists(in_source_tree) && std::filesystem::exists(relative))
    return relative;
  return in_source_tree;
}

}  // namespace pelab::bench
