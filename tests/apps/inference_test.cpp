// The report's inference (apps/pelab/report/inference.h) against scipy and numpy, and known cases.
// The scipy values come from tests/apps/inference_expected.py (its header says how to run it).

#include "report/inference.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pelab::report {
namespace {

using ::testing::HasSubstr;

std::map<std::int64_t, double> by_seed(const std::vector<double>& values,
                                       std::int64_t first_seed = 1) {
  std::map<std::int64_t, double> out;
  for (std::size_t i = 0; i < values.size(); ++i)
    out[first_seed + static_cast<std::int64_t>(i)] = values[i];
  return out;
}

TEST(InferenceTest, PairedSignFlipMatchesScipy) {
  const auto a = by_seed({0.61, 0.72, 0.55, 0.80, 0.67});
  const auto b = by_seed({0.70, 0.75, 0.62, 0.79, 0.74});
  const Comparison c = compare(a, b);
  EXPECT_TRUE(c.paired);
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.n, 5u);
  EXPECT_NEAR(c.difference, 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(c.p, 0.125);  // scipy.stats.permutation_test, permutation_type='samples'
  EXPECT_DOUBLE_EQ(c.min_p, 0.0625);
  EXPECT_LE(c.ci_low, c.difference);
  EXPECT_GE(c.ci_high, c.difference);
}

TEST(InferenceTest, UnpairedPermutationMatchesScipy) {
  const auto a = by_seed({0.61, 0.72, 0.55, 0.80}, 1);
  const auto b = by_seed({0.70, 0.75, 0.62, 0.79, 0.74, 0.90}, 11);
  const Comparison c = compare(a, b);
  EXPECT_FALSE(c.paired);
  EXPECT_TRUE(c.exact);
  EXPECT_EQ(c.n_a, 4u);
  EXPECT_EQ(c.n_b, 6u);
  EXPECT_NEAR(c.p, 0.2761904761904762, 1e-12);  // permutation_type='independent'
  EXPECT_THAT(c.method(), HasSubstr("unpaired (4 and 6 seeds"));
  // n counts each condition's seeds, never their sum (10 would read as ten seeds a condition).
  EXPECT_THAT(c.text("{:.2f}"), HasSubstr("not resolved at n = 6 + 4, unpaired (about "));
  EXPECT_THAT(c.text("{:.2f}"), HasSubstr(" seeds a condition for 80% power)"));
}

// A small difference between values of a larger magnitude: each relabelling's statistic is
// rounded relative to the values, and the observed labelling must still count as as extreme as
// itself. Before the fix this printed p = 0, "resolved", from one seed a condition.
TEST(InferenceTest, ASmallDifferenceBetweenLargeValuesCountsItsOwnLabelling) {
  const Comparison one = compare(by_seed({0.28031}, 1), by_seed({0.28012}, 2));
  EXPECT_FALSE(one.paired);
  EXPECT_EQ(one.p, 1.0);  // 2 labellings, both as extreme: p = 1
  EXPECT_FALSE(one.resolved());
  const Comparison two = compare(by_seed({0.30017, 0.28031}, 1), by_seed({0.30021, 0.28012}, 3));
  EXPECT_GE(two.p, two.min_p);
  EXPECT_FALSE(two.resolved());
}

TEST(InferenceTest, IdenticalConditionsResolveNothing) {
  const auto a = by_seed({0.3, 0.9, 0.1, 0.5, 0.7});
  const Comparison c = compare(a, a);
  EXPECT_EQ(c.difference, 0.0);
  EXPECT_LE(c.ci_low, 0.0);
  EXPECT_GE(c.ci_high, 0.0);
  EXPECT_EQ(c.p, 1.0);
  EXPECT_FALSE(c.resolved());
  EXPECT_FALSE(c.seeds_for_power);  // no difference observed: no seed count makes one
}

TEST(InferenceTest, AConstantShiftIsExactWithAZeroWidthInterval) {
  const auto a = by_seed({0.3, 0.9, 0.1, 0.5, 0.7, 0.2});
  auto b = a;
  for (auto& [seed, value] : b)
    value += 0.25;
  const Comparison c = compare(a, b);
  EXPECT_NEAR(c.difference, 0.25, 1e-12);
  EXPECT_NEAR(c.ci_low, 0.25, 1e-12);
  EXPECT_NEAR(c.ci_high, 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(c.p, 2.0 / 64.0);  // every seed the same way: the smallest attainable p
  EXPECT_TRUE(c.resolved());
}

TEST(InferenceTest, ThreeSeedsCannotReachFivePercentAndSaySo) {
  const Comparison c = compare(by_seed({0.1, 0.2, 0.3}), by_seed({0.5, 0.7, 0.6}));
  EXPECT_DOUBLE_EQ(c.min_p, 0.25);
  EXPECT_DOUBLE_EQ(c.p, 0.25);
  std::vector<Comparison> table{c};
  apply_holm(table);
  EXPECT_THAT(table[0].text("{:.2f}"),
              HasSubstr("p = 0.25 (the smallest attainable p at this n is 0.25), Holm p = 0.25"));
}

TEST(InferenceTest, SaysWhatItDoesNotResolveAndTheSeedsItWouldNeed) {
  // Differences 0.2, -0.1, 0.15, -0.05: mean 0.05, sd 0.1472 (numpy, ddof 1).
  const Comparison c = compare(by_seed({0.0, 0.0, 0.0, 0.0}), by_seed({0.2, -0.1, 0.15, -0.05}));
  EXPECT_FALSE(c.resolved());
  ASSERT_TRUE(c.seeds_for_power);
  // ((1.959964 + 0.841621) * 0.147196 / 0.05)^2 = 68.02 (inference_expected.py)
  EXPECT_EQ(*c.seeds_for_power, 69);
  EXPECT_THAT(c.text("{:.2f}"), HasSubstr("not resolved at n = 4 (about 69 seeds for 80% power)"));
}

// A difference near 0 asks for millions of seeds: the text says "over 1,000" rather than a
// count nobody would run. Differences 0.1, -0.1, 0.1001, -0.1: mean 0.000025, sd 0.1155, so
// ((1.959964 + 0.841621) * 0.1155 / 0.000025)^2, about 1.7e8.
TEST(InferenceTest, AnAbsurdSeedCountIsSaidAsOverAThousand) {
  const Comparison c = compare(by_seed({0.0, 0.0, 0.0, 0.0}), by_seed({0.1, -0.1, 0.1001, -0.1}));
  ASSERT_TRUE(c.seeds_for_power);
  EXPECT_GT(*c.seeds_for_power, 100000000);
  EXPECT_THAT(c.text("{:.2f}"), HasSubstr("(over 1,000 seeds for 80% power)"));
  EXPECT_EQ(c.power_text("instances"), "over 1,000 instances for 80% power");
}

TEST(InferenceTest, NeverAsksForFewerSeedsThanTheTestNeedsToReachFivePercent) {
  // A large effect over 3 seeds: the normal approximation says 2, the sign flip needs 6.
  const Comparison c = compare(by_seed({0.1, 0.2, 0.3}), by_seed({1.1, 1.25, 1.3}));
  EXPECT_FALSE(c.resolved());
  ASSERT_TRUE(c.seeds_for_power);
  EXPECT_EQ(*c.seeds_for_power, 6);
}

TEST(InferenceTest, SeedsForPowerMatchScipysNormalQuantiles) {
  EXPECT_EQ(seeds_for_power(1.0, 2.0), 32);  // (norm.ppf(.975) + norm.ppf(.8))^2 * 4 = 31.396
  EXPECT_EQ(seeds_for_power(-1.0, 2.0), 32);
  EXPECT_FALSE(seeds_for_power(0.0, 2.0));
}

TEST(InferenceTest, HolmOnAHandComputedTable) {
  // Sorted 0.01, 0.03, 0.04, 0.2 scale by 4, 3, 2, 1 -> 0.04, 0.09, 0.08, 0.2; then running max.
  const std::vector<double> adjusted = holm_adjust({0.01, 0.04, 0.03, 0.2});
  ASSERT_EQ(adjusted.size(), 4u);
  EXPECT_NEAR(adjusted[0], 0.04, 1e-15);
  EXPECT_NEAR(adjusted[1], 0.09, 1e-15);
  EXPECT_NEAR(adjusted[2], 0.09, 1e-15);
  EXPECT_NEAR(adjusted[3], 0.2, 1e-15);
  EXPECT_EQ(holm_adjust({0.5, 0.9}), (std::vector<double>{1.0, 1.0}));
}

TEST(InferenceTest, FisherCombinesPValuesAsScipyDoes) {
  EXPECT_NEAR(*fisher_combined({0.01, 0.2, 0.5}), 0.03176629677613493, 1e-14);
  EXPECT_NEAR(*fisher_combined({0.3}), 0.3, 1e-14);
  EXPECT_FALSE(fisher_combined({std::nan("")}));
}

TEST(InferenceTest, SummarisesAConditionWithItsMedianIqmAndFailures) {
  const ConditionSummary s =
      summarise_condition({3.0, 1.0, 9.0, 4.0, 100.0, 5.0, 2.0, std::nan("")});
  EXPECT_EQ(s.n, 7u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_DOUBLE_EQ(s.median, 4.0);  // numpy.median
  EXPECT_DOUBLE_EQ(s.iqm, 4.6);     // scipy.stats.trim_mean(x, 0.25)
  EXPECT_NEAR(s.mean, 124.0 / 7.0, 1e-12);
  EXPECT_LT(s.ci_low, s.mean);
  EXPECT_GT(s.ci_high, s.mean);
  // Seeded: the same values give the same interval.
  const ConditionSummary again =
      summarise_condition({3.0, 1.0, 9.0, 4.0, 100.0, 5.0, 2.0, std::nan("")});
  EXPECT_EQ(again.ci_low, s.ci_low);
  EXPECT_EQ(again.ci_high, s.ci_high);
}

TEST(InferenceTest, PairsOnlyWhenBothConditionsHoldTheSameSeeds) {
  const auto a = by_seed({0.1, 0.2, 0.3});
  auto b = by_seed({0.4, 0.5, 0.6});
  b[1] = std::nan("");  // a diverged seed: the rest cannot pair one for one
  const Comparison c = compare(a, b);
  EXPECT_FALSE(c.paired);
  EXPECT_EQ(c.n_b, 2u);
}

}  // namespace
}  // namespace pelab::report
