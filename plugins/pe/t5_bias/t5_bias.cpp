// T5's relative attention bias (Raffel et al. 2020), bidirectional as in T5's encoder.
//
// The offset n = j - i between query i and key j falls into one of `num_buckets` buckets; each
// bucket has one learned scalar per head, added to the attention logits: bias[h, i, j] =
// table[bucket(j - i), h]. The bucket function is T5's `_relative_position_bucket` with
// bidirectional = true, in float32 as T5 computes it. With B = num_buckets / 2 buckets per
// direction and E = B / 2 exact ones:
//   bucket(n) = (n > 0 ? B : 0) + b(|n|),
//   b(m) = m                                                           if m < E,
//        = min(B - 1, E + floor(log(m / E) / log(max_distance / E) * (B - E)))   otherwise,
// so offsets below E have their own bucket, larger ones share logarithmically wider buckets and
// every |n| >= max_distance shares the last one. T5 shares one table across its layers; here each
// block has its own unless [model] pe_placement = "shared".

#include <cmath>

#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab {
namespace {

// T5's _relative_position_bucket(relative_position, bidirectional=True, ...), elementwise on an
// integer tensor of offsets j - i.
torch::Tensor relative_position_bucket(const torch::Tensor& offset, std::int64_t num_buckets,
                                       std::int64_t max_distance) {
  const std::int64_t half = num_buckets / 2;
  const std::int64_t max_exact = half / 2;
  const torch::Tensor direction = (offset > 0).to(torch::kLong) * half;
  const torch::Tensor distance = offset.abs();
  // Clamped to >= 1 so that log() never sees 0; those entries take the exact branch anyway.
  const torch::Tensor scaled =
      torch::log(distance.clamp_min(1).to(torch::kFloat32) / static_cast<double>(max_exact)) /
      std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)) *
      static_cast<double>(half - max_exact);
  const torch::Tensor large = (scaled.to(torch::kLong) + max_exact).clamp_max(half - 1);
  return direction + torch::where(distance < max_exact, distance, large);
}

class T5Bias : public PositionalEncoding {
 public:
  T5Bias(const Layout& layout, const ModelShape& shape, std::int64_t num_buckets,
         std::int64_t max_distance, const Initializer& initializer)
      : tokens_(layout.tokens), heads_(shape.heads) {
    torch::Tensor table = torch::empty({num_buckets, heads_});
    {
      torch::NoGradGuard no_grad;
      const std::string what =
          shape.block < 0 ? "pe.table (shared)" : fmt::format("pe.table (block {})", shape.block);
      // The rows are buckets of offsets, not tokens: no token layout for the initializer.
      initializer.fill(table, InitContext::for_tensor(table, what));
    }
    table_ = register_parameter("table", std::move(table));
    const torch::Tensor position = torch::arange(tokens_, torch::kLong);
    const torch::Tensor offset = position.unsqueeze(0) - position.unsqueeze(1);  // j - i
    bucket_ =
        register_buffer("bucket", relative_position_bucket(offset, num_buckets, max_distance));
  }

  unsigned hooks() const override { return kAttentionBias; }

  torch::Tensor attention_bias() override {
    return table_.index_select(0, bucket_.flatten())
        .view({tokens_, tokens_, heads_})
        .permute({2, 0, 1});
  }

 private:
  std::int64_t tokens_;
  std::int64_t heads_;
  torch::Tensor table_;   // [num_buckets, heads]
  torch::Tensor bucket_;  // [N, N] bucket of j - i
};

void declare(ParamSchema& schema) {
  schema
      .integer("num_buckets", 32,
               "Buckets of offsets, half for keys before the query, half after (T5: 32).")
      .in_range(4, 4096);
  schema
      .integer("max_distance", 128,
               "Offsets |j - i| >= max_distance share the outermost bucket (T5: 128).")
      .at_least(2);
  schema.plugin("init", PluginKind::kInitializer, "normal",
                "How the [num_buckets, heads] table of biases is initialised, e.g. "
                "{ plugin = \"normal\", std = 0.1 }; the default is N(0, 1).");
}

std::shared_ptr<PositionalEncoding> create(const PluginContext& context, const Layout& layout,
                                           const ModelShape& shape) {
  const Params& params = context.params;
  const std::int64_t num_buckets = params.integer("num_buckets");
  const std::int64_t max_distance = params.integer("max_distance");
  PELAB_CHECK(num_buckets % 2 == 0,
              "num_buckets ({}) must be even: half the buckets are for each direction",
              num_buckets);
  PELAB_CHECK(max_distance > num_buckets / 4,
              "max_distance ({}) must exceed the {} exactly-bucketed offsets (num_buckets / 4); "
              "raise max_distance or lower num_buckets",
              max_distance, num_buckets / 4);
  PELAB_CHECK(shape.heads > 0, "heads must be positive, got {}", shape.heads);
  const auto initializer = context.registry.create_initializer(params.plugin("init"));
  return std::make_shared<T5Bias>(layout, shape, num_buckets, max_distance, *initializer);
}

}  // namespace
}  // namespace pelab

PELAB_REGISTER_PLUGIN("t5_bias", "1.0.0",
                      "T5's learned per-head bias of log-bucketed relative offsets", pelab::declare,
                      pelab::create)
