#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>

#include "pelab/base/export.h"
#include "pelab/interfaces/params.h"
#include "pelab/interfaces/positional_encoding.h"
#include "pelab/interfaces/probe.h"
#include "pelab/interfaces/task.h"
#include "pelab/plugins/plugin.h"

namespace pelab {

/// The encoder's architecture: the [model] section as model_schema() resolves it, whose defaults
/// are the paper's model.
struct PELAB_API ModelConfig {
  enum class Norm { kPost, kPre };
  enum class Placement { kEveryBlock, kInputOnly, kShared };
  enum class Readout { kLastToken, kMean };

  /// The defaults of model_schema().
  ModelConfig();
  /// A resolved [model] section.
  static ModelConfig from_params(const Params& params);

  std::int64_t layers;
  std::int64_t d_model;
  std::int64_t heads;
  std::int64_t mlp_ratio;
  Norm norm;
  /// GELU after the MLP's second linear as well as its first (the paper's model has both).
  bool final_gelu;
  /// Each block its own PE at its input (the paper), one PE at the input only, or one PE shared.
  Placement pe_placement;
  Readout readout;
  /// Dropout probabilities (0, off, in the paper's model), applied only while the model is in
  /// training mode. pe_dropout: on the tokens right after an additive PE is added (in every block
  /// that adds one: the authors' fixed sinusoidal PEs return Dropout(x + pe)); attention_dropout:
  /// on the attention probabilities; residual_dropout: on the output of each sublayer (attention,
  /// MLP) before it joins the residual stream.
  double pe_dropout;
  double attention_dropout;
  double residual_dropout;

 private:
  explicit ModelConfig(const Params& params);
};

/// Self-attention with torch::nn::MultiheadAttention's semantics and default initialisation:
/// one fused [3d, d] in-projection with bias, scaled dot product, an out-projection; plus the
/// attention-side PE hooks (rotate q and k, add a logit bias).
class PELAB_API SelfAttentionImpl : public torch::nn::Module {
 public:
  SelfAttentionImpl(std::int64_t d_model, std::int64_t heads, double dropout = 0.0);

  /// x: [batch, tokens, d_model]. `pe` may be null. When `weights` is not null it receives the
  /// attention probabilities [batch, heads, tokens, tokens] (before dropout).
  torch::Tensor forward(const torch::Tensor& x, PositionalEncoding* pe,
                        torch::Tensor* weights = nullptr);

  std::int64_t heads() const { return heads_; }
  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};

 private:
  std::int64_t d_model_;
  std::int64_t heads_;
  double dropout_;
};
TORCH_MODULE(SelfAttention);

/// One encoder block: attention and a GELU MLP with residuals and LayerNorms (post- or pre-norm).
class PELAB_API EncoderBlockImpl : public torch::nn::Module {
 public:
  explicit EncoderBlockImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& x, PositionalEncoding* pe,
                        torch::Tensor* weights = nullptr);

  SelfAttention attention{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};

 private:
  ModelConfig config_;
};
TORCH_MODULE(EncoderBlock);

/// Builds the PE of one block (or the shared one) for a model shape.
using PositionalEncodingFactory =
    std::function<std::shared_ptr<PositionalEncoding>(const ModelShape&)>;

/// The paper's encoder-only transformer: Linear(input, d), blocks with a PE at their input, and a
/// head that follows the task's objective: readout, Linear(d, classes), log-softmax for
/// classification; a learned mask embedding in place of the masked tokens and Linear(d, outputs)
/// per token for masked-token regression.
class PELAB_API TransformerEncoder : public torch::nn::Module {
 public:
  TransformerEncoder(const ModelConfig& config, std::int64_t input_size, const Objective& objective,
                     const PositionalEncodingFactory& make_pe);

  /// inputs: [batch, tokens, input_size] -> classification: log-probabilities [batch, classes];
  /// masked-token regression: predictions [batch, tokens, outputs] for every token, where the
  /// tokens of `mask` ([batch, tokens] bool, true = masked; required) were replaced by the mask
  /// embedding. `perturb`, when set, transforms the embedded tokens before the first block (e.g.
  /// evaluation noise).
  torch::Tensor forward(const torch::Tensor& inputs,
                        const std::function<torch::Tensor(const torch::Tensor&)>& perturb = {},
                        const torch::Tensor& mask = {});

  /// The attention probabilities of every block for `inputs`: [blocks][batch, heads, N, N]. `mask`
  /// as for forward(); with masked-token regression and no mask, no token is masked.
  std::vector<torch::Tensor> attention_maps(const torch::Tensor& inputs,
                                            const torch::Tensor& mask = {});

  /// The distinct PE instances (one per block, or one).
  const std::vector<std::shared_ptr<PositionalEncoding>>& positional_encodings() const {
    return pes_;
  }
  /// The PE seen by block `block`.
  PositionalEncoding* pe_for_block(std::int64_t block) const;
  /// Copies of every block's PE table and kernel, for probes and .npy snapshots.
  PESnapshot snapshot(std::int64_t epoch) const;

  const ModelConfig& config() const { return config_; }
  const Objective& objective() const { return objective_; }
  std::int64_t parameter_count() const;

 private:
  torch::Tensor encode(const torch::Tensor& inputs,
                       const std::function<torch::Tensor(const torch::Tensor&)>& perturb,
                       const torch::Tensor& mask, std::vector<torch::Tensor>* weights);

  ModelConfig config_;
  Objective objective_;
  torch::nn::Linear input_projection_{nullptr};
  std::vector<EncoderBlock> blocks_;
  std::vector<std::shared_ptr<PositionalEncoding>> pes_;
  torch::nn::Linear head_{nullptr};
  torch::Tensor mask_embedding_;  // [d_model]; masked-token regression only
};

}  // namespace pelab
