// Shaw et al.'s relative position representations: clipped offsets index learned key and value
// embeddings shared by the heads.

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class RelativeTest : public ::testing::Test {
 protected:
  PluginSpec spec(std::int64_t max_distance = 4, bool values = true, bool causal = false,
                  double std = 1.0) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "relative");
    spec.params.set("max_distance", max_distance);
    spec.params.set("values", values);
    spec.params.set("causal", causal);
    auto init = std::make_shared<PluginSpec>(spec.params.plugin("init"));
    init->params.set("std", std);
    spec.params.set("init", std::shared_ptr<const PluginSpec>(init));
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const PluginSpec& spec, std::int64_t tokens,
                                           std::int64_t d_model, std::int64_t heads) {
    return registry_.create_positional_encoding(spec, Layout::sequence(tokens),
                                                ModelShape{d_model, heads, 1, 0});
  }

  Registry registry_{Registry::default_search_path()};
};

std::int64_t clip(std::int64_t offset, std::int64_t k) {
  return std::max(-k, std::min(k, offset));
}

TEST_F(RelativeTest, DeclaresItsParameters) {
  const ParamSchema& schema = registry_.schema(PluginKind::kPositionalEncoding, "relative");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"max_distance", "values", "causal", "init"}));
  const PluginSpec defaults = registry_.default_spec(PluginKind::kPositionalEncoding, "relative");
  EXPECT_EQ(defaults.params.integer("max_distance"), 4);
  EXPECT_TRUE(defaults.params.boolean("values"));
  EXPECT_FALSE(defaults.params.boolean("causal"));
  EXPECT_EQ(defaults.params.plugin("init").name, "normal");
}

TEST_F(RelativeTest, TablesAreSharedOverHeadsAndInitialised) {
  torch::manual_seed(1);
  const auto pe = make(spec(3, true, false, 0.05), 10, 48, 3);  // head_dim 16
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kRelativeKeys |
                                               PositionalEncoding::kRelativeValues));
  const auto named = pe->named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named["keys"].sizes(), (std::vector<std::int64_t>{7, 16}));  // offsets -3 .. 3
  EXPECT_EQ(named["values"].sizes(), (std::vector<std::int64_t>{7, 16}));
  EXPECT_NEAR(named["keys"].std().item<double>(), 0.05, 0.01);
  EXPECT_FALSE(torch::equal(named["keys"], named["values"]));
  EXPECT_FALSE(pe->table().defined());
}

// No two of N tokens are more than N - 1 apart: a larger clip changes nothing but the table's
// size, which once grew with k itself (k = 1e8 on 16 tokens asked for 12.8 GB).
TEST_F(RelativeTest, AClipBeyondTheTokensSizesTheTablesByTheTokens) {
  torch::manual_seed(3);
  const auto huge = make(spec(100000000), 16, 32, 2);  // head_dim 16
  EXPECT_EQ(huge->named_parameters()["keys"].sizes(), (std::vector<std::int64_t>{31, 16}));
  const auto causal = make(spec(100000000, true, true), 16, 32, 2);
  EXPECT_EQ(causal->named_parameters()["keys"].sizes(), (std::vector<std::int64_t>{16, 16}));
  // The same model as k = N - 1 exactly, drawn from the same seed.
  torch::manual_seed(4);
  const auto exact = make(spec(15), 16, 32, 2);
  torch::manual_seed(4);
  const auto beyond = make(spec(40), 16, 32, 2);
  const torch::Tensor q = torch::randn({2, 2, 16, 16});
  EXPECT_TRUE(torch::equal(exact->relative_logits(q), beyond->relative_logits(q)));
}

TEST_F(RelativeTest, LogitsAreQueryDotClippedKeyEmbedding) {
  const std::int64_t tokens = 9, k = 2;
  torch::manual_seed(2);
  const auto pe = make(spec(k), tokens, 8, 2);  // head_dim 4
  const torch::Tensor keys = pe->named_parameters()["keys"].detach();
  const torch::Tensor q = torch::randn({2, 2, tokens, 4});
  const torch::Tensor logits = pe->relative_logits(q);
  ASSERT_EQ(logits.sizes(), (std::vector<std::int64_t>{2, 2, tokens, tokens}));
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t h = 0; h < 2; ++h) {
      for (std::int64_t i = 0; i < tokens; ++i) {
        for (std::int64_t j = 0; j < tokens; ++j) {
          const double expected = q[b][h][i].dot(keys[clip(j - i, k) + k]).item<double>();
          EXPECT_NEAR(logits[b][h][i][j].item<double>(), expected, 1e-5) << i << " " << j;
        }
      }
    }
  }
}

TEST_F(RelativeTest, LogitsAreTranslationInvariantAndClipped) {
  const std::int64_t tokens = 12, k = 3;
  torch::manual_seed(3);
  const auto pe = make(spec(k), tokens, 6, 1);
  // One query content at every token: the logits then depend on the positions only.
  const torch::Tensor q = torch::randn({1, 1, 1, 6}).expand({1, 1, tokens, 6});
  const torch::Tensor logits = pe->relative_logits(q)[0][0];
  for (std::int64_t i = 0; i < tokens; ++i) {
    for (std::int64_t j = 0; j < tokens; ++j) {
      for (std::int64_t s : {1, 2, 5}) {
        if (i + s < tokens && j + s < tokens) {
          EXPECT_NEAR(logits[i][j].item<double>(), logits[i + s][j + s].item<double>(), 1e-6);
        }
      }
    }
  }
  // Offsets beyond +-k share the embedding of +-k; those within are distinct.
  EXPECT_NEAR(logits[0][4].item<double>(), logits[0][3].item<double>(), 1e-6);    // +4 -> +3
  EXPECT_NEAR(logits[0][11].item<double>(), logits[0][3].item<double>(), 1e-6);   // +11 -> +3
  EXPECT_NEAR(logits[11][0].item<double>(), logits[11][8].item<double>(), 1e-6);  // -11 -> -3
  EXPECT_NEAR(logits[9][5].item<double>(), logits[9][6].item<double>(), 1e-6);    // -4 -> -3
  for (std::int64_t offset = -k; offset < k; ++offset) {
    EXPECT_GT(std::abs(logits[5][5 + offset].item<double>() - logits[5][6 + offset].item<double>()),
              1e-4)
        << offset;
  }
}

TEST_F(RelativeTest, ValuesAreProbabilityWeightedClippedEmbeddings) {
  const std::int64_t tokens = 7, k = 2;
  torch::manual_seed(4);
  const auto pe = make(spec(k), tokens, 6, 2);  // head_dim 3
  const torch::Tensor values = pe->named_parameters()["values"].detach();
  const torch::Tensor p = torch::softmax(torch::randn({2, 2, tokens, tokens}), -1);
  const torch::Tensor out = pe->relative_values(p);
  ASSERT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 2, tokens, 3}));
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t h = 0; h < 2; ++h) {
      for (std::int64_t i = 0; i < tokens; ++i) {
        torch::Tensor expected = torch::zeros({3});
        for (std::int64_t j = 0; j < tokens; ++j)
          expected += p[b][h][i][j] * values[clip(j - i, k) + k];
        EXPECT_TRUE(torch::allclose(out[b][h][i], expected, 1e-5, 1e-6)) << b << h << i;
      }
    }
  }
  // One-hot attention on key j returns exactly a^V of the clipped offset j - i.
  const torch::Tensor one_hot = torch::zeros({1, 1, tokens, tokens});
  one_hot.select(3, 6).fill_(1.0);  // everyone attends to the last token
  const torch::Tensor picked = pe->relative_values(one_hot)[0][0];
  EXPECT_TRUE(torch::allclose(picked[6], values[k]));      // offset 0
  EXPECT_TRUE(torch::allclose(picked[5], values[k + 1]));  // offset +1
  EXPECT_TRUE(torch::allclose(picked[0], values[2 * k]));  // offset +6, clipped to +2
}

TEST_F(RelativeTest, KeysOnlyWithoutValues) {
  const auto pe = make(spec(4, /*values=*/false), 5, 8, 1);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kRelativeKeys));
  const auto named = pe->named_parameters();
  EXPECT_EQ(named.size(), 1u);
  EXPECT_TRUE(named.contains("keys"));
}

TEST_F(RelativeTest, CausalHasNoEmbeddingForLaterKeys) {
  const std::int64_t tokens = 8, k = 2;
  torch::manual_seed(5);
  const auto pe = make(spec(k, true, /*causal=*/true), tokens, 4, 1);
  const auto named = pe->named_parameters();
  EXPECT_EQ(named["keys"].size(0), k + 1);  // offsets -2, -1, 0
  const torch::Tensor keys = named["keys"].detach();
  const torch::Tensor values = named["values"].detach();
  const torch::Tensor q = torch::randn({1, 1, tokens, 4});
  const torch::Tensor logits = pe->relative_logits(q)[0][0];
  for (std::int64_t i = 0; i < tokens; ++i) {
    for (std::int64_t j = 0; j < tokens; ++j) {
      const double expected =
          j > i ? 0.0 : q[0][0][i].dot(keys[std::max(-k, j - i) + k]).item<double>();
      EXPECT_NEAR(logits[i][j].item<double>(), expected, 1e-5) << i << " " << j;
    }
  }
  // Probability on later keys contributes nothing to the relative values.
  const torch::Tensor p = torch::softmax(torch::randn({1, 1, tokens, tokens}), -1);
  const torch::Tensor out = pe->relative_values(p)[0][0];
  for (std::int64_t i = 0; i < tokens; ++i) {
    torch::Tensor expected = torch::zeros({4});
    for (std::int64_t j = 0; j <= i; ++j)
      expected += p[0][0][i][j] * values[std::max(-k, j - i) + k];
    EXPECT_TRUE(torch::allclose(out[i], expected, 1e-5, 1e-6)) << i;
  }
}

TEST_F(RelativeTest, GradientsReachBothTables) {
  const std::int64_t tokens = 6;
  const auto pe = make(spec(2), tokens, 8, 2);
  const torch::Tensor q = torch::randn({2, 2, tokens, 4});
  const torch::Tensor p = torch::softmax(torch::randn({2, 2, tokens, tokens}), -1);
  (pe->relative_logits(q).pow(2).sum() + pe->relative_values(p).pow(2).sum()).backward();
  for (const auto& parameter : pe->named_parameters()) {
    const torch::Tensor grad = parameter.value().grad();
    ASSERT_TRUE(grad.defined()) << parameter.key();
    // Every offset row -2 .. 2 occurs among 6 tokens, so every row gets a gradient.
    EXPECT_GT(grad.abs().sum(1).min().item<double>(), 0.0) << parameter.key();
  }
}

TEST_F(RelativeTest, KernelIsTheAllOnesQuerysLogit) {
  const auto pe = make(spec(2), 6, 8, 2);  // head_dim 4
  const torch::Tensor keys = pe->named_parameters()["keys"].detach();
  const torch::Tensor kernel = pe->kernel();
  ASSERT_EQ(kernel.sizes(), (std::vector<std::int64_t>{6, 6}));
  // K[i, j] = sum_d a^K[clip(j - i)] / sqrt(head_dim).
  EXPECT_NEAR(kernel[1][2].item<double>(), keys[3].sum().item<double>() / 2.0, 1e-5);
  EXPECT_NEAR(kernel[5][0].item<double>(), keys[0].sum().item<double>() / 2.0, 1e-5);
}

TEST_F(RelativeTest, RefusesHeadsThatDoNotDivideTheWidth) {
  try {
    make(spec(), 4, 10, 3);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("heads (3) must divide d_model (10)"), std::string::npos)
        << e.what();
  }
}

TEST_F(RelativeTest, TrainsInsideTheModel) {
  test::expect_trains_in_model(registry_, spec(2), Layout::sequence(6), 8, 2);
  test::expect_trains_in_model(registry_, spec(2, true, /*causal=*/true), Layout::sequence(6), 8,
                               2);
}

}  // namespace
}  // namespace pelab
