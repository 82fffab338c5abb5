// The masked-token splits that the network_simulation and brain tasks share: their parameters,
// names, which data each split is cut from with which mask ratio, and the error for another name.

#include "masked_splits.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"

namespace pelab::tasks {
namespace {

using ::testing::HasSubstr;

Params ratios(double mask_ratio, double high_mask_ratio) {
  Params params;
  params.set("mask_ratio", mask_ratio);
  params.set("high_mask_ratio", high_mask_ratio);
  return params;
}

Dataset data_of(float value) {
  Dataset data;
  data.inputs = torch::full({3, 4, 2}, value);
  data.targets = data.inputs;
  return data;
}

TEST(MaskedSplits, DeclaresBothRatiosNamingTheTokens) {
  ParamSchema schema;
  MaskedSplits::declare(schema, "parcels");
  EXPECT_EQ(schema.names(), (std::vector<std::string>{"mask_ratio", "high_mask_ratio"}));
  const ParamSpec* low = schema.find("mask_ratio");
  const ParamSpec* high = schema.find("high_mask_ratio");
  ASSERT_TRUE(low && high);
  EXPECT_EQ(std::get<double>(low->default_value), 0.5);
  EXPECT_EQ(std::get<double>(high->default_value), 0.9);
  for (const ParamSpec* spec : {low, high}) {
    EXPECT_EQ(spec->min, 0.01);
    EXPECT_EQ(spec->max, 1.0);
  }
  EXPECT_EQ(low->doc, "Fraction of parcels masked in training and in \"test\".");
  EXPECT_EQ(high->doc, "Fraction of parcels masked in \"test_high_mask\".");
}

TEST(MaskedSplits, NamesTrainFirst) {
  EXPECT_EQ(MaskedSplits::names(), (std::vector<std::string>{"train", "test", "test_high_mask"}));
}

TEST(MaskedSplits, EachSplitIsItsDataAtItsRatio) {
  const MaskedSplits splits(ratios(0.3, 0.8), "some");
  int train_calls = 0, test_calls = 0;
  const auto train = [&] {
    ++train_calls;
    return data_of(1.0f);
  };
  const auto test = [&] {
    ++test_calls;
    return data_of(2.0f);
  };

  const Dataset a = splits.load("train", train, test);
  EXPECT_EQ(a.mask_ratio, 0.3);
  EXPECT_EQ(a.inputs[0][0][0].item<float>(), 1.0f);
  EXPECT_EQ(train_calls, 1);
  EXPECT_EQ(test_calls, 0);  // only the data the split needs is made

  const Dataset b = splits.load("test", train, test);
  EXPECT_EQ(b.mask_ratio, 0.3);
  EXPECT_EQ(b.inputs[0][0][0].item<float>(), 2.0f);
  const Dataset c = splits.load("test_high_mask", train, test);
  EXPECT_EQ(c.mask_ratio, 0.8);
  EXPECT_EQ(c.inputs[0][0][0].item<float>(), 2.0f);
  EXPECT_EQ(train_calls, 1);
  EXPECT_EQ(test_calls, 2);
}

TEST(MaskedSplits, AnotherSplitIsRefusedNamingTheTask) {
  const MaskedSplits splits(ratios(0.5, 0.9), "network_simulation");
  try {
    splits.load(
        "validation", [] { return data_of(0.0f); }, [] { return data_of(0.0f); });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the network_simulation task has no split 'validation'; "
                                    "its splits are train, test, test_high_mask"));
  }
}

}  // namespace
}  // namespace pelab::tasks
