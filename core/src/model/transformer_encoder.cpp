#include "pelab/model/transformer_encoder.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/config/sections.h"
#include "pelab/model/batched_matmul.h"

namespace pelab {
namespace {

// The mask embedding's initial scale: small beside the projected inputs, as BERT's and MAE's.
constexpr double kMaskEmbeddingInitStd = 0.02;

// ATen's linear fuses the bias into the GEMM (one addmm) for 2D and contiguous 3D inputs, where
// the C++ frontend's Linear::forward (LibTorch 1.13) runs a matmul and then a separate add.
torch::Tensor linear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  return torch::linear(x, layer->weight, layer->bias);
}

// Dropout that is not there at p = 0: no copy, and no draw from the run's generator, so that a
// model without dropout trains exactly as it did before dropout existed.
torch::Tensor maybe_dropout(const torch::Tensor& x, double p, bool training) {
  return p > 0.0 && training ? torch::dropout(x, p, /*train=*/true) : x;
}

double dropout_probability(const Params& params, const std::string& name) {
  const double p = params.real(name);
  PELAB_CHECK(p < 1.0, "model.{} = {} would drop every value; give a probability below 1", name, p);
  return p;
}

}  // namespace

ModelConfig::ModelConfig() : ModelConfig(model_schema().defaults()) {}

ModelConfig ModelConfig::from_params(const Params& params) {
  return ModelConfig(params);
}

ModelConfig::ModelConfig(const Params& params)
    : layers(params.integer("layers")),
      d_model(params.integer("d_model")),
      heads(params.integer("heads")),
      mlp_ratio(params.integer("mlp_ratio")),
      norm(params.string("norm") == "pre" ? Norm::kPre : Norm::kPost),
      final_gelu(params.boolean("final_gelu")),
      pe_placement(params.string("pe_placement") == "input"    ? Placement::kInputOnly
                   : params.string("pe_placement") == "shared" ? Placement::kShared
                                                               : Placement::kEveryBlock),
      readout(params.string("readout") == "mean" ? Readout::kMean : Readout::kLastToken),
      pe_dropout(dropout_probability(params, "pe_dropout")),
      attention_dropout(dropout_probability(params, "attention_dropout")),
      residual_dropout(dropout_probability(params, "residual_dropout")) {}

SelfAttentionImpl::SelfAttentionImpl(std::int64_t d_model, std::int64_t heads, double dropout)
    : d_model_(d_model), heads_(heads), dropout_(dropout) {
  PELAB_CHECK(heads > 0 && d_model % heads == 0, "heads ({}) must divide d_model ({})", heads,
              d_model);
  // torch::nn::MultiheadAttention's initialisation: Xavier-uniform fused in-projection, zero
  // biases, the out-projection's weight as a default Linear.
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * d_model, d_model}));
  in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * d_model}));
  out_proj = register_module("out_proj", torch::nn::Linear(d_model, d_model));
  torch::nn::init::xavier_uniform_(in_proj_weight);
  torch::nn::init::zeros_(out_proj->bias);
}

torch::Tensor SelfAttentionImpl::forward(const torch::Tensor& x, PositionalEncoding* pe,
                                         torch::Tensor* weights) {
  const std::int64_t batch = x.size(0);
  const std::int64_t tokens = x.size(1);
  const std::int64_t head_dim = d_model_ / heads_;

  // One GEMM for q, k and v; then [batch, heads, tokens, head_dim] views. Unbinding (rather than
  // indexing three times) makes backward write the three gradients into one tensor once, not
  // into three zero-filled copies of it that are then summed; unbinding the q/k/v axis where the
  // GEMM's output has it (rather than after a permute) makes that tensor the GEMM's layout, so
  // the view's backward needs no further copy.
  const std::vector<torch::Tensor> qkv = torch::linear(x, in_proj_weight, in_proj_bias)
                                             .view({batch, tokens, 3, heads_, head_dim})
                                             .unbind(2);
  torch::Tensor q = qkv[0].transpose(1, 2);
  torch::Tensor k = qkv[1].transpose(1, 2);
  const torch::Tensor v = qkv[2].transpose(1, 2);
  if (pe != nullptr && pe->has_hook(PositionalEncoding::kRotary)) {
    std::tie(q, k) = pe->rotate(q, k);
  }
  // Scaling the [tokens, tokens] logits rather than the [tokens, head_dim] queries is head_dim /
  // tokens times less element-wise work (10x for the paper's model), forward and backward.
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  torch::Tensor logits = batched_matmul(q, k.transpose(-2, -1)).mul_(scale);
  if (pe != nullptr && pe->has_hook(PositionalEncoding::kRelativeKeys)) {
    logits = logits + pe->relative_logits(q * scale);
  }
  if (pe != nullptr && pe->has_hook(PositionalEncoding::kAttentionBias)) {
    logits = logits + pe->attention_bias();
  }
  torch::Tensor probabilities = torch::softmax(logits, -1);
  if (weights != nullptr) *weights = probabilities.detach();
  probabilities = maybe_dropout(probabilities, dropout_, is_training());
  torch::Tensor context = batched_matmul(probabilities, v);
  if (pe != nullptr && pe->has_hook(PositionalEncoding::kRelativeValues)) {
    context = context + pe->relative_values(probabilities);
  }
  return linear(context.transpose(1, 2).reshape({batch, tokens, d_model_}), out_proj);
}

EncoderBlockImpl::EncoderBlockImpl(const ModelConfig& config) : config_(config) {
  attention = register_module(
      "attention", SelfAttention(config.d_model, config.heads, config.attention_dropout));
  linear1 = register_module("linear1",
                            torch::nn::Linear(config.d_model, config.d_model * config.mlp_ratio));
  linear2 = register_module("linear2",
                            torch::nn::Linear(config.d_model * config.mlp_ratio, config.d_model));
  norm1 =
      register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.d_model})));
  norm2 =
      register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.d_model})));
}

torch::Tensor EncoderBlockImpl::forward(const torch::Tensor& x, PositionalEncoding* pe,
                                        torch::Tensor* weights) {
  // The residual stream in the parameters' precision: under bf16 autocast the projections return
  // bf16, which an additive PE's fp32 table turns back into fp32 but a PE that adds nothing
  // (none, rotary, attention biases) does not, and LibTorch 1.13's LayerNorm refuses bf16 input
  // with fp32 weights. A no-op in fp32, and where an additive PE has already done it.
  const torch::Tensor stream = x.to(norm1->weight.scalar_type());
  auto mlp = [&](const torch::Tensor& h) {
    torch::Tensor out = linear(torch::gelu(linear(h, linear1)), linear2);
    return config_.final_gelu ? torch::gelu(out) : out;
  };
  auto branch = [&](const torch::Tensor& out) {
    return maybe_dropout(out, config_.residual_dropout, is_training());
  };
  if (config_.norm == ModelConfig::Norm::kPost) {
    const torch::Tensor h =
        norm1->forward(stream + branch(attention->forward(stream, pe, weights)));
    return norm2->forward(h + branch(mlp(h)));
  }
  const torch::Tensor h = stream + branch(attention->forward(norm1->forward(stream), pe, weights));
  return h + branch(mlp(norm2->forward(h)));
}

TransformerEncoder::TransformerEncoder(const ModelConfig& config, std::int64_t input_size,
                                       const Objective& objective,
                                       const PositionalEncodingFactory& make_pe)
    : config_(config), objective_(objective) {
  PELAB_CHECK(objective.outputs > 0, "the task's objective declares {} outputs; it needs >= 1",
              objective.outputs);
  PELAB_CHECK(config.layers > 0, "a model needs at least one block");
  input_projection_ =
      register_module("input_projection", torch::nn::Linear(input_size, config.d_model));

  ModelShape shape{config.d_model, config.heads, config.layers, 0};
  const bool one_pe = config.pe_placement != ModelConfig::Placement::kEveryBlock;
  if (one_pe && make_pe) {
    shape.block = config.pe_placement == ModelConfig::Placement::kShared ? -1 : 0;
    pes_.push_back(make_pe(shape));
    register_module("pe", pes_.back());
  }
  for (std::int64_t block = 0; block < config.layers; ++block) {
    if (!one_pe && make_pe) {
      shape.block = block;
      pes_.push_back(make_pe(shape));
      register_module("pe" + std::to_string(block), pes_.back());
    }
    blocks_.push_back(register_module("block" + std::to_string(block), EncoderBlock(config)));
  }
  for (const auto& pe : pes_)
    PELAB_INTERNAL_ASSERT(pe != nullptr, "a PE factory returned null");
  head_ = register_module("head", torch::nn::Linear(config.d_model, objective.outputs));
  if (objective.masked()) {
    // A masked token carries no input: one learned vector stands for all of them (BERT's [MASK],
    // MAE's mask token), so that only its PE tells the model which token it has to predict.
    // Registered last, so that a classification model draws its initial weights as before.
    mask_embedding_ = register_parameter(
        "mask_embedding", torch::randn({config.d_model}).mul_(kMaskEmbeddingInitStd));
  }
}

PositionalEncoding* TransformerEncoder::pe_for_block(std::int64_t block) const {
  if (pes_.empty()) return nullptr;
  switch (config_.pe_placement) {
    case ModelConfig::Placement::kEveryBlock:
      return pes_.at(block).get();
    case ModelConfig::Placement::kInputOnly:
      return block == 0 ? pes_.front().get() : nullptr;
    case ModelConfig::Placement::kShared:
      return pes_.front().get();
  }
  return nullptr;
}

torch::Tensor TransformerEncoder::encode(
    const torch::Tensor& inputs, const std::function<torch::Tensor(const torch::Tensor&)>& perturb,
    const torch::Tensor& mask, std::vector<torch::Tensor>* weights) {
  torch::Tensor x = linear(inputs, input_projection_);
  if (mask.defined()) {
    PELAB_CHECK(objective_.masked(), "a token mask was given to a classification model");
    PELAB_CHECK(mask.dim() == 2 && mask.size(0) == inputs.size(0) &&
                    mask.size(1) == inputs.size(1) && mask.scalar_type() == torch::kBool,
                "the token mask must be bool [batch={}, tokens={}]", inputs.size(0),
                inputs.size(1));
    x = torch::where(mask.unsqueeze(-1), mask_embedding_.to(x.scalar_type()), x);
  }
  if (perturb) x = perturb(x);
  for (std::size_t block = 0; block < blocks_.size(); ++block) {
    PositionalEncoding* pe = pe_for_block(static_cast<std::int64_t>(block));
    if (pe != nullptr && pe->has_hook(PositionalEncoding::kAdditive))
      x = maybe_dropout(pe->embed(x), config_.pe_dropout, is_training());
    torch::Tensor block_weights;
    x = blocks_[block]->forward(x, pe, weights ? &block_weights : nullptr);
    if (weights) weights->push_back(block_weights);
  }
  return x;
}

torch::Tensor TransformerEncoder::forward(
    const torch::Tensor& inputs, const std::function<torch::Tensor(const torch::Tensor&)>& perturb,
    const torch::Tensor& mask) {
  if (objective_.masked()) {
    PELAB_CHECK(mask.defined(),
                "a masked-token model needs the token mask: which tokens' inputs it must predict");
    return linear(encode(inputs, perturb, mask, nullptr), head_);
  }
  const torch::Tensor encoded = encode(inputs, perturb, mask, nullptr);
  const torch::Tensor readout = config_.readout == ModelConfig::Readout::kLastToken
                                    ? encoded.select(1, encoded.size(1) - 1)
                                    : encoded.mean(1);
  return torch::log_softmax(linear(readout, head_), -1);
}

std::vector<torch::Tensor> TransformerEncoder::attention_maps(const torch::Tensor& inputs,
                                                              const torch::Tensor& mask) {
  std::vector<torch::Tensor> weights;
  torch::NoGradGuard no_grad;
  encode(inputs, {}, mask, &weights);
  return weights;
}

PESnapshot TransformerEncoder::snapshot(std::int64_t epoch) const {
  torch::NoGradGuard no_grad;
  PESnapshot snapshot;
  snapshot.epoch = epoch;
  std::vector<torch::Tensor> tables, kernels;
  for (const auto& pe : pes_) {
    const torch::Tensor table = pe->table();
    if (table.defined()) {
      tables.push_back(table.detach().to(torch::kCPU, torch::kFloat32).clone());
      continue;  // a probe derives any kernel it needs from the table
    }
    const torch::Tensor kernel = pe->kernel();
    if (kernel.defined()) {
      kernels.push_back(kernel.detach().to(torch::kCPU, torch::kFloat32).clone());
    }
  }
  // One entry per distinct PE: per block, or a single one when it is shared or input-only.
  if (!tables.empty() && tables.size() == pes_.size()) snapshot.tables = torch::stack(tables);
  if (!kernels.empty() && kernels.size() == pes_.size()) snapshot.kernels = torch::stack(kernels);
  // Every learnable tensor, so that what a probe or a reader of the .npy files needs (learned
  // positions, frequencies, generators) is not only in checkpoint.pt. The PEs of one run are one
  // plugin, so they name the same parameters; one that differs in shape is left out.
  std::map<std::string, std::vector<torch::Tensor>> by_name;
  for (const auto& pe : pes_) {
    for (const auto& parameter : pe->named_parameters())
      by_name[parameter.key()].push_back(
          parameter.value().detach().to(torch::kCPU, torch::kFloat32).clone());
  }
  for (const auto& entry : by_name) {
    const std::vector<torch::Tensor>& values = entry.second;
    const bool same_shape = std::all_of(values.begin(), values.end(), [&](const torch::Tensor& v) {
      return v.sizes() == values.front().sizes();
    });
    if (values.size() == pes_.size() && same_shape)
      snapshot.tensors[entry.first] = torch::stack(values);
  }
  return snapshot;
}

std::int64_t TransformerEncoder::parameter_count() const {
  std::int64_t count = 0;
  for (const auto& parameter : parameters())
    count += parameter.numel();
  return count;
}

}  // namespace pelab
