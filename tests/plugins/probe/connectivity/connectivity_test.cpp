// The connectivity probe: PE similarity against a relation of the tokens, on PEs whose
// correspondence with the relation is known.

#include <cmath>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "probe_test_support.h"
#include "test_support.h"

namespace pelab {
namespace {

using test::snapshot;

constexpr std::int64_t kTokens = 12;

class Connectivity : public ::testing::Test {
 protected:
  Connectivity() : registry_(test::builtin_registry()) {
    torch::manual_seed(5);
    layout_.tokens = kTokens;
    table_ = torch::randn({kTokens, 6}, torch::kFloat64);
    const torch::Tensor unit = table_ / table_.norm(2, {1}, true);
    cosine_ = unit.matmul(unit.t());
  }

  ProbeResult run(const std::vector<PESnapshot>& snapshots, const std::string& relation,
                  std::int64_t permutations = 200) {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "connectivity");
    spec.params.set("relation", relation);
    spec.params.set("permutations", permutations);
    return registry_.create_probe(spec)->run(
        ProbeContext{layout_, snapshots, nullptr, nullptr, &registry_});
  }

  Registry registry_;
  Layout layout_;
  torch::Tensor table_;   // a PE table [tokens, 6]
  torch::Tensor cosine_;  // its rows' cosine similarities
};

TEST_F(Connectivity, ARelationEqualToThePESimilarityGivesOne) {
  layout_.relations["coupling"] = cosine_;
  const ProbeResult result = run({snapshot({table_})}, "coupling");
  EXPECT_NEAR(result.scalars.at("spearman"), 1.0, 1e-9);
  EXPECT_NEAR(result.scalars.at("pearson"), 1.0, 1e-6);  // float32 snapshot
  EXPECT_NEAR(result.scalars.at("spearman_block0"), 1.0, 1e-9);
  EXPECT_LT(result.scalars.at("p_value"), 0.01);
  EXPECT_TRUE(result.note.empty()) << result.note;
  EXPECT_EQ(result.arrays.at("similarity").sizes(), (std::vector<std::int64_t>{1, 12, 12}));
}

// Partial Spearman with a control relation: a PE that mirrors the relation itself keeps exactly
// 1 whatever the control; a PE that mirrors only what the relation shares with the control (both
// are the control plus independent noise) has a high plain Spearman but a partial one near 0.
TEST_F(Connectivity, APartialCorrelationRemovesWhatTheControlExplains) {
  const auto symmetric = [](const torch::Tensor& m) { return (m + m.t()) / 2; };
  torch::manual_seed(11);
  const torch::Tensor unrelated = symmetric(torch::randn({kTokens, kTokens}, torch::kFloat64));
  layout_.relations["coupling"] = cosine_;
  layout_.relations["functional_connectivity"] = unrelated;
  const auto run_controlled = [&](const std::vector<PESnapshot>& snapshots) {
    PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "connectivity");
    spec.params.set("relation", std::string("coupling"));
    spec.params.set("control", std::string("functional_connectivity"));
    spec.params.set("permutations", std::int64_t{200});
    return registry_.create_probe(spec)->run(
        ProbeContext{layout_, snapshots, nullptr, nullptr, &registry_});
  };
  ProbeResult result = run_controlled({snapshot({table_})});
  EXPECT_NEAR(result.scalars.at("partial_spearman"), 1.0, 1e-9);
  EXPECT_NEAR(result.scalars.at("partial_spearman_block0"), 1.0, 1e-9);
  EXPECT_LT(result.scalars.at("partial_p_value"), 0.01);
  EXPECT_EQ(result.headlines.back().scalar, "partial_spearman");

  // The control: the PE's own similarity; the relation and a second PE: the control plus noise.
  layout_.relations["functional_connectivity"] = cosine_;
  layout_.relations["coupling"] =
      cosine_ + 0.3 * symmetric(torch::randn({kTokens, kTokens}, torch::kFloat64));
  const torch::Tensor noisy = table_ + 0.1 * torch::randn({kTokens, 6}, torch::kFloat64);
  result = run_controlled({snapshot({noisy})});
  EXPECT_GT(result.scalars.at("spearman"), 0.85);                    // measured 0.91
  EXPECT_LT(std::abs(result.scalars.at("partial_spearman")), 0.35);  // measured 0.27
}

TEST_F(Connectivity, AControlTheTaskDoesNotHaveIsAnErrorNamingThoseItHas) {
  layout_.relations["coupling"] = cosine_;
  PluginSpec spec = registry_.default_spec(PluginKind::kProbe, "connectivity");
  spec.params.set("control", std::string("distance"));
  try {
    registry_.create_probe(spec)->run(
        ProbeContext{layout_, {snapshot({table_})}, nullptr, nullptr, &registry_});
    FAIL() << "an unknown control was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("control = \"distance\": the task declares no such "
                                         "relation; it has: coupling"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Connectivity, ADirectedRelationIsSymmetrised) {
  // W = S + A with A antisymmetric: (W + W^T) / 2 = S.
  const torch::Tensor random = torch::randn({kTokens, kTokens}, torch::kFloat64);
  layout_.relations["coupling"] = cosine_ + (random - random.t());
  EXPECT_NEAR(run({snapshot({table_})}, "coupling").scalars.at("spearman"), 1.0, 1e-9);
}

TEST_F(Connectivity, AnInvertedRelationGivesMinusOneAndNoSignificance) {
  layout_.relations["functional_connectivity"] = -cosine_;
  const ProbeResult result = run({snapshot({table_})}, "functional_connectivity");
  EXPECT_NEAR(result.scalars.at("spearman"), -1.0, 1e-9);
  EXPECT_GT(result.scalars.at("p_value"), 0.9);
}

TEST_F(Connectivity, AnUnrelatedRelationIsNotSignificant) {
  const torch::Tensor other = torch::randn({kTokens, 6}, torch::kFloat64);
  const torch::Tensor unit = other / other.norm(2, {1}, true);
  layout_.relations["coupling"] = unit.matmul(unit.t());
  const ProbeResult result = run({snapshot({table_})}, "coupling", 500);
  EXPECT_LT(std::abs(result.scalars.at("spearman")), 0.4);
  EXPECT_GT(result.scalars.at("p_value"), 0.05);
}

TEST_F(Connectivity, PerBlockMeanAndHistory) {
  layout_.relations["coupling"] = cosine_;
  const ProbeResult result =
      run({snapshot(0, {torch::randn({kTokens, 6}), torch::randn({kTokens, 6})}),
           snapshot(5, {table_, -table_})},
          "coupling");
  // -P has the same cosine similarities as P.
  EXPECT_NEAR(result.scalars.at("spearman_block0"), 1.0, 1e-9);
  EXPECT_NEAR(result.scalars.at("spearman_block1"), 1.0, 1e-9);
  EXPECT_NEAR(result.scalars.at("spearman"), 1.0, 1e-9);
  EXPECT_TRUE(result.scalars.count("p_value_block1"));
  EXPECT_EQ(result.arrays.at("spearman").sizes(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_TRUE(torch::equal(result.arrays.at("epochs"), torch::tensor({0.0, 5.0}, torch::kFloat64)));
}

TEST_F(Connectivity, KernelsAreComparedNormalised) {
  layout_.relations["coupling"] = cosine_;
  PESnapshot kernel;
  kernel.kernels = table_.matmul(table_.t()).unsqueeze(0).to(torch::kFloat32);
  const ProbeResult result = run({kernel}, "coupling");
  EXPECT_NEAR(result.scalars.at("spearman"), 1.0, 1e-6);
  EXPECT_NE(result.note.find("kernel"), std::string::npos);
}

TEST_F(Connectivity, WhatCannotBeComparedIsSaid) {
  const ProbeResult none = run({snapshot({table_})}, "coupling");
  EXPECT_TRUE(none.scalars.empty());
  EXPECT_NE(none.note.find("declares no relation"), std::string::npos) << none.note;
  layout_.relations["functional_connectivity"] = cosine_;
  const ProbeResult other = run({snapshot({table_})}, "coupling");
  EXPECT_NE(other.note.find("it has: functional_connectivity"), std::string::npos) << other.note;
  EXPECT_TRUE(run({PESnapshot{}}, "functional_connectivity").scalars.empty());  // pe = none
  layout_.relations["coupling"] = torch::eye(5, torch::kFloat64);
  EXPECT_THROW(run({snapshot({table_})}, "coupling"), Error);  // 5 tokens vs 12
}

}  // namespace
}  // namespace pelab
