#pragma once

// Helpers shared by the probe plugin tests: snapshots of hand-made PE tables, random rotations,
// and a small untrained model of the marker task for the probes that read a model.

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "pelab/interfaces/probe.h"
#include "pelab/interfaces/task.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"

namespace pelab::test {

/// A snapshot at `epoch` of the blocks' tables (one [N, d] tensor per block), in float32.
inline PESnapshot snapshot(std::int64_t epoch, const std::vector<torch::Tensor>& tables) {
  PESnapshot s;
  s.epoch = epoch;
  s.tables = torch::stack(tables).to(torch::kFloat32);
  return s;
}

/// A snapshot at epoch 0 of the blocks' tables.
inline PESnapshot snapshot(const std::vector<torch::Tensor>& tables) {
  return snapshot(0, tables);
}

/// A rotary PE's snapshot at epoch 0: no table, a random symmetric kernel per block, and its
/// learned positions (one [N, k] tensor per block) as the parameter "positions".
inline PESnapshot rotary_snapshot(const std::vector<torch::Tensor>& positions) {
  PESnapshot s;
  const std::int64_t tokens = positions.front().size(0);
  const torch::Tensor noise =
      torch::randn({static_cast<std::int64_t>(positions.size()), tokens, tokens});
  s.kernels = noise + noise.transpose(1, 2);
  s.tensors["positions"] = torch::stack(positions).to(torch::kFloat32);
  return s;
}

/// A random orthogonal d x d matrix (QR of a Gaussian matrix).
inline torch::Tensor rotation(std::int64_t d) {
  return std::get<0>(torch::linalg_qr(torch::randn({d, d}, torch::kFloat64)));
}

/// A model of the marker task: 2 blocks of width 8 with `pe_plugin` (its defaults) in each,
/// untrained, its weights drawn after torch::manual_seed(seed).
struct MarkerModel {
  std::shared_ptr<Task> task;
  Layout layout;
  std::shared_ptr<TransformerEncoder> model;
};
inline MarkerModel marker_model(Registry& registry, const std::string& pe_plugin,
                                std::int64_t tokens, std::int64_t test_samples, std::int64_t heads,
                                std::uint64_t seed) {
  torch::manual_seed(seed);
  PluginSpec task = registry.default_spec(PluginKind::kTask, "marker_position");
  task.params.set("tokens", tokens);
  task.params.set("train_samples", std::int64_t{16});
  task.params.set("test_samples", test_samples);
  MarkerModel out;
  out.task = registry.create_task(task);
  out.layout = out.task->layout();
  ModelConfig config;
  config.layers = 2;
  config.d_model = 8;
  config.heads = heads;
  const PluginSpec pe = registry.default_spec(PluginKind::kPositionalEncoding, pe_plugin);
  out.model = std::make_shared<TransformerEncoder>(
      config, out.task->input_size(), out.task->objective(), [&](const ModelShape& shape) {
        return registry.create_positional_encoding(pe, out.layout, shape);
      });
  return out;
}

}  // namespace pelab::test
