// T5's bucketed relative attention bias: T5's bucket function at written-out offsets, shift
// invariance, one learned scalar per bucket and head.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class T5BiasTest : public ::testing::Test {
 protected:
  PluginSpec spec(std::int64_t num_buckets = 32, std::int64_t max_distance = 128,
                  double std = 1.0) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "t5_bias");
    spec.params.set("num_buckets", num_buckets);
    spec.params.set("max_distance", max_distance);
    auto init = std::make_shared<PluginSpec>(spec.params.plugin("init"));
    init->params.set("std", std);
    spec.params.set("init", std::shared_ptr<const PluginSpec>(init));
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const PluginSpec& spec, std::int64_t tokens,
                                           std::int64_t heads) {
    return registry_.create_positional_encoding(spec, Layout::sequence(tokens),
                                                ModelShape{8 * heads, heads, 1, 0});
  }

  // The bucket of every offset j - i, read back through a table whose head 0 holds the bucket's
  // own index.
  torch::Tensor buckets(const PluginSpec& spec, std::int64_t tokens) {
    const auto pe = make(spec, tokens, 2);
    torch::Tensor table = pe->named_parameters()["table"];
    {
      torch::NoGradGuard no_grad;
      table.select(1, 0).copy_(torch::arange(table.size(0), torch::kFloat32));
    }
    return pe->attention_bias()[0].detach().round().to(torch::kLong);
  }

  Registry registry_{Registry::default_search_path()};
};

TEST_F(T5BiasTest, DeclaresT5sDefaults) {
  const PluginSpec defaults = registry_.default_spec(PluginKind::kPositionalEncoding, "t5_bias");
  EXPECT_EQ(defaults.params.integer("num_buckets"), 32);
  EXPECT_EQ(defaults.params.integer("max_distance"), 128);
  EXPECT_EQ(defaults.params.plugin("init").name, "normal");
}

TEST_F(T5BiasTest, BucketsAreT5sAtWrittenOutOffsets) {
  // num_buckets 32, max_distance 128: B = 16 buckets per direction, E = 8 exact ones; a key after
  // its query (j - i > 0) adds 16. For |n| >= 8: 8 + floor(log(|n| / 8) / log(16) * 8), at most 15.
  const std::int64_t tokens = 201;
  const torch::Tensor bucket = buckets(spec(), tokens);
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {
      {0, 0},    {-1, 1},    {1, 17},   {-3, 3},    {3, 19},    {-7, 7},   {7, 23},
      {-8, 8},   {8, 24},    {-11, 8},  {11, 24},   {-12, 9},   {12, 25},  {-15, 9},
      {-17, 10}, {17, 26},   {-24, 11}, {24, 27},   {-31, 11},  {-33, 12}, {33, 28},
      {-47, 13}, {-48, 13},  {48, 29},  {-63, 13},  {-90, 14},  {90, 30},  {-91, 15},
      {91, 31},  {-100, 15}, {100, 31}, {-127, 15}, {-128, 15}, {128, 31}, {-200, 15},
      {200, 31}, {-16, 10},  {16, 26},  {-32, 12},  {32, 28},   {-64, 14}, {64, 30}};
  for (const auto& [offset, want] : expected) {
    // The pair (i, j = i + offset) for a query i where both are in range.
    const std::int64_t i = offset >= 0 ? 0 : tokens - 1;
    EXPECT_EQ(bucket[i][i + offset].item<std::int64_t>(), want) << "offset " << offset;
  }
}

TEST_F(T5BiasTest, BucketsForOtherSettings) {
  // num_buckets 8, max_distance 20: B = 4, E = 2; |n| >= 2: 2 + floor(log(|n| / 2) / log(10) * 2).
  const torch::Tensor bucket = buckets(spec(8, 20), 25);
  const std::vector<std::pair<std::int64_t, std::int64_t>> expected = {
      {0, 0}, {-1, 1}, {1, 5}, {-2, 2},  {2, 6},  {-5, 2},
      {5, 6}, {-9, 3}, {9, 7}, {-19, 3}, {19, 7}, {-24, 3}};
  for (const auto& [offset, want] : expected) {
    const std::int64_t i = offset >= 0 ? 0 : 24;
    EXPECT_EQ(bucket[i][i + offset].item<std::int64_t>(), want) << "offset " << offset;
  }
}

TEST_F(T5BiasTest, BiasIsATableLookUpThatShiftingLeavesUnchanged) {
  const std::int64_t tokens = 40, heads = 3;
  torch::manual_seed(1);
  const auto pe = make(spec(), tokens, heads);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kAttentionBias));
  const torch::Tensor table = pe->named_parameters()["table"].detach();
  EXPECT_EQ(table.sizes(), (std::vector<std::int64_t>{32, heads}));
  const torch::Tensor bias = pe->attention_bias().detach();
  ASSERT_EQ(bias.sizes(), (std::vector<std::int64_t>{heads, tokens, tokens}));
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t i = 0; i + 7 < tokens; i += 3) {
      for (std::int64_t j = 0; j + 7 < tokens; j += 2) {
        for (std::int64_t s : {1, 7}) {
          EXPECT_EQ(bias[h][i][j].item<float>(), bias[h][i + s][j + s].item<float>());
        }
      }
    }
    // Written out: offset +2 is bucket 18, offset -2 bucket 2, offset -20 bucket 10.
    EXPECT_EQ(bias[h][5][7].item<float>(), table[18][h].item<float>());
    EXPECT_EQ(bias[h][7][5].item<float>(), table[2][h].item<float>());
    EXPECT_EQ(bias[h][30][10].item<float>(), table[10][h].item<float>());
  }
  // Bidirectional: the two directions have their own buckets, so the bias is not symmetric.
  EXPECT_FALSE(torch::allclose(bias, bias.transpose(1, 2)));
  // The kernel is the bias averaged over heads.
  EXPECT_TRUE(torch::allclose(pe->kernel(), bias.mean(0)));
}

TEST_F(T5BiasTest, TableIsInitialisedAndLearnable) {
  torch::manual_seed(2);
  const auto pe = make(spec(32, 128, 0.1), 12, 50);
  const torch::Tensor table = pe->named_parameters()["table"];
  EXPECT_NEAR(table.std().item<double>(), 0.1, 0.01);  // 1600 draws
  pe->attention_bias().sum().backward();
  // Each entry's gradient counts the (i, j) pairs in its bucket: 12 pairs at offset 0.
  const torch::Tensor grad = table.grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_EQ(grad[0][0].item<float>(), 12.0f);
  EXPECT_EQ(grad[17][3].item<float>(), 11.0f);  // offset +1
  EXPECT_EQ(grad[15][0].item<float>(), 0.0f);   // |offset| >= 91: not among 12 tokens
}

TEST_F(T5BiasTest, RefusesBucketSettingsT5CannotUse) {
  try {
    make(spec(31, 128), 4, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_buckets (31) must be even"), std::string::npos)
        << e.what();
  }
  try {
    make(spec(32, 8), 4, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_distance (8) must exceed"), std::string::npos)
        << e.what();
  }
}

TEST_F(T5BiasTest, TrainsInsideTheModel) {
  test::expect_trains_in_model(registry_, spec(), Layout::sequence(6), 8, 2);
}

}  // namespace
}  // namespace pelab
