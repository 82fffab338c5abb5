// The marker_position task: one marked token per sample, and the target is where it is.

#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/interfaces/task.h"
#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class MarkerPosition : public ::testing::Test {
 protected:
  MarkerPosition() : registry_(test::builtin_registry()) {}

  // The plugin's defaults, with `overrides` on top.
  std::shared_ptr<Task> make(const std::map<std::string, std::int64_t>& overrides = {}) {
    PluginSpec spec;
    spec.kind = PluginKind::kTask;
    spec.name = "marker_position";
    for (const ParamSpec& param : registry_.schema(PluginKind::kTask, spec.name).specs()) {
      spec.params.set(param.name, param.default_value);
    }
    for (const auto& [name, value] : overrides)
      spec.params.set(name, value);
    return registry_.create_task(spec);
  }

  Registry registry_;
};

TEST_F(MarkerPosition, DeclaresItsParameters) {
  const ParamSchema& schema = registry_.schema(PluginKind::kTask, "marker_position");
  EXPECT_EQ(schema.names(),
            (std::vector<std::string>{"tokens", "train_samples", "test_samples", "data_seed"}));
  EXPECT_EQ(std::get<std::int64_t>(schema.find("tokens")->default_value), 8);
  EXPECT_EQ(schema.find("tokens")->min, 2.0);
  for (const ParamSpec& param : schema.specs())
    EXPECT_FALSE(param.doc.empty()) << param.name;
}

TEST_F(MarkerPosition, ShapeOfTheProblem) {
  const auto task = make({{"tokens", 6}});
  const Layout layout = task->layout();
  EXPECT_EQ(layout.tokens, 6);
  EXPECT_EQ(layout.dims(), 1);
  EXPECT_TRUE(layout.coordinates_visible);
  EXPECT_NO_THROW(layout.validate());
  EXPECT_EQ(task->input_size(), 2);
  EXPECT_EQ(task->objective().outputs, 6);
  EXPECT_EQ(task->splits(), (std::vector<std::string>{"train", "test"}));
}

TEST_F(MarkerPosition, EachSampleHasOneMarkerAtItsTarget) {
  const auto task = make({{"tokens", 6}, {"train_samples", 200}});
  const Dataset data = task->load("train");
  ASSERT_EQ(data.size(), 200);
  EXPECT_NO_THROW(data.validate("train", 6, 2, Objective::classification(6)));
  EXPECT_EQ(data.group_names, (std::vector<std::string>{"first_half", "second_half"}));

  const torch::Tensor markers = data.inputs.select(2, 0);  // [samples, tokens]
  EXPECT_TRUE(torch::equal(markers.sum(1), torch::ones({200})));
  EXPECT_TRUE(torch::equal(markers.argmax(1), data.targets));
  const torch::Tensor distractors = data.inputs.select(2, 1);
  EXPECT_LE(distractors.abs().max().item<float>(), 1.0f);
  EXPECT_GT(distractors.std().item<float>(), 0.3f);  // uniform on [-1, 1]: std 0.577
  EXPECT_TRUE(torch::equal(data.groups, data.targets.ge(3).to(torch::kInt64)));
  // Every position occurs.
  EXPECT_EQ(std::get<0>(torch::_unique(data.targets)).numel(), 6);
}

TEST_F(MarkerPosition, DataDependsOnlyOnTheDataSeed) {
  torch::manual_seed(1);
  const Dataset a = make()->load("train");
  torch::manual_seed(2);  // the run's seed must not matter
  const Dataset b = make()->load("train");
  EXPECT_TRUE(torch::equal(a.inputs, b.inputs));
  EXPECT_TRUE(torch::equal(a.targets, b.targets));

  const Dataset other = make({{"data_seed", 1}})->load("train");
  EXPECT_FALSE(torch::equal(a.inputs, other.inputs));

  const Dataset test = make()->load("test");
  EXPECT_EQ(test.size(), 256);
  EXPECT_FALSE(torch::equal(a.inputs.slice(0, 0, 256), test.inputs));
}

TEST_F(MarkerPosition, EmptyTestSplit) {
  const Dataset test = make({{"test_samples", 0}})->load("test");
  EXPECT_EQ(test.size(), 0);
  EXPECT_NO_THROW(test.validate("test", 8, 2, Objective::classification(8)));
}

}  // namespace
}  // namespace pelab
