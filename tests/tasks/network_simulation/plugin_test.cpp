// The network_simulation task plugin, loaded through the registry as `pelab run` loads it: its
// layout, splits and masks, the data cache, and a short training run end to end.

#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run.h"
#include "test_support.h"

namespace pelab {
namespace {

namespace fs = boost::filesystem;
using ::testing::HasSubstr;

class NetworkSimulationPlugin : public ::testing::Test {
 protected:
  NetworkSimulationPlugin() : registry_(test::builtin_registry()) {}

  // A small network (the defaults, shorter recordings), cached in a scratch folder.
  PluginSpec spec(const std::map<std::string, ParamValue>& overrides = {}) {
    PluginSpec spec = registry_.default_spec(PluginKind::kTask, "network_simulation");
    spec.params.set("nodes", std::int64_t{24});
    spec.params.set("train_windows", std::int64_t{60});
    spec.params.set("test_windows", std::int64_t{20});
    spec.params.set("cache_dir", cache_.path());
    for (const auto& [name, value] : overrides)
      spec.params.set(name, value);
    return spec;
  }

  test::ScratchDir cache_;
  Registry registry_;
};

TEST_F(NetworkSimulationPlugin, TheLayoutIsTheNetworkHiddenFromTheModel) {
  for (const std::int64_t dims : {2, 3}) {
    const auto task = registry_.create_task(spec({{"dims", dims}}));
    const Layout layout = task->layout();
    EXPECT_NO_THROW(layout.validate());
    EXPECT_EQ(layout.tokens, 24);
    EXPECT_EQ(layout.dims(), dims);
    EXPECT_FALSE(layout.coordinates_visible);
    EXPECT_GE(layout.coordinates.min().item<double>(), 0.0);
    EXPECT_LE(layout.coordinates.max().item<double>(), 1.0);
    ASSERT_TRUE(layout.has_communities());
    EXPECT_EQ(std::get<0>(torch::_unique(layout.communities)).numel(), 4);
    EXPECT_EQ(layout.community_names.size(), 4u);
    const torch::Tensor coupling = layout.relations.at("coupling");
    EXPECT_TRUE(torch::allclose(coupling.sum(1), torch::ones({24}, torch::kFloat64)));
    EXPECT_TRUE(coupling.diagonal().eq(0).all().item<bool>());
    const torch::Tensor fc = layout.relations.at("functional_connectivity");
    EXPECT_TRUE(torch::allclose(fc.diagonal(), torch::ones({24}, torch::kFloat64)));
    EXPECT_TRUE(torch::allclose(fc, fc.t()));
  }
}

TEST_F(NetworkSimulationPlugin, SplitsAreZScoredWindowsWithTheirMaskRatios) {
  const auto task = registry_.create_task(spec());
  EXPECT_EQ(task->input_size(), 16);
  EXPECT_TRUE(task->objective().masked());
  EXPECT_EQ(task->objective().outputs, 16);
  EXPECT_EQ(task->splits(), (std::vector<std::string>{"train", "test", "test_high_mask"}));
  const Dataset train = task->load("train");
  EXPECT_EQ(train.inputs.sizes(), (std::vector<std::int64_t>{60, 24, 16}));
  EXPECT_TRUE(torch::equal(train.inputs, train.targets));  // the task reconstructs its input
  EXPECT_EQ(train.mask_ratio, 0.5);
  EXPECT_FALSE(train.masks.defined());  // evaluation masks are the Trainer's
  // Consecutive windows overlap by window - stride = 8 points.
  EXPECT_TRUE(torch::equal(train.inputs[0].slice(1, 8, 16), train.inputs[1].slice(1, 0, 8)));
  // z-scored per node over the recording: the windows' values have mean ~0 and std ~1.
  EXPECT_LT(train.inputs.mean().abs().item<double>(), 0.2);
  EXPECT_NEAR(train.inputs.std().item<double>(), 1.0, 0.2);
  const Dataset test = task->load("test");
  const Dataset high = task->load("test_high_mask");
  EXPECT_EQ(test.inputs.size(0), 20);
  EXPECT_TRUE(torch::equal(test.inputs, high.inputs));  // the same windows, more masked
  EXPECT_EQ(test.mask_ratio, 0.5);
  EXPECT_EQ(high.mask_ratio, 0.9);
  EXPECT_FALSE(torch::equal(train.inputs.slice(0, 0, 20), test.inputs));  // other noise
  try {
    task->load("validation");
    FAIL() << "an unknown split loaded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("its splits are train, test, test_high_mask"));
  }
}

TEST_F(NetworkSimulationPlugin, DeterministicBySeedAndCachedByParameters) {
  const Dataset first = registry_.create_task(spec({{"cache", false}}))->load("train");
  const Dataset cached = registry_.create_task(spec())->load("train");  // simulates, stores
  EXPECT_TRUE(torch::equal(first.inputs, cached.inputs));
  EXPECT_TRUE(fs::is_directory(cache_.path() + "/network_simulation"));
  const auto entries = [&] {
    std::size_t count = 0;
    for (const auto& entry : fs::directory_iterator(cache_.path() + "/network_simulation")) {
      (void)entry;
      ++count;
    }
    return count;
  };
  EXPECT_EQ(entries(), 2u);  // the train and the test recordings
  // A second task reads the cache: same data, no new entry.
  EXPECT_TRUE(torch::equal(registry_.create_task(spec())->load("train").inputs, cached.inputs));
  EXPECT_EQ(entries(), 2u);
  // Another parameter of the dynamics is another entry, and other data.
  const Dataset noisier = registry_.create_task(spec({{"noise_std", 0.1}}))->load("train");
  EXPECT_EQ(entries(), 4u);
  EXPECT_FALSE(torch::equal(noisier.inputs, cached.inputs));
  // The mask ratio does not change the recordings: no new entry.
  registry_.create_task(spec({{"mask_ratio", 0.3}}));
  EXPECT_EQ(entries(), 4u);
  // Another network seed moves the nodes.
  EXPECT_FALSE(torch::equal(
      registry_.create_task(spec({{"network_seed", std::int64_t{5}}}))->layout().coordinates,
      registry_.create_task(spec())->layout().coordinates));
}

TEST_F(NetworkSimulationPlugin, AStaleOrForeignCacheEntryIsNeverUsed) {
  const Dataset fresh = registry_.create_task(spec())->load("train");
  // Overwrite every cached recording with zeros, and every description with another one: the
  // entries no longer describe these parameters, so the task simulates again.
  for (const auto& entry : fs::directory_iterator(cache_.path() + "/network_simulation")) {
    const std::string dir = entry.path().string();
    write_npy(dir + "/activity.npy", torch::zeros({3, 3}, torch::kFloat64));
    std::ofstream(dir + "/description.txt") << "network_simulation recordings v0\n";
  }
  EXPECT_TRUE(torch::equal(registry_.create_task(spec())->load("train").inputs, fresh.inputs));
}

TEST_F(NetworkSimulationPlugin, BadParametersAreErrorsNamingThem) {
  try {
    registry_.create_task(spec({{"modules", std::int64_t{30}}}));  // 30 modules, 24 nodes
    FAIL() << "more modules than nodes passed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("network_simulation task's parameters"));
    EXPECT_THAT(e.what(), HasSubstr("modules"));
  }
  EXPECT_THROW(registry_.create_task(spec({{"sample_interval", 0.07}})), Error);  // not k * dt
}

// One epoch end to end through execute_run: the run folder holds the masked-token metrics of every
// split, and the probes of this experiment report on the learned PE.
// Without noise and pulses the network settles to its fixed point: the z-scored windows would be
// rounding noise, so the task refuses the recording, saying why and what to change.
TEST_F(NetworkSimulationPlugin, ARecordingWithoutSignalIsRefused) {
  try {
    registry_.create_task(spec({{"noise_std", 0.0}, {"stimulus_rate", 0.0}, {"cache", false}}));
    FAIL() << "a recording of a network at its fixed point was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the training recording of the network_simulation task has "
                                    "no signal: node "));
    EXPECT_THAT(e.what(), HasSubstr("below the 0.0001 that counts as a signal"));
    EXPECT_THAT(e.what(), HasSubstr("give the dynamics noise (noise_std > 0) or pulses"));
  }
  // Either source of variation alone is a signal.
  EXPECT_NO_THROW(registry_.create_task(spec({{"noise_std", 0.0}, {"cache", false}})));
  EXPECT_NO_THROW(registry_.create_task(spec({{"stimulus_rate", 0.0}, {"cache", false}})));
}

// Data that cannot fit is refused before anything is allocated, with the figure and the memory.
TEST_F(NetworkSimulationPlugin, DataLargerThanTheMachineIsRefusedWithItsSize) {
  try {
    // 4.2 TB: far beyond any machine the suite runs on.
    registry_.create_task(spec({{"nodes", std::int64_t{1024}},
                                {"train_windows", std::int64_t{1000000}},
                                {"test_windows", std::int64_t{500}},
                                {"window", std::int64_t{1024}}}));
    FAIL() << "a 4.2 TB data set was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the network_simulation task needs "));
    EXPECT_THAT(e.what(), HasSubstr("1000000 + 500 windows (train_windows + test_windows) x 1024 "
                                    "nodes x 1024 points in float32, 4.2 TB of them"));
    EXPECT_THAT(e.what(), HasSubstr("this machine has "));
    EXPECT_THAT(e.what(), HasSubstr("Use fewer train_windows"));
  }
}

TEST_F(NetworkSimulationPlugin, OneEpochEndToEnd) {
  test::ScratchDir out;
  const std::string manifest = fmt::format(R"([experiment]
name = "ns"
seeds = [1]
[task]
plugin = "network_simulation"
nodes = 16
dims = 3
train_windows = 64
test_windows = 16
cache_dir = "{}"
[model]
layers = 1
d_model = 16
heads = 2
[pe]
plugin = "learned"
init = {{ plugin = "normal", std = 0.2 }}
[train]
lr = 0.001
batch_size = 32
epochs = 1
threads = 1
[[probe]]
plugin = "rsa"
permutations = 20
[[probe]]
plugin = "connectivity"
permutations = 20
[[probe]]
plugin = "modularity"
partition = "communities"
)",
                                           cache_.path());
  const Manifest parsed = Manifest::from_string(manifest, "ns.toml", registry_, {});
  const RunOutcome outcome = execute_run(parsed.runs().front(), registry_, out.path());
  for (const std::string split : {"train", "test", "test_high_mask"}) {
    for (const std::string metric : {"mse", "r"}) {
      const std::string key = split + "/all/" + metric;
      ASSERT_TRUE(outcome.final_metrics.count(key)) << key;
      EXPECT_TRUE(std::isfinite(outcome.final_metrics.at(key))) << key;
    }
  }
  EXPECT_FALSE(outcome.final_metrics.count("test/all/accuracy"));
  const auto summary = nlohmann::json::parse(read_file(outcome.dir + "/summary.json"));
  EXPECT_EQ(summary["objective"], "masked_token_regression");
  for (const std::string probe : {"rsa", "connectivity", "modularity"}) {
    EXPECT_TRUE(summary["probes"][probe].contains(probe == "modularity" ? "q" : "spearman"))
        << probe << ": " << read_file(outcome.dir + "/probes/" + probe + ".json");
  }
  EXPECT_THAT(read_file(outcome.dir + "/metrics.csv"), HasSubstr("1,test_high_mask,all,r,"));
}

}  // namespace
}  // namespace pelab
