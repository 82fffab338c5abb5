#include "pelab/interfaces/positional_encoding.h"

#include <torch/torch.h>

#include "pelab/base/error.h"

namespace pelab {

torch::Tensor PositionalEncoding::embed(const torch::Tensor& x) {
  PELAB_INTERNAL_ASSERT(!has_hook(kAdditive), "{} declares the additive hook but lacks embed()",
                        name());
  return x;
}

std::pair<torch::Tensor, torch::Tensor> PositionalEncoding::rotate(const torch::Tensor& q,
                                                                   const torch::Tensor& k) {
  PELAB_INTERNAL_ASSERT(!has_hook(kRotary), "{} declares the rotary hook but lacks rotate()",
                        name());
  return {q, k};
}

torch::Tensor PositionalEncoding::attention_bias() {
  PELAB_INTERNAL_ASSERT(!has_hook(kAttentionBias),
                        "{} declares the bias hook but lacks attention_bias()", name());
  return {};
}

torch::Tensor PositionalEncoding::relative_logits(const torch::Tensor&) {
  PELAB_INTERNAL_ASSERT(!has_hook(kRelativeKeys),
                        "{} declares the relative-key hook but lacks relative_logits()", name());
  return {};
}

torch::Tensor PositionalEncoding::relative_values(const torch::Tensor&) {
  PELAB_INTERNAL_ASSERT(!has_hook(kRelativeValues),
                        "{} declares the relative-value hook but lacks relative_values()", name());
  return {};
}

torch::Tensor PositionalEncoding::table() {
  return {};
}

torch::Tensor PositionalEncoding::kernel() {
  torch::NoGradGuard no_grad;
  torch::Tensor t = table();
  if (t.defined()) return torch::matmul(t, t.transpose(0, 1));
  if (has_hook(kAttentionBias)) return attention_bias().mean(0);
  return {};
}

torch::Tensor& TablePositionalEncoding::set_table(torch::Tensor table, bool learnable) {
  PELAB_INTERNAL_ASSERT(!table_.defined(), "{}: the table is set twice", name());
  table_ = learnable ? register_parameter("table", std::move(table))
                     : register_buffer("table", std::move(table));
  return table_;
}

}  // namespace pelab
