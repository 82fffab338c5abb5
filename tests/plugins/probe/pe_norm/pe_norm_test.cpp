// The PE-norm probe on hand-built snapshots with known norms.

#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/plugins/registry.h"
#include "test_support.h"

namespace pelab {
namespace {

class PENorm : public ::testing::Test {
 protected:
  PENorm() : registry_(test::builtin_registry()), layout_(Layout::sequence(2)) {
    PluginSpec spec;
    spec.kind = PluginKind::kProbe;
    spec.name = "pe_norm";
    probe_ = registry_.create_probe(spec);
  }

  ProbeResult run(const std::vector<PESnapshot>& snapshots) {
    return probe_->run(ProbeContext{layout_, snapshots, nullptr, nullptr, &registry_});
  }

  static PESnapshot tables(std::int64_t epoch, const std::vector<std::vector<float>>& per_pe) {
    // Each PE's 2 x 2 table, row-major.
    std::vector<torch::Tensor> stacked;
    for (const auto& values : per_pe)
      stacked.push_back(torch::tensor(values).reshape({2, 2}));
    PESnapshot snapshot;
    snapshot.epoch = epoch;
    snapshot.tables = torch::stack(stacked);
    return snapshot;
  }

  Registry registry_;
  Layout layout_;
  std::shared_ptr<Probe> probe_;
};

TEST_F(PENorm, TakesNoParameters) {
  EXPECT_TRUE(registry_.schema(PluginKind::kProbe, "pe_norm").empty());
}

TEST_F(PENorm, KnownAnswer) {
  PESnapshot kernels_only;  // a snapshot without tables is skipped
  kernels_only.epoch = 3;
  kernels_only.kernels = torch::ones({2, 2, 2});
  const ProbeResult result = run({
      tables(0, {{3, 4, 0, 0}, {1, 0, 0, 0}}),                // norms 5 and 1
      kernels_only, tables(5, {{6, 8, 0, 0}, {0, 0, 0, 2}}),  // norms 10 and 2
  });
  ASSERT_EQ(result.scalars.size(), 3u);
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_initial"), 3.0);  // mean of 5 and 1
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_final"), 6.0);    // mean of 10 and 2
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_ratio"), 2.0);    // mean of 10/5 and 2/1

  ASSERT_EQ(result.arrays.size(), 2u);
  const torch::Tensor norms = result.arrays.at("norms");
  EXPECT_EQ(norms.scalar_type(), torch::kFloat64);
  EXPECT_TRUE(torch::allclose(norms, torch::tensor({{5.0, 1.0}, {10.0, 2.0}}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(result.arrays.at("epochs"), torch::tensor({0.0, 5.0}, torch::kFloat64)));
}

TEST_F(PENorm, RatioIsPerPEThenAveraged) {
  // Not the ratio of the means: (4/1 + 1/4) / 2, not (4 + 1) / (1 + 4).
  const ProbeResult result =
      run({tables(0, {{1, 0, 0, 0}, {4, 0, 0, 0}}), tables(1, {{4, 0, 0, 0}, {1, 0, 0, 0}})});
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_ratio"), (4.0 + 0.25) / 2);
}

TEST_F(PENorm, SingleSnapshot) {
  const ProbeResult result = run({tables(0, {{0, 0, 3, 4}})});
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_initial"), 5.0);
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_final"), 5.0);
  EXPECT_DOUBLE_EQ(result.scalars.at("norm_ratio"), 1.0);
}

TEST_F(PENorm, ZeroInitialTableStaysFinite) {
  const ProbeResult result = run({tables(0, {{0, 0, 0, 0}}), tables(1, {{1, 0, 0, 0}})});
  EXPECT_TRUE(std::isfinite(result.scalars.at("norm_ratio")));
}

TEST_F(PENorm, NothingToReportWithoutTables) {
  PESnapshot kernels_only;
  kernels_only.kernels = torch::ones({1, 2, 2});
  EXPECT_TRUE(run({}).scalars.empty());
  const ProbeResult result = run({kernels_only});
  EXPECT_TRUE(result.scalars.empty());
  EXPECT_TRUE(result.arrays.empty());
}

}  // namespace
}  // namespace pelab
