// Loads the built plugin through the registry, as `pelab run` does.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"

namespace pelab {
namespace {

class LatinSquarePlugin : public ::testing::Test {
 protected:
  LatinSquarePlugin() : registry_(Registry::default_search_path()) {}

  // The plugin's defaults, with `overrides` on top.
  PluginSpec spec(const std::map<std::string, ParamValue>& overrides = {}) {
    PluginSpec spec;
    spec.kind = PluginKind::kTask;
    spec.name = "latin_square";
    for (const ParamSpec& param : registry_.schema(PluginKind::kTask, "latin_square").specs()) {
      spec.params.set(param.name, param.default_value);
    }
    for (const auto& [name, value] : overrides)
      spec.params.set(name, value);
    return spec;
  }

  Registry registry_;
};

TEST_F(LatinSquarePlugin, DeclaresItsParameters) {
  const ParamSchema& schema = registry_.schema(PluginKind::kTask, "latin_square");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"source", "train_fraction", "split_seed",
                                                      "generated_per_condition", "generator_seed",
                                                      "min_jaccard_distance", "train_limit",
                                                      "eval_noise_std", "data_dir"}));
  for (const ParamSpec& param : schema.specs())
    EXPECT_FALSE(param.doc.empty()) << param.name;
  EXPECT_EQ(schema.find("source")->choices, (std::vector<std::string>{"paper", "generated"}));
}

TEST_F(LatinSquarePlugin, LoadsThePaperData) {
  const std::shared_ptr<Task> task =
      registry_.create_task(spec({{"train_limit", std::int64_t{30}}}));
  const Layout layout = task->layout();
  EXPECT_EQ(layout.tokens, 16);
  EXPECT_EQ(layout.grid_shape, (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(layout.axis_names, (std::vector<std::string>{"row", "column"}));
  EXPECT_FALSE(layout.coordinates_visible);
  EXPECT_EQ(task->input_size(), 5);
  EXPECT_EQ(task->objective().outputs, 4);
  EXPECT_EQ(task->splits(), (std::vector<std::string>{"train", "test", "human"}));

  const Dataset train = task->load("train");
  train.validate("train", 16, 5, Objective::classification(4));
  EXPECT_EQ(train.size(), 30);
  EXPECT_EQ(torch::bincount(train.groups).sizes().vec(), (std::vector<std::int64_t>{3}));
  EXPECT_TRUE(torch::equal(torch::bincount(train.groups), torch::full({3}, 10, torch::kInt64)));
  const Dataset test = task->load("test");
  test.validate("test", 16, 5, Objective::classification(4));
  EXPECT_EQ(test.size(), 900);
  const Dataset human = task->load("human");
  human.validate("human", 16, 5, Objective::classification(4));
  EXPECT_EQ(human.size(), 108);
  EXPECT_EQ(human.group_names, (std::vector<std::string>{"binary", "ternary", "quaternary"}));
  EXPECT_THROW(task->load("validation"), Error);
}

TEST_F(LatinSquarePlugin, GeneratesItsOwnData) {
  const std::shared_ptr<Task> task =
      registry_.create_task(spec({{"source", std::string("generated")},
                                  {"generated_per_condition", std::int64_t{50}},
                                  {"generator_seed", std::int64_t{3}}}));
  EXPECT_EQ(task->load("train").size(), 135);  // 45 per condition
  EXPECT_EQ(task->load("test").size(), 15);
  EXPECT_EQ(task->load("human").size(), 108);
}

TEST_F(LatinSquarePlugin, AddsNoiseOnlyInEvaluation) {
  const std::shared_ptr<Task> task =
      registry_.create_task(spec({{"eval_noise_std", 0.2}, {"train_limit", std::int64_t{3}}}));
  const torch::Tensor embedded = torch::zeros({64, 16, 160});
  EXPECT_TRUE(torch::equal(task->perturb_embedding(embedded, /*training=*/true), embedded));
  const torch::Tensor noisy = task->perturb_embedding(embedded, /*training=*/false);
  EXPECT_EQ(noisy.sizes(), embedded.sizes());
  EXPECT_NEAR(noisy.std().item<double>(), 0.2, 0.01);

  const std::shared_ptr<Task> quiet =
      registry_.create_task(spec({{"train_limit", std::int64_t{3}}}));
  EXPECT_TRUE(torch::equal(quiet->perturb_embedding(embedded, /*training=*/false), embedded));
}

TEST_F(LatinSquarePlugin, NamesAMissingDataFolder) {
  try {
    registry_.create_task(spec({{"data_dir", std::string("/nonexistent/lst")}}));
    FAIL() << "expected pelab::Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("/nonexistent/lst/puzzle_data_original.csv"), std::string::npos)
        << message;
    EXPECT_NE(message.find("set data_dir"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace pelab
