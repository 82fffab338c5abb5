// The encoder: attention equal to torch's, both LayerNorm placements, log-probabilities, and the
// three ways of placing positional encodings.

#include "pelab/model/transformer_encoder.h"

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"

namespace pelab {
namespace {

// An additive PE with a random table that counts its calls.
class CountingPE : public PositionalEncoding {
 public:
  CountingPE(std::int64_t tokens, std::int64_t d_model) {
    table_ = register_parameter("table", torch::randn({tokens, d_model}));
  }
  unsigned hooks() const override { return kAdditive; }
  torch::Tensor embed(const torch::Tensor& x) override {
    ++calls;
    return x + table_;
  }
  torch::Tensor table() override { return table_; }
  int calls = 0;

 private:
  torch::Tensor table_;
};

// An attention-side PE: a bias that lets each token attend only to itself.
class DiagonalBiasPE : public PositionalEncoding {
 public:
  DiagonalBiasPE(std::int64_t heads, std::int64_t tokens) : heads_(heads), tokens_(tokens) {}
  unsigned hooks() const override { return kAttentionBias; }
  torch::Tensor attention_bias() override {
    const torch::Tensor off = 1 - torch::eye(tokens_);
    return (off * -1e9).expand({heads_, tokens_, tokens_});
  }

 private:
  std::int64_t heads_, tokens_;
};

// A rotary-hook PE that zeroes the queries: every token then attends uniformly.
class ZeroQueryPE : public PositionalEncoding {
 public:
  unsigned hooks() const override { return kRotary; }
  std::pair<torch::Tensor, torch::Tensor> rotate(const torch::Tensor& q,
                                                 const torch::Tensor& k) override {
    return {torch::zeros_like(q), k};
  }
};

ModelConfig small_config(std::int64_t layers = 3) {
  ModelConfig config;
  config.layers = layers;
  config.d_model = 8;
  config.heads = 2;
  config.mlp_ratio = 2;
  return config;
}

bool close(const torch::Tensor& a, const torch::Tensor& b, double atol = 1e-5) {
  return torch::allclose(a, b, /*rtol=*/1e-4, atol);
}

// One head and several: the head split and merge must match torch's.
void expect_same_as_multihead_attention(std::int64_t heads) {
  SCOPED_TRACE(::testing::Message() << heads << " heads");
  const std::int64_t d = 16, batch = 3, tokens = 5;
  torch::manual_seed(0);
  SelfAttention ours(d, heads);
  torch::nn::MultiheadAttention theirs(torch::nn::MultiheadAttentionOptions(d, heads));
  {
    torch::NoGradGuard no_grad;
    // Non-zero biases, so that their handling is compared too.
    ours->in_proj_bias.uniform_(-0.5, 0.5);
    ours->out_proj->bias.uniform_(-0.5, 0.5);
    theirs->in_proj_weight.copy_(ours->in_proj_weight);
    theirs->in_proj_bias.copy_(ours->in_proj_bias);
    theirs->out_proj->weight.copy_(ours->out_proj->weight);
    theirs->out_proj->bias.copy_(ours->out_proj->bias);
  }
  const torch::Tensor x = torch::randn({batch, tokens, d});
  torch::Tensor weights;
  const torch::Tensor out = ours->forward(x, nullptr, &weights);

  // LibTorch 1.13's MultiheadAttention reads [tokens, batch, d].
  const torch::Tensor xt = x.transpose(0, 1);
  const auto [reference, reference_weights] =
      theirs->forward(xt, xt, xt, {}, /*need_weights=*/true, {}, /*average_attn_weights=*/false);
  ASSERT_EQ(out.sizes(), x.sizes());
  EXPECT_TRUE(close(out, reference.transpose(0, 1)))
      << (out - reference.transpose(0, 1)).abs().max().item<double>();
  ASSERT_EQ(weights.sizes(), (std::vector<std::int64_t>{batch, heads, tokens, tokens}));
  EXPECT_TRUE(close(weights, reference_weights));
  EXPECT_TRUE(close(weights.sum(-1), torch::ones({batch, heads, tokens})));
}

TEST(SelfAttention, SameOutputAndWeightsAsMultiheadAttention) {
  expect_same_as_multihead_attention(1);
  expect_same_as_multihead_attention(4);
}

TEST(SelfAttention, InitialisedLikeMultiheadAttention) {
  torch::manual_seed(0);
  SelfAttention attention(16, 4);
  EXPECT_EQ(attention->in_proj_weight.sizes(), (std::vector<std::int64_t>{48, 16}));
  EXPECT_TRUE(torch::equal(attention->in_proj_bias, torch::zeros({48})));
  EXPECT_TRUE(torch::equal(attention->out_proj->bias, torch::zeros({16})));
  // Xavier-uniform over the fused [3d, d] matrix.
  const double bound = std::sqrt(6.0 / (16 + 48));
  EXPECT_LE(attention->in_proj_weight.abs().max().item<double>(), bound);
  EXPECT_GT(attention->in_proj_weight.abs().max().item<double>(), 0.9 * bound);
  EXPECT_EQ(attention->parameters().size(), 4u);
}

TEST(SelfAttention, HeadsMustDivideTheWidth) {
  EXPECT_THROW(SelfAttention(10, 4), Error);
  EXPECT_THROW(SelfAttention(8, 0), Error);
}

TEST(SelfAttention, BiasHookReachesTheLogits) {
  torch::manual_seed(1);
  SelfAttention attention(8, 2);
  DiagonalBiasPE pe(2, 4);
  torch::Tensor weights;
  attention->forward(torch::randn({3, 4, 8}), &pe, &weights);
  EXPECT_TRUE(close(weights, torch::eye(4).expand({3, 2, 4, 4})));
}

TEST(SelfAttention, RotaryHookReachesQueriesAndKeys) {
  torch::manual_seed(1);
  SelfAttention attention(8, 2);
  ZeroQueryPE pe;
  torch::Tensor weights;
  attention->forward(torch::randn({3, 4, 8}), &pe, &weights);
  EXPECT_TRUE(close(weights, torch::full({3, 2, 4, 4}, 0.25)));
}

TEST(EncoderBlock, PostAndPreNormFollowTheirFormulas) {
  ModelConfig post = small_config();
  ModelConfig pre = post;
  pre.norm = ModelConfig::Norm::kPre;
  torch::manual_seed(3);
  EncoderBlock a(post);
  torch::manual_seed(3);
  EncoderBlock b(pre);  // the same weights as `a`
  for (std::size_t i = 0; i < a->parameters().size(); ++i) {
    ASSERT_TRUE(torch::equal(a->parameters()[i], b->parameters()[i]));
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 5, 8}) * 3 + 1;
  const torch::Tensor y_post = a->forward(x, nullptr);
  const torch::Tensor y_pre = b->forward(x, nullptr);
  EXPECT_FALSE(close(y_post, y_pre));

  auto mlp = [&](const torch::Tensor& h) {
    return torch::gelu(a->linear2->forward(torch::gelu(a->linear1->forward(h))));
  };
  const torch::Tensor h_post = a->norm1->forward(x + a->attention->forward(x, nullptr));
  EXPECT_TRUE(close(y_post, a->norm2->forward(h_post + mlp(h_post))));
  const torch::Tensor h_pre = x + a->attention->forward(a->norm1->forward(x), nullptr);
  EXPECT_TRUE(close(y_pre, h_pre + mlp(a->norm2->forward(h_pre))));

  // Post-norm ends in a LayerNorm (identity affine at initialisation): every token is
  // standardised. Pre-norm keeps the residual stream's scale.
  EXPECT_TRUE(close(y_post.mean(-1), torch::zeros({2, 5}), 1e-4));
  EXPECT_TRUE(close(y_post.var(-1, /*unbiased=*/false), torch::ones({2, 5}), 1e-3));
  EXPECT_FALSE(close(y_pre.mean(-1), torch::zeros({2, 5}), 1e-2));
}

TEST(EncoderBlock, FinalGeluIsOptional) {
  ModelConfig with = small_config();
  ModelConfig without = with;
  without.final_gelu = false;
  torch::manual_seed(4);
  EncoderBlock a(with);
  torch::manual_seed(4);
  EncoderBlock b(without);
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 5, 8});
  const torch::Tensor h = b->norm1->forward(x + b->attention->forward(x, nullptr));
  const torch::Tensor mlp = b->linear2->forward(torch::gelu(b->linear1->forward(h)));
  EXPECT_TRUE(close(b->forward(x, nullptr), b->norm2->forward(h + mlp)));
  EXPECT_FALSE(close(a->forward(x, nullptr), b->forward(x, nullptr)));
}

TEST(TransformerEncoder, OutputsLogProbabilities) {
  torch::manual_seed(5);
  TransformerEncoder model(small_config(2), /*input_size=*/3, Objective::classification(7), {});
  const torch::Tensor log_probs = model.forward(torch::randn({4, 6, 3}));
  ASSERT_EQ(log_probs.sizes(), (std::vector<std::int64_t>{4, 7}));
  EXPECT_TRUE(close(log_probs.exp().sum(1), torch::ones({4})));
  EXPECT_LE(log_probs.max().item<double>(), 0.0);
  EXPECT_TRUE(model.positional_encodings().empty());
  EXPECT_EQ(model.pe_for_block(0), nullptr);
}

TEST(TransformerEncoder, ReadoutLastTokenOrMean) {
  ModelConfig last = small_config(1);
  ModelConfig mean = last;
  mean.readout = ModelConfig::Readout::kMean;
  torch::manual_seed(6);
  TransformerEncoder a(last, 3, Objective::classification(4), {});
  torch::manual_seed(6);
  TransformerEncoder b(mean, 3, Objective::classification(4), {});
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 5, 3});
  EXPECT_FALSE(close(a.forward(x), b.forward(x)));
  // Without a PE, attention is permutation-equivariant: swapping two tokens that are not the
  // last changes neither the mean nor the last token's output.
  torch::Tensor swapped = x.clone();
  swapped.select(1, 0).copy_(x.select(1, 1));
  swapped.select(1, 1).copy_(x.select(1, 0));
  EXPECT_TRUE(close(b.forward(x), b.forward(swapped)));
  EXPECT_TRUE(close(a.forward(x), a.forward(swapped)));
}

struct FactoryLog {
  std::vector<ModelShape> shapes;
  std::vector<std::shared_ptr<CountingPE>> made;
};

PositionalEncodingFactory counting_factory(FactoryLog& log, std::int64_t tokens) {
  return [&log, tokens](const ModelShape& shape) {
    log.shapes.push_back(shape);
    log.made.push_back(std::make_shared<CountingPE>(tokens, shape.d_model));
    return log.made.back();
  };
}

TEST(TransformerEncoder, EveryBlockGetsItsOwnPE) {
  FactoryLog log;
  torch::manual_seed(7);
  TransformerEncoder model(small_config(3), 3, Objective::classification(4),
                           counting_factory(log, 5));
  ASSERT_EQ(log.shapes.size(), 3u);
  for (std::int64_t block = 0; block < 3; ++block) {
    EXPECT_EQ(log.shapes[block].block, block);
    EXPECT_EQ(log.shapes[block].d_model, 8);
    EXPECT_EQ(log.shapes[block].heads, 2);
    EXPECT_EQ(log.shapes[block].layers, 3);
    EXPECT_EQ(model.pe_for_block(block), log.made[block].get());
  }
  EXPECT_EQ(model.positional_encodings().size(), 3u);
  model.forward(torch::randn({2, 5, 3}));
  for (const auto& pe : log.made)
    EXPECT_EQ(pe->calls, 1);

  // The tables are the model's parameters: an optimiser sees them.
  const auto named = model.named_parameters();
  EXPECT_TRUE(named.contains("pe0.table"));
  EXPECT_TRUE(named.contains("pe2.table"));
  TransformerEncoder bare(small_config(3), 3, Objective::classification(4), {});
  EXPECT_EQ(model.parameter_count(), bare.parameter_count() + 3 * 5 * 8);

  const PESnapshot snapshot = model.snapshot(12);
  EXPECT_EQ(snapshot.epoch, 12);
  ASSERT_EQ(snapshot.tables.sizes(), (std::vector<std::int64_t>{3, 5, 8}));
  EXPECT_TRUE(torch::equal(snapshot.tables[1], log.made[1]->table().detach()));
  EXPECT_FALSE(snapshot.kernels.defined());
}

TEST(TransformerEncoder, SharedPEServesEveryBlock) {
  FactoryLog log;
  ModelConfig config = small_config(3);
  config.pe_placement = ModelConfig::Placement::kShared;
  TransformerEncoder model(config, 3, Objective::classification(4), counting_factory(log, 5));
  ASSERT_EQ(log.shapes.size(), 1u);
  EXPECT_EQ(log.shapes[0].block, -1);
  for (std::int64_t block = 0; block < 3; ++block) {
    EXPECT_EQ(model.pe_for_block(block), log.made[0].get());
  }
  model.forward(torch::randn({2, 5, 3}));
  EXPECT_EQ(log.made[0]->calls, 3);
  EXPECT_EQ(model.snapshot(0).tables.sizes(), (std::vector<std::int64_t>{1, 5, 8}));
  EXPECT_TRUE(model.named_parameters().contains("pe.table"));
}

TEST(TransformerEncoder, InputPlacementOnlyBeforeTheFirstBlock) {
  FactoryLog log;
  ModelConfig config = small_config(3);
  config.pe_placement = ModelConfig::Placement::kInputOnly;
  TransformerEncoder model(config, 3, Objective::classification(4), counting_factory(log, 5));
  ASSERT_EQ(log.shapes.size(), 1u);
  EXPECT_EQ(log.shapes[0].block, 0);
  EXPECT_EQ(model.pe_for_block(0), log.made[0].get());
  EXPECT_EQ(model.pe_for_block(1), nullptr);
  EXPECT_EQ(model.pe_for_block(2), nullptr);
  model.forward(torch::randn({2, 5, 3}));
  EXPECT_EQ(log.made[0]->calls, 1);
}

TEST(TransformerEncoder, AttentionMapsPerBlock) {
  ModelConfig config = small_config(2);
  TransformerEncoder model(config, 3, Objective::classification(4), [](const ModelShape& shape) {
    return std::make_shared<DiagonalBiasPE>(shape.heads, 5);
  });
  const auto maps = model.attention_maps(torch::randn({2, 5, 3}));
  ASSERT_EQ(maps.size(), 2u);
  for (const auto& map : maps) {
    ASSERT_EQ(map.sizes(), (std::vector<std::int64_t>{2, 2, 5, 5}));
    EXPECT_TRUE(close(map, torch::eye(5).expand({2, 2, 5, 5})));
  }
  // A PE without a table: its kernel is the head-averaged bias.
  const PESnapshot snapshot = model.snapshot(1);
  EXPECT_FALSE(snapshot.tables.defined());
  ASSERT_EQ(snapshot.kernels.sizes(), (std::vector<std::int64_t>{2, 5, 5}));
}

TEST(TransformerEncoder, PerturbTransformsTheEmbeddedTokens) {
  torch::manual_seed(8);
  TransformerEncoder model(small_config(1), 3, Objective::classification(4), {});
  torch::NoGradGuard no_grad;
  const auto zero = [](const torch::Tensor& x) { return torch::zeros_like(x); };
  // Once the embedding is replaced by zeros, the input no longer matters.
  EXPECT_TRUE(close(model.forward(torch::randn({2, 5, 3}), zero),
                    model.forward(torch::randn({2, 5, 3}), zero)));
}

TEST(TransformerEncoder, RejectsBadShapesAndFactories) {
  EXPECT_THROW(TransformerEncoder(small_config(0), 3, Objective::classification(4), {}), Error);
  EXPECT_THROW(TransformerEncoder(small_config(2), 3, Objective::classification(4),
                                  [](const ModelShape&) { return nullptr; }),
               InternalError);
}

// Dropout is active in training mode only, and absent at p = 0 (no draw from the generator).
TEST(TransformerEncoder, DropoutOnlyWhileTraining) {
  const torch::Tensor inputs = torch::randn({4, 5, 3});
  for (const char* where : {"pe", "attention", "residual"}) {
    ModelConfig config = small_config(2);
    (std::string(where) == "pe"          ? config.pe_dropout
     : std::string(where) == "attention" ? config.attention_dropout
                                         : config.residual_dropout) = 0.5;
    FactoryLog log;
    torch::manual_seed(3);
    TransformerEncoder model(config, 3, Objective::classification(4), counting_factory(log, 5));
    model.eval();
    const torch::Tensor evaluated = model.forward(inputs);
    EXPECT_TRUE(torch::equal(evaluated, model.forward(inputs))) << where;
    model.train();
    const torch::Tensor first = model.forward(inputs);
    EXPECT_FALSE(torch::equal(first, model.forward(inputs))) << where << ": a fresh mask a call";
    EXPECT_FALSE(torch::equal(first, evaluated)) << where;
  }
  ModelConfig config = small_config(2);
  FactoryLog log;
  TransformerEncoder model(config, 3, Objective::classification(4), counting_factory(log, 5));
  model.train();
  torch::manual_seed(5);
  const torch::Tensor trained = model.forward(inputs);
  const torch::Tensor next_draw = torch::rand({1});
  torch::manual_seed(5);
  model.eval();
  EXPECT_TRUE(torch::equal(trained, model.forward(inputs)));
  EXPECT_TRUE(torch::equal(next_draw, torch::rand({1}))) << "p = 0 drew from the generator";
}

TEST(ModelConfig, FromTheModelSection) {
  Params params;
  for (const auto& spec : model_schema().specs())
    params.set(spec.name, spec.default_value);
  const ModelConfig defaults = ModelConfig::from_params(params);
  EXPECT_EQ(defaults.layers, 4);
  EXPECT_EQ(defaults.d_model, 160);
  EXPECT_EQ(defaults.norm, ModelConfig::Norm::kPost);
  EXPECT_EQ(defaults.pe_placement, ModelConfig::Placement::kEveryBlock);
  EXPECT_EQ(defaults.readout, ModelConfig::Readout::kLastToken);
  EXPECT_TRUE(defaults.final_gelu);

  params.set("norm", std::string("pre"));
  params.set("pe_placement", std::string("shared"));
  params.set("readout", std::string("mean"));
  params.set("final_gelu", false);
  const ModelConfig custom = ModelConfig::from_params(params);
  EXPECT_EQ(custom.norm, ModelConfig::Norm::kPre);
  EXPECT_EQ(custom.pe_placement, ModelConfig::Placement::kShared);
  EXPECT_EQ(custom.readout, ModelConfig::Readout::kMean);
  EXPECT_FALSE(custom.final_gelu);
  params.set("pe_placement", std::string("input"));
  EXPECT_EQ(ModelConfig::from_params(params).pe_placement, ModelConfig::Placement::kInputOnly);
  EXPECT_EQ(defaults.pe_dropout, 0.0);
  params.set("pe_dropout", 0.1);
  EXPECT_EQ(ModelConfig::from_params(params).pe_dropout, 0.1);
  params.set("attention_dropout", 1.0);
  try {
    ModelConfig::from_params(params);
    FAIL() << "a dropout of 1 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.attention_dropout = 1 would drop every value"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace pelab
