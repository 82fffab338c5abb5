// The learned PE, loaded through the registry as a run loads it: an N x d parameter table drawn by
// its initializer and added to the tokens.

#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/config/manifest.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class LearnedPE : public ::testing::Test {
 protected:
  LearnedPE() : registry_(test::builtin_registry()) {}

  static PluginSpec spec(double std, double mean = 0.0) {
    auto init = std::make_shared<PluginSpec>();
    init->kind = PluginKind::kInitializer;
    init->name = "normal";
    init->params.set("std", std);
    init->params.set("mean", mean);
    PluginSpec spec;
    spec.kind = PluginKind::kPositionalEncoding;
    spec.name = "learned";
    spec.params.set("init", std::shared_ptr<const PluginSpec>(init));
    spec.params.set("trainable", true);
    return spec;
  }

  std::shared_ptr<PositionalEncoding> make(const PluginSpec& spec, std::int64_t tokens = 16,
                                           std::int64_t d_model = 160, std::int64_t block = 0) {
    return registry_.create_positional_encoding(spec, Layout::sequence(tokens),
                                                ModelShape{d_model, 1, 1, block});
  }

  Registry registry_;
};

TEST_F(LearnedPE, DeclaresItsInitializer) {
  const ParamSchema& schema = registry_.schema(PluginKind::kPositionalEncoding, "learned");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"init", "trainable"}));
  const ParamSpec& init = *schema.find("init");
  EXPECT_EQ(init.type, ParamType::kPlugin);
  EXPECT_EQ(init.plugin_kind, PluginKind::kInitializer);
  EXPECT_EQ(std::get<std::shared_ptr<const PluginSpec>>(init.default_value)->name, "normal");
  EXPECT_FALSE(init.doc.empty());
}

TEST_F(LearnedPE, TableIsTokensByWidth) {
  const auto pe = make(spec(0.2), 16, 160);
  EXPECT_EQ(pe->hooks(), static_cast<unsigned>(PositionalEncoding::kAdditive));
  const torch::Tensor table = pe->table();
  ASSERT_TRUE(table.defined());
  EXPECT_EQ(table.sizes(), (std::vector<std::int64_t>{16, 160}));
  EXPECT_EQ(table.scalar_type(), torch::kFloat32);
  EXPECT_EQ(make(spec(0.2), 7, 12)->table().sizes(), (std::vector<std::int64_t>{7, 12}));
}

TEST_F(LearnedPE, InitialisationHasTheRequestedStd) {
  torch::manual_seed(11);
  for (double std : {0.02, 0.2, 1.0}) {
    const torch::Tensor table = make(spec(std), 16, 160)->table().detach();
    // 2560 draws: the sample std is within ~1.5% of sigma (1 s.e.), the mean within ~0.02 sigma.
    EXPECT_NEAR(table.std().item<double>(), std, 0.1 * std) << std;
    EXPECT_NEAR(table.mean().item<double>(), 0.0, 0.1 * std) << std;
  }
}

TEST_F(LearnedPE, InitialiserMeanIsHonoured) {
  torch::manual_seed(12);
  EXPECT_NEAR(make(spec(0.1, 2.0))->table().mean().item<double>(), 2.0, 0.01);
}

TEST_F(LearnedPE, SameSeedSameTable) {
  torch::manual_seed(5);
  const torch::Tensor a = make(spec(0.2))->table().detach().clone();
  torch::manual_seed(5);
  const torch::Tensor b = make(spec(0.2))->table().detach().clone();
  EXPECT_TRUE(torch::equal(a, b));
  torch::manual_seed(6);
  EXPECT_FALSE(torch::equal(a, make(spec(0.2))->table()));
  // Successive PEs (one per block) get their own draws.
  torch::manual_seed(5);
  make(spec(0.2));
  EXPECT_FALSE(torch::equal(a, make(spec(0.2), 16, 160, 1)->table()));
}

TEST_F(LearnedPE, EmbedAddsTheTable) {
  const auto pe = make(spec(0.2), 6, 4);
  const torch::Tensor x = torch::randn({3, 6, 4});
  EXPECT_TRUE(torch::allclose(pe->embed(x), x + pe->table().unsqueeze(0)));
}

TEST_F(LearnedPE, TableIsATrainableParameter) {
  const auto pe = make(spec(0.2), 6, 4);
  const auto named = pe->named_parameters();
  ASSERT_EQ(named.size(), 1u);
  ASSERT_TRUE(named.contains("table"));
  EXPECT_TRUE(named["table"].requires_grad());
  EXPECT_EQ(named["table"].grad_fn(), nullptr);  // a leaf: the initialisation left no graph

  pe->embed(torch::randn({3, 6, 4})).sum().backward();
  const torch::Tensor grad = pe->table().grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_TRUE(torch::allclose(grad, torch::full({6, 4}, 3.0)));  // one per batch element
}

// trainable = false: the same table, drawn the same way, but a buffer the optimizer never sees.
TEST_F(LearnedPE, NotTrainableTheTableIsAFrozenBuffer) {
  PluginSpec frozen_spec = spec(0.2);
  frozen_spec.params.set("trainable", false);
  torch::manual_seed(9);
  const auto frozen = make(frozen_spec, 6, 4);
  torch::manual_seed(9);
  const auto trained = make(spec(0.2), 6, 4);
  EXPECT_TRUE(frozen->parameters().empty());
  ASSERT_EQ(frozen->named_buffers().size(), 1u);
  EXPECT_FALSE(frozen->table().requires_grad());
  EXPECT_TRUE(torch::equal(frozen->table(), trained->table()));
}

TEST_F(LearnedPE, KernelIsTheGramMatrix) {
  const auto pe = make(spec(0.2), 6, 4);
  const torch::Tensor table = pe->table().detach();
  EXPECT_TRUE(torch::allclose(pe->kernel(), table.matmul(table.t())));
}

TEST_F(LearnedPE, ConfiguredFromAManifest) {
  const std::string text = R"([task]
plugin = "marker_position"
tokens = 16
[model]
d_model = 160
[pe]
plugin = "learned"
init = { plugin = "normal", std = 0.5 }
)";
  const Manifest manifest = Manifest::from_string(text, "learned.toml", registry_);
  const RunConfig& run = manifest.runs()[0];
  torch::manual_seed(13);
  const auto pe =
      registry_.create_positional_encoding(run.pe, Layout::sequence(16), ModelShape{160, 1, 4, 0});
  EXPECT_NEAR(pe->table().std().item<double>(), 0.5, 0.05);
}

}  // namespace
}  // namespace pelab
