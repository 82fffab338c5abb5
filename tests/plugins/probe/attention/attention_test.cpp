// The attention probe on a small untrained model of the marker task.

#include <cmath>
#include <memory>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/interfaces/task.h"
#include "pelab/io/file_io.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/trained_encoder.h"
#include "probe_test_support.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class Attention : public ::testing::Test {
 protected:
  Attention() : registry_(test::builtin_registry()) {
    test::MarkerModel made = test::marker_model(registry_, "learned", /*tokens=*/5,
                                                /*test_samples=*/40, /*heads=*/2, /*seed=*/1);
    task_ = made.task;
    layout_ = made.layout;
    model_ = made.model;
  }

  ProbeResult run(const std::string& reference_run = "", std::int64_t max_samples = 1024,
                  bool with_model = true) {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "attention");
    spec.params.set("reference_run", reference_run);
    spec.params.set("max_samples", max_samples);
    spec.params.set("batch_size", std::int64_t{16});
    TrainedEncoder trained(*model_, *task_);
    return registry_.create_probe(spec)->run(ProbeContext{
        layout_, snapshots_, with_model ? &trained : nullptr, task_.get(), &registry_});
  }

  Registry registry_;
  std::shared_ptr<Task> task_;
  Layout layout_;
  std::shared_ptr<TransformerEncoder> model_;
  std::vector<PESnapshot> snapshots_;
};

TEST_F(Attention, MeanMapsOverTheTestSplit) {
  const ProbeResult result = run();
  const torch::Tensor maps = result.arrays.at("maps");
  ASSERT_EQ(maps.sizes(), (std::vector<std::int64_t>{2, 2, 5, 5}));  // blocks, heads, N, N
  EXPECT_TRUE(torch::allclose(maps.sum(-1), torch::ones({2, 2, 5}, torch::kFloat64), 1e-5));
  // The mean of the per-sample maps, batched or not.
  const Dataset test = task_->load("test");
  const auto direct = model_->attention_maps(test.inputs);
  EXPECT_TRUE(torch::allclose(maps[1], direct[1].to(torch::kFloat64).mean(0), 1e-5, 1e-6));
  for (const char* name : {"entropy", "entropy_block0", "entropy_block1"}) {
    const double entropy = result.scalars.at(name);
    EXPECT_GE(entropy, 0.0) << name;
    EXPECT_LE(entropy, std::log(5.0) + 1e-9) << name;
  }
  EXPECT_THAT(result.note, HasSubstr("40 samples of split 'test'"));
}

TEST_F(Attention, ComparedWithAReferenceRun) {
  test::ScratchDir reference;
  write_npy(reference / "probes/attention-maps.npy", run().arrays.at("maps"));
  const ProbeResult same = run(reference.path());
  EXPECT_NEAR(same.scalars.at("similarity"), 1.0, 1e-9);
  EXPECT_NEAR(same.scalars.at("similarity_block1"), 1.0, 1e-9);
  // Uniform attention: the cosine with the model's maps is below 1.
  write_npy(reference / "probes/attention-maps.npy",
            torch::full({2, 2, 5, 5}, 0.2, torch::kFloat64));
  const double uniform = run(reference.path()).scalars.at("similarity");
  EXPECT_LT(uniform, 1.0 - 1e-6);
  EXPECT_GT(uniform, 0.5);
}

TEST_F(Attention, ClearErrorsForABadReference) {
  test::ScratchDir reference;
  try {
    run(reference.path());
    FAIL() << "a missing reference must be an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no probes/attention-maps.npy"));
  }
  write_npy(reference / "probes/attention-maps.npy", torch::zeros({3, 2, 5, 5}));
  try {
    run(reference.path());
    FAIL() << "a reference of another shape must be an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("shape [3, 2, 5, 5]"));
    EXPECT_THAT(e.what(), HasSubstr("[2, 2, 5, 5]"));
  }
}

TEST_F(Attention, FewerSamples) {
  EXPECT_THAT(run("", 7).note, HasSubstr("7 samples"));
}

TEST_F(Attention, NoModelNoMaps) {
  const ProbeResult result = run("", 1024, /*with_model=*/false);
  EXPECT_TRUE(result.scalars.empty());
  EXPECT_TRUE(result.arrays.empty());
  EXPECT_FALSE(result.note.empty());
}

}  // namespace
}  // namespace pelab
