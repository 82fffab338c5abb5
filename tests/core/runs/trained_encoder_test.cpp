// TrainedEncoder: what a probe may do with the trained model (interfaces/trained_model.h).

#include "pelab/runs/trained_encoder.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../../plugins/probe/probe_test_support.h"
#include "pelab/base/error.h"
#include "test_support.h"

namespace pelab {
namespace {

std::vector<double> metric_values(const std::vector<MetricRow>& rows) {
  std::vector<double> out;
  for (const MetricRow& row : rows)
    out.push_back(row.value);
  return out;
}

class TrainedEncoderTest : public ::testing::Test {
 protected:
  TrainedEncoderTest() : registry_(test::builtin_registry()) {}
  Registry registry_;
};

TEST_F(TrainedEncoderTest, EvaluatesWithReplacedTablesAndRestoresThem) {
  const test::MarkerModel made = test::marker_model(registry_, "learned", /*tokens=*/5,
                                                    /*test_samples=*/24, /*heads=*/1, /*seed=*/7);
  made.model->eval();
  TrainedEncoder trained(*made.model, *made.task);
  ASSERT_EQ(trained.pe_count(), 2);
  const auto tensors = trained.replaceable_tensors(0);
  ASSERT_EQ(tensors.size(), 1u);
  const torch::Tensor table = tensors.at("table");
  EXPECT_EQ(table.sizes(), (std::vector<std::int64_t>{5, 8}));

  const std::vector<double> baseline = metric_values(trained.evaluate({}));
  ASSERT_FALSE(baseline.empty());
  const torch::Tensor zeros = torch::zeros_like(table);
  const std::vector<double> replaced =
      metric_values(trained.evaluate({{0, "table", zeros * 50 + 3}, {1, "table", zeros}}));
  EXPECT_NE(replaced, baseline);
  // The model is as it was: the same table, the same evaluation to the last bit.
  EXPECT_TRUE(torch::equal(trained.replaceable_tensors(0).at("table"), table));
  EXPECT_EQ(metric_values(trained.evaluate({})), baseline);

  // A replacement that does not fit: an error, and the one put in before it is taken out again.
  EXPECT_THROW(trained.evaluate({{0, "table", zeros + 1}, {1, "table", torch::zeros({3, 3})}}),
               Error);
  EXPECT_THROW(trained.evaluate({{0, "frequencies", zeros}}), Error);
  EXPECT_THROW(trained.evaluate({{2, "table", zeros}}), Error);
  EXPECT_TRUE(torch::equal(trained.replaceable_tensors(0).at("table"), table));
  EXPECT_EQ(metric_values(trained.evaluate({})), baseline);
}

TEST_F(TrainedEncoderTest, SaysWhyAPEHasNothingToReplace) {
  const test::MarkerModel made = test::marker_model(registry_, "alibi", 5, 8, 1, 7);
  TrainedEncoder trained(*made.model, *made.task);
  ASSERT_GT(trained.pe_count(), 0);
  std::string why_not;
  EXPECT_TRUE(trained.replaceable_tensors(0, &why_not).empty());
  EXPECT_NE(why_not.find("has no table"), std::string::npos) << why_not;
}

TEST_F(TrainedEncoderTest, GivesEveryBlocksAttention) {
  const test::MarkerModel made = test::marker_model(registry_, "learned", 5, 8, 2, 7);
  TrainedEncoder trained(*made.model, *made.task);
  const Dataset data = made.task->load("test");
  const auto maps = trained.attention_maps(data.inputs.slice(0, 0, 3));
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].sizes(), (std::vector<std::int64_t>{3, 2, 5, 5}));
  EXPECT_TRUE(torch::allclose(maps[1].sum(-1), torch::ones({3, 2, 5})));
}

}  // namespace
}  // namespace pelab
