// The coupling rule the network_simulation task and the brain task's synthetic cohort share:
// exp(-distance / length_scale), weaker between modules, each node's strongest inputs kept and
// normalised; and its checks. (The network_simulation task's tests cover it on placed networks.)

#include "network.h"

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pelab::tasks {
namespace {

using ::testing::HasSubstr;

// Four nodes on a line at 0, 0.1, 0.3 and 0.6 (2D), the first two in module 0.
const std::vector<double> kLine = {0.0, 0.0, 0.1, 0.0, 0.3, 0.0, 0.6, 0.0};
const std::vector<std::int64_t> kModules = {0, 0, 1, 1};

TEST(Coupling, DecaysWithDistanceAndIsWeakerBetweenModules) {
  CouplingOptions options;
  options.length_scale = 0.2;
  options.between_module_scale = 0.5;
  options.density = 1.0;  // every input kept
  const Network net = couple(kLine, 2, kModules, options);
  ASSERT_EQ(net.nodes, 4);
  EXPECT_EQ(net.dims, 2);
  EXPECT_EQ(net.positions, kLine);
  EXPECT_EQ(net.module, kModules);
  EXPECT_TRUE(net.centres.empty());
  ASSERT_EQ(net.coupling.size(), 16u);

  // Node 0's inputs before normalisation: exp(-0.5), 0.5 exp(-1.5), 0.5 exp(-3).
  const double w[] = {0.0, std::exp(-0.5), 0.5 * std::exp(-1.5), 0.5 * std::exp(-3.0)};
  const double sum = w[1] + w[2] + w[3];
  for (int j = 0; j < 4; ++j)
    EXPECT_NEAR(net.coupling[j], w[j] / sum, 1e-15) << j;
  for (std::int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(net.coupling[i * 4 + i], 0.0);
    const double row = std::accumulate(&net.coupling[i * 4], &net.coupling[i * 4 + 4], 0.0);
    EXPECT_NEAR(row, 1.0, 1e-15) << i;
  }
}

TEST(Coupling, KeepsEachNodesStrongestInputs) {
  CouplingOptions options;
  options.between_module_scale = 1.0;
  options.density = 0.34;  // round(0.34 x 3) = 1 input
  const Network net = couple(kLine, 2, kModules, options);
  for (std::int64_t i = 0; i < 4; ++i) {
    int kept = 0;
    for (std::int64_t j = 0; j < 4; ++j)
      kept += net.coupling[i * 4 + j] > 0.0;
    EXPECT_EQ(kept, 1) << i;
  }
  EXPECT_EQ(net.coupling[0 * 4 + 1], 1.0);  // node 0's nearest is node 1
  EXPECT_EQ(net.coupling[3 * 4 + 2], 1.0);  // node 3's is node 2
}

TEST(Coupling, NoInputBetweenModulesAtScaleZero) {
  CouplingOptions options;
  options.between_module_scale = 0.0;
  options.density = 1.0;
  const Network net = couple({0.0, 0.0, 0.5, 0.5, 1.0, 1.0}, 2, {0, 0, 1}, options);
  EXPECT_EQ(net.coupling[0 * 3 + 2], 0.0);
  EXPECT_EQ(net.coupling[0 * 3 + 1], 1.0);
  // Node 2 is alone in its module: no possible input, a zero row.
  for (std::int64_t j = 0; j < 3; ++j)
    EXPECT_EQ(net.coupling[2 * 3 + j], 0.0);
}

TEST(Coupling, DistancesAreEuclidean) {
  const Network net = couple(kLine, 2, kModules, CouplingOptions{});
  const std::vector<double> d = distances(net);
  ASSERT_EQ(d.size(), 16u);
  EXPECT_DOUBLE_EQ(d[0 * 4 + 3], 0.6);
  EXPECT_DOUBLE_EQ(d[3 * 4 + 0], 0.6);
  EXPECT_DOUBLE_EQ(d[1 * 4 + 2], 0.2);
  EXPECT_EQ(d[2 * 4 + 2], 0.0);
}

std::string error_of(const std::vector<double>& positions, std::int64_t dims,
                     const std::vector<std::int64_t>& modules, const CouplingOptions& options) {
  try {
    couple(positions, dims, modules, options);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Coupling, RefusesBadInputNamingIt) {
  const CouplingOptions ok;
  EXPECT_THAT(error_of(kLine, 4, kModules, ok), HasSubstr("dims must be 2 or 3, got 4"));
  EXPECT_THAT(error_of({0.0, 0.0}, 2, {0}, ok), HasSubstr("modules must be one id per node"));
  EXPECT_THAT(error_of(kLine, 3, kModules, ok), HasSubstr("positions must be [nodes, dims]"));
  EXPECT_THAT(error_of({0.0, NAN, 1.0, 1.0}, 2, {0, 0}, ok), HasSubstr("at node 0"));
  EXPECT_THAT(error_of(kLine, 2, {0, 0, -1, 1}, ok), HasSubstr("modules must be ids >= 0"));
  CouplingOptions bad;
  bad.length_scale = 0.0;
  EXPECT_THAT(error_of(kLine, 2, kModules, bad), HasSubstr("length_scale must be > 0"));
  bad = ok;
  bad.between_module_scale = -1.0;
  EXPECT_THAT(error_of(kLine, 2, kModules, bad), HasSubstr("between_module_scale must be >= 0"));
  bad = ok;
  bad.density = 1.5;
  EXPECT_THAT(error_of(kLine, 2, kModules, bad), HasSubstr("density must be in (0, 1]"));
  EXPECT_THROW(validate_coupling(bad), std::invalid_argument);
  EXPECT_NO_THROW(validate_coupling(ok));
}

}  // namespace
}  // namespace pelab::tasks
