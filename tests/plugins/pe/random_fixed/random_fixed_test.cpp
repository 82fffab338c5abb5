// The random fixed table: drawn once by its initializer, then a frozen buffer.

#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pe_test_support.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class RandomFixedTest : public ::testing::Test {
 protected:
  PluginSpec spec(double std = 1.0, double mean = 0.0) {
    PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "random_fixed");
    auto init = std::make_shared<PluginSpec>(spec.params.plugin("init"));
    init->params.set("std", std);
    init->params.set("mean", mean);
    spec.params.set("init", std::shared_ptr<const PluginSpec>(init));
    return spec;
  }
  std::shared_ptr<PositionalEncoding> make(const PluginSpec& spec, std::int64_t tokens = 16,
                                           std::int64_t d_model = 160, std::int64_t block = 0) {
    return registry_.create_positional_encoding(spec, Layout::sequence(tokens),
                                                ModelShape{d_model, 1, 1, block});
  }

  Registry registry_{Registry::default_search_path()};
};

TEST_F(RandomFixedTest, DefaultIsAStandardNormalTable) {
  const PluginSpec spec = registry_.default_spec(PluginKind::kPositionalEncoding, "random_fixed");
  EXPECT_EQ(spec.params.plugin("init").name, "normal");
  torch::manual_seed(1);
  const torch::Tensor table = make(spec)->table();
  EXPECT_EQ(table.sizes(), (std::vector<std::int64_t>{16, 160}));
  // 2560 draws of N(0, 1): the sample std is within a few % of 1, the mean within ~0.06.
  EXPECT_NEAR(table.std().item<double>(), 1.0, 0.05);
  EXPECT_NEAR(table.mean().item<double>(), 0.0, 0.06);
}

TEST_F(RandomFixedTest, InitializerParametersAreHonoured) {
  torch::manual_seed(2);
  const torch::Tensor table = make(spec(0.3, 2.0))->table();
  EXPECT_NEAR(table.std().item<double>(), 0.3, 0.015);
  EXPECT_NEAR(table.mean().item<double>(), 2.0, 0.02);
}

TEST_F(RandomFixedTest, HasNoParametersOnlyABuffer) {
  const auto pe = make(spec(), 6, 4);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kAdditive));
  EXPECT_TRUE(pe->parameters().empty());
  const auto buffers = pe->named_buffers();
  ASSERT_EQ(buffers.size(), 1u);
  ASSERT_TRUE(buffers.contains("table"));
  EXPECT_FALSE(pe->table().requires_grad());
  const torch::Tensor x = torch::randn({3, 6, 4});
  EXPECT_TRUE(torch::allclose(pe->embed(x), x + pe->table()));
}

TEST_F(RandomFixedTest, SameSeedSameTable) {
  torch::manual_seed(5);
  const torch::Tensor a = make(spec())->table().clone();
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(a, make(spec())->table()));
  torch::manual_seed(6);
  EXPECT_FALSE(torch::equal(a, make(spec())->table()));
  // One PE per block: successive blocks get their own draws.
  torch::manual_seed(5);
  make(spec());
  EXPECT_FALSE(torch::equal(a, make(spec(), 16, 160, 1)->table()));
}

TEST_F(RandomFixedTest, StaysFixedWhileTheModelTrains) {
  ModelConfig config;
  config.layers = 1;
  config.d_model = 8;
  config.heads = 2;
  config.mlp_ratio = 2;
  torch::manual_seed(7);
  TransformerEncoder model(config, 3, Objective::classification(4), [&](const ModelShape& shape) {
    return registry_.create_positional_encoding(spec(), Layout::sequence(5), shape);
  });
  const torch::Tensor before = model.positional_encodings()[0]->table().clone();
  torch::optim::SGD optimizer(model.parameters(), torch::optim::SGDOptions(0.5));
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    torch::nll_loss(model.forward(torch::randn({4, 5, 3})), torch::randint(4, {4}, torch::kLong))
        .backward();
    optimizer.step();
  }
  EXPECT_TRUE(torch::equal(before, model.positional_encodings()[0]->table()));
  EXPECT_TRUE(torch::equal(before, model.snapshot(0).tables[0]));
}

TEST_F(RandomFixedTest, TrainsInsideTheModel) {
  test::expect_trains_in_model(registry_, spec(), Layout::sequence(6), 8, 2);
}

}  // namespace
}  // namespace pelab
