// The intervention probe's known answers on a small model of the marker task: no PE, no change;
// a table whose rows are all alike, no change under permutation; a PE reset to the values it has,
// or transplanted from a run holding the same PE, no change; a model whose rows differ, a change.

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/interfaces/task.h"
#include "pelab/model/transformer_encoder.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run_folder.h"
#include "pelab/runs/trained_encoder.h"
#include "probe_test_support.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::testing::HasSubstr;

class Intervention : public ::testing::Test {
 protected:
  Intervention() : registry_(test::builtin_registry()) {}

  void build(const std::string& pe_plugin) {
    test::MarkerModel made = test::marker_model(registry_, pe_plugin, /*tokens=*/6,
                                                /*test_samples=*/48, /*heads=*/1, /*seed=*/3);
    task_ = made.task;
    layout_ = made.layout;
    model_ = made.model;
    model_->eval();
    snapshots_ = {model_->snapshot(0)};
  }

  ProbeResult run(const std::string& reference_run = "", const std::string& tensor = "table") {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "pe_intervention");
    spec.params.set("permutations", std::int64_t{3});
    spec.params.set("reference_run", reference_run);
    spec.params.set("tensor", tensor);
    TrainedEncoder trained(*model_, *task_);
    return registry_.create_probe(spec)->run(
        ProbeContext{layout_, snapshots_, &trained, task_.get(), &registry_});
  }

  // Every "worse by" scalar of one intervention kind, e.g. "reset_".
  static std::vector<double> changes(const ProbeResult& result, const std::string& kind) {
    std::vector<double> out;
    for (const auto& [name, value] : result.scalars) {
      if (name.rfind(kind, 0) == 0 && name.find("_std") == std::string::npos) out.push_back(value);
    }
    return out;
  }

  Registry registry_;
  std::shared_ptr<Task> task_;
  Layout layout_;
  std::shared_ptr<TransformerEncoder> model_;
  std::vector<PESnapshot> snapshots_;
};

TEST_F(Intervention, NoPeNoChange) {
  build("none");
  const ProbeResult result = run();
  EXPECT_THAT(result.note, HasSubstr("no intervention changes it"));
  EXPECT_TRUE(changes(result, "permuted").empty());
}

TEST_F(Intervention, RowsAllAlikeAreUnchangedByPermutation) {
  build("learned");
  {
    torch::NoGradGuard no_grad;
    for (const auto& pe : model_->positional_encodings()) {
      torch::Tensor table = pe->table();
      table.copy_(table[0].expand_as(table).clone());  // a PE that says nothing about position
    }
  }
  const ProbeResult result = run();
  const std::vector<double> permuted = changes(result, "permuted");
  ASSERT_FALSE(permuted.empty());
  for (const double change : permuted)
    EXPECT_EQ(change, 0.0);
}

TEST_F(Intervention, ResetToItsOwnValuesAndAnIdentityTransplantChangeNothing) {
  build("learned");
  test::ScratchDir reference;
  RunFolder(reference.path())
      .write_snapshot(model_->snapshot(7));  // this very PE, as a run's final
  const ProbeResult result = run(reference.path());
  for (const char* kind : {"reset_", "transplant_"}) {
    const std::vector<double> each = changes(result, kind);
    ASSERT_FALSE(each.empty()) << kind;
    for (const double change : each)
      EXPECT_EQ(change, 0.0) << kind;
  }
  // The rows of a random table do say where a token is: shuffling them changes the model.
  double moved = 0.0;
  for (const double change : changes(result, "permuted"))
    moved += std::abs(change);
  EXPECT_GT(moved, 0.0);
  EXPECT_TRUE(result.scalars.count("permuted_all_test_accuracy_std"));
  EXPECT_TRUE(result.scalars.count("permuted_test_loss_block1"));
  ASSERT_FALSE(result.headlines.empty());
  EXPECT_EQ(result.headlines.front().scalar, "permuted_all_test_accuracy");
}

TEST_F(Intervention, AChangedPeChangesTheModelAndRestoringIsExact) {
  build("learned");
  const torch::Tensor before = model_->snapshot(0).tables.clone();
  // The initial snapshot differs from the model's PE: a reset is a real intervention.
  snapshots_.front().tables = snapshots_.front().tables * 5.0;
  const ProbeResult result = run();
  double moved = 0.0;
  for (const double change : changes(result, "reset_"))
    moved += std::abs(change);
  EXPECT_GT(moved, 0.0);
  EXPECT_TRUE(torch::equal(model_->snapshot(0).tables, before));  // every table put back
}

TEST_F(Intervention, ATransplantOfAnotherShapeIsRefusedSayingWhy) {
  build("learned");
  test::ScratchDir reference;
  PESnapshot other;
  other.epoch = 40;
  other.tables = torch::zeros({2, 6, 16});
  RunFolder(reference.path()).write_snapshot(other);
  try {
    run(reference.path());
    FAIL() << "a PE of width 16 was transplanted into a model of width 8";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("(epoch 40) holds the PE's 'table' of shape [2, 6, 16], but "
                                    "this model's is [2, 6, 8]"));
  }
  test::ScratchDir empty;
  try {
    run(empty.path());
    FAIL() << "a folder without snapshots was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("has no PE 'table' in"));
  }
}

// A rotary PE has no table; its parameters are replaced by name (or by "auto"): learned_rotary's
// angles, whose rows are the tokens, are permuted and reset, and every one is put back after.
TEST_F(Intervention, ARotaryPEsParametersAreReplacedByName) {
  build("learned_rotary");
  const ProbeResult by_table = run();
  EXPECT_THAT(by_table.note, HasSubstr("the PE has no tensor 'table' to replace; it has angles"));
  EXPECT_TRUE(changes(by_table, "permuted").empty());

  const auto angles = [&] {
    return model_->positional_encodings()[0]->named_parameters()["angles"];
  };
  const torch::Tensor before = angles().detach().clone();
  snapshots_.front().tensors["angles"] = snapshots_.front().tensors["angles"] * 5.0;
  for (const std::string tensor : {"angles", "auto"}) {
    const ProbeResult result = run("", tensor);
    double moved = 0.0;
    for (const char* kind : {"permuted", "reset_"})
      for (const double change : changes(result, kind))
        moved += std::abs(change);
    EXPECT_GT(moved, 0.0) << tensor;
    EXPECT_TRUE(torch::equal(angles(), before)) << tensor;  // put back
  }
}

// Frequencies are a parameter whose rows are not the tokens: reset, but not permuted.
TEST_F(Intervention, ATensorWhoseRowsAreNotTokensIsNotPermuted) {
  build("rope_mixed");
  snapshots_.front().tensors["frequencies"] = snapshots_.front().tensors["frequencies"] * 3.0;
  const ProbeResult result = run("", "frequencies");
  EXPECT_TRUE(changes(result, "permuted").empty());
  EXPECT_FALSE(changes(result, "reset_").empty());
}

}  // namespace
}  // namespace pelab
