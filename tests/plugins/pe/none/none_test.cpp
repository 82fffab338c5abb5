// NoPE: no hooks, no parameters, the tokens pass unchanged.

#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class NoPE : public ::testing::Test {
 protected:
  NoPE() : registry_(test::builtin_registry()) {
    spec_.kind = PluginKind::kPositionalEncoding;
    spec_.name = "none";
  }

  std::shared_ptr<PositionalEncoding> make(const ModelShape& shape = {8, 2, 1, 0}) {
    return registry_.create_positional_encoding(spec_, Layout::sequence(5), shape);
  }

  Registry registry_;
  PluginSpec spec_;
};

TEST_F(NoPE, TakesNoParameters) {
  EXPECT_TRUE(registry_.schema(PluginKind::kPositionalEncoding, "none").empty());
}

TEST_F(NoPE, HasNoHooksAndNothingToProbe) {
  const auto pe = make();
  EXPECT_EQ(pe->hooks(), 0u);
  EXPECT_FALSE(pe->has_hook(PositionalEncoding::kAdditive));
  EXPECT_FALSE(pe->has_hook(PositionalEncoding::kRotary));
  EXPECT_FALSE(pe->has_hook(PositionalEncoding::kAttentionBias));
  EXPECT_FALSE(pe->table().defined());
  EXPECT_FALSE(pe->kernel().defined());
  EXPECT_TRUE(pe->parameters().empty());
}

TEST_F(NoPE, EmbedIsTheIdentity) {
  const auto pe = make();
  const torch::Tensor x = torch::randn({2, 5, 8});
  EXPECT_TRUE(torch::equal(pe->embed(x), x));
  const auto [q, k] = pe->rotate(x, x * 2);
  EXPECT_TRUE(torch::equal(q, x));
  EXPECT_TRUE(torch::equal(k, x * 2));
}

TEST_F(NoPE, ModelCannotTellPositionsApart) {
  // With NoPE, swapping two tokens that are not the readout token changes nothing.
  ModelConfig config;
  config.layers = 2;
  config.d_model = 8;
  config.heads = 2;
  config.mlp_ratio = 2;
  torch::manual_seed(2);
  TransformerEncoder model(config, 3, Objective::classification(4),
                           [&](const ModelShape& shape) { return make(shape); });
  EXPECT_EQ(model.positional_encodings().size(), 2u);
  TransformerEncoder bare(config, 3, Objective::classification(4), {});
  EXPECT_EQ(model.parameter_count(), bare.parameter_count());

  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 5, 3});
  torch::Tensor swapped = x.clone();
  swapped.select(1, 0).copy_(x.select(1, 2));
  swapped.select(1, 2).copy_(x.select(1, 0));
  EXPECT_TRUE(torch::allclose(model.forward(x), model.forward(swapped), 1e-5, 1e-6));
  EXPECT_FALSE(model.snapshot(0).tables.defined());
  EXPECT_FALSE(model.snapshot(0).kernels.defined());
}

}  // namespace
}  // namespace pelab
