#pragma once

#include <cstdint>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "pelab/base/export.h"

namespace pelab {

/// The two families of positional encoding (as xformers notes, RoPE "does not create the
/// embedding"): additive ones add an N x d table to the tokens; attention-side ones rotate the
/// queries and keys, add a [heads, N, N] bias to the attention logits, or (Shaw et al. 2018) add
/// query-dependent relative logits and relative values. A PE declares which hooks it implements
/// so that the model calls only those.
class PELAB_API PositionalEncoding : public torch::nn::Module {
 public:
  enum Hook : unsigned {
    kAdditive = 1u << 0,        // embed(x) adds a table
    kRotary = 1u << 1,          // rotate(q, k)
    kAttentionBias = 1u << 2,   // attention_bias()
    kRelativeKeys = 1u << 3,    // relative_logits(q)
    kRelativeValues = 1u << 4,  // relative_values(probabilities)
  };

  /// The bitwise OR of the hooks this PE implements.
  virtual unsigned hooks() const = 0;
  bool has_hook(Hook hook) const { return (hooks() & hook) != 0; }

  /// Additive hook: x is [batch, tokens, d_model]; returns x plus the encoding.
  virtual torch::Tensor embed(const torch::Tensor& x);
  /// Rotary hook: q and k are [batch, heads, tokens, head_dim]; returns them rotated.
  virtual std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                         const torch::Tensor& k);
  /// Bias hook: [heads, tokens, tokens], added to the attention logits before the softmax.
  virtual torch::Tensor attention_bias();
  /// Relative-key hook: q is [batch, heads, tokens, head_dim], already scaled by 1/sqrt(head_dim);
  /// returns [batch, heads, tokens, tokens] added to the logits (q_i . a_ij in Shaw et al.).
  virtual torch::Tensor relative_logits(const torch::Tensor& q);
  /// Relative-value hook: probabilities are [batch, heads, tokens, tokens] after the softmax;
  /// returns [batch, heads, tokens, head_dim] added to the attention's context (sum_j p_ij a_ij).
  virtual torch::Tensor relative_values(const torch::Tensor& probabilities);

  /// For probes: the N x d table of an additive PE (undefined if it has none).
  virtual torch::Tensor table();
  /// For probes: an N x N positional kernel, for PEs without a table. The default is the table's
  /// Gram matrix, or the bias averaged over heads, or undefined.
  virtual torch::Tensor kernel();
};

/// An additive PE whose whole state is one N x d table, learnable or fixed: the common base of
/// learned, sinusoidal and random tables.
class PELAB_API TablePositionalEncoding : public PositionalEncoding {
 public:
  unsigned hooks() const override { return kAdditive; }
  torch::Tensor embed(const torch::Tensor& x) override { return x + table_; }
  torch::Tensor table() override { return table_; }

 protected:
  /// Registers `table` as a parameter (the optimizer trains it) or as a buffer (fixed).
  torch::Tensor& set_table(torch::Tensor table, bool learnable);

 private:
  torch::Tensor table_;
};

}  // namespace pelab
