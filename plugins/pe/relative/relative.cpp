// Relative position representations (Shaw, Uszkoreit and Vaswani 2018, "Self-Attention with
// Relative Position Representations").
//
// Two learned tables of head_dim-vectors, a^K and a^V, indexed by the clipped offset
// clip(j - i, -k, k) between query i and key j (k = max_distance), shared by all heads of the
// block as in the paper. They enter the attention as (Shaw's eqs. 3 and 4)
//   e_ij = q_i . (k_j + a^K_ij) / sqrt(head_dim)     z_i = sum_j p_ij (v_j + a^V_ij),
// i.e. through the relative-key hook (q_i . a^K_ij with the scaled query) and the relative-value
// hook (sum_j p_ij a^V_ij). Offsets beyond k share the embedding of +-k, so the tables have 2k + 1
// rows and the model can tell apart exactly the offsets within the window.
//
// causal = true keeps only the offsets j - i <= 0 (k + 1 rows): a key after its query gets no
// relative term at all (a^K_ij = a^V_ij = 0 for j > i). pelab's encoder has no causal mask, so this
// does NOT stop a token from attending to later tokens; it only makes the relative signal
// one-sided, as in a decoder's relative attention.

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

class RelativePositionalEncoding : public PositionalEncoding {
 public:
  RelativePositionalEncoding(const Layout& layout, const ModelShape& shape,
                             std::int64_t max_distance, bool values, bool causal,
                             const Initializer& initializer)
      : tokens_(layout.tokens), head_dim_(shape.d_model / shape.heads), values_(values) {
    // No offset between N tokens exceeds N - 1: a larger k would only add rows that are never
    // read (k = 1e8 once asked for 12.8 GB on 16 tokens), so the table stops at N - 1.
    max_distance = std::min(max_distance, std::max<std::int64_t>(tokens_ - 1, 0));
    const std::int64_t rows = causal ? max_distance + 1 : 2 * max_distance + 1;
    const std::string block =
        shape.block < 0 ? std::string("shared") : fmt::format("block {}", shape.block);
    keys_ = register_parameter("keys",
                               make_table(rows, fmt::format("pe.keys ({})", block), initializer));
    if (values_) {
      values_table_ = register_parameter(
          "values", make_table(rows, fmt::format("pe.values ({})", block), initializer));
    }
    // index[i, j] = clip(j - i) + k: row 0 is offset -k, row k offset 0, row 2k offset +k.
    const torch::Tensor position = torch::arange(tokens_, torch::kLong);
    const torch::Tensor offset = position.unsqueeze(0) - position.unsqueeze(1);  // j - i
    index_ = register_buffer("index",
                             offset.clamp(-max_distance, causal ? 0 : max_distance) + max_distance);
    if (causal) mask_ = register_buffer("mask", (offset <= 0).to(torch::kFloat32));
  }

  unsigned hooks() const override { return kRelativeKeys | (values_ ? kRelativeValues : 0u); }

  // q: [batch, heads, N, head_dim], already scaled. logits[b, h, i, j] = q[b, h, i] . a^K[i, j].
  torch::Tensor relative_logits(const torch::Tensor& q) override {
    check_shape(q, "q");
    const torch::Tensor by_row = torch::matmul(q, keys_.t());  // [B, H, N, rows]
    const auto sizes = q.sizes();
    torch::Tensor logits =
        torch::gather(by_row, -1, index_.expand({sizes[0], sizes[1], tokens_, tokens_}));
    return mask_.defined() ? logits * mask_ : logits;
  }

  // p: [batch, heads, N, N] attention probabilities -> sum_j p[b, h, i, j] a^V[i, j]: the
  // probabilities of each row are first summed per clipped offset, then mixed with a^V.
  torch::Tensor relative_values(const torch::Tensor& probabilities) override {
    PELAB_INTERNAL_ASSERT(values_, "relative_values() called with values = false");
    const auto sizes = probabilities.sizes();
    PELAB_INTERNAL_ASSERT(probabilities.dim() == 4 && sizes[2] == tokens_ && sizes[3] == tokens_,
                          "relative was built for {} tokens, got probabilities {}", tokens_,
                          fmt::join(sizes, "x"));
    const torch::Tensor p = mask_.defined() ? probabilities * mask_ : probabilities;
    const torch::Tensor per_offset =
        torch::zeros({sizes[0], sizes[1], tokens_, keys_.size(0)}, p.options())
            .scatter_add(-1, index_.expand({sizes[0], sizes[1], tokens_, tokens_}), p);
    return torch::matmul(per_offset, values_table_);
  }

  // No table and no bias: the kernel is the relative logit of an all-ones query (scaled like the
  // model's queries), K[i, j] = sum_d a^K[i, j, d] / sqrt(head_dim): a function of the clipped
  // offset j - i only.
  torch::Tensor kernel() override {
    torch::NoGradGuard no_grad;
    const torch::Tensor q = torch::ones({1, 1, tokens_, head_dim_}, keys_.options()) /
                            std::sqrt(static_cast<double>(head_dim_));
    return relative_logits(q)[0][0];
  }

 private:
  // The rows are offsets, not tokens, so the initializer gets no token layout.
  torch::Tensor make_table(std::int64_t rows, const std::string& what,
                           const Initializer& initializer) const {
    torch::Tensor table = torch::empty({rows, head_dim_});
    torch::NoGradGuard no_grad;
    initializer.fill(table, InitContext::for_tensor(table, what));
    return table;
  }

  void check_shape(const torch::Tensor& x, const char* name) const {
    PELAB_INTERNAL_ASSERT(x.dim() == 4 && x.size(2) == tokens_ && x.size(3) == head_dim_,
                          "relative was built for {} tokens of head_dim {}, got {} {}", tokens_,
                          head_dim_, name, fmt::join(x.sizes(), "x"));
  }

  std::int64_t tokens_;
  std::int64_t head_dim_;
  bool values_;
  torch::Tensor keys_, values_table_;
  torch::Tensor index_;  // [N, N] row of each (query, key) pair
  torch::Tensor mask_;   // [N, N] 1 where j <= i (causal only)
};

void declare(ParamSchema& schema) {
  schema
      .integer("max_distance", 4,
               "Clipping distance k: offsets j - i beyond +-k share the embedding of +-k (Shaw et "
               "al. found k >= 2 enough for translation). A k of N - 1 or more clips nothing: the "
               "tables then hold the 2(N - 1) + 1 offsets that N tokens can have.")
      .at_least(1);
  schema.boolean("values", true,
                 "Also learn the value embeddings a^V (Shaw's eq. 3); false keeps keys only.");
  schema.boolean("causal", false,
                 "Only offsets j - i <= 0 have embeddings; a later key gets no relative term. This "
                 "does not mask attention: the encoder still attends to every token.");
  schema.plugin("init", PluginKind::kInitializer, "normal",
                "How a^K and a^V are initialised, e.g. { plugin = \"normal\", std = 0.02 } for a "
                "small-norm start. The default, N(0, 1), matches the O(1) entries of the keys and "
                "values these embeddings are added to.");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  PELAB_CHECK(shape.heads > 0 && shape.d_model % shape.heads == 0,
              "heads ({}) must divide d_model ({})", shape.heads, shape.d_model);
  const auto initializer = context.registry.create_initializer(params.plugin("init"));
  return std::make_shared<RelativePositionalEncoding>(layout, shape, params.integer("max_distance"),
                                                      params.boolean("values"),
                                                      params.boolean("causal"), *initializer);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("relative", "1.0.0",
                      "Shaw et al.'s learned relative key and value embeddings, clipped at +-k",
                      pelab::declare, pelab::create)
