// The network model's dynamics as the tasks use them: determinism by seed, seeds that differ give
// other noise, an extra pulse changes nothing before it starts, and option errors name the option.
// (The network_simulation task's tests cover the formula and the statistics.)

#include "dynamics.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "network.h"

namespace pelab::tasks {
namespace {

using ::testing::HasSubstr;

Network ring(std::int64_t nodes) {
  std::vector<double> positions;
  std::vector<std::int64_t> modules;
  for (std::int64_t i = 0; i < nodes; ++i) {
    const double angle = 2.0 * M_PI * static_cast<double>(i) / static_cast<double>(nodes);
    positions.push_back(0.5 + 0.4 * std::cos(angle));
    positions.push_back(0.5 + 0.4 * std::sin(angle));
    modules.push_back(i < nodes / 2 ? 0 : 1);
  }
  return couple(positions, 2, modules, CouplingOptions{});
}

DynamicsOptions quick() {
  DynamicsOptions options;
  options.burn_in = 5.0;
  return options;
}

TEST(Dynamics, TheSameSeedGivesTheSameRecording) {
  const Network net = ring(12);
  const Recording a = simulate(net, quick(), 40, 7);
  const Recording b = simulate(net, quick(), 40, 7);
  EXPECT_EQ(a.time_points, 40);
  EXPECT_EQ(a.nodes, 12);
  EXPECT_EQ(a.sample_interval, 0.5);
  ASSERT_EQ(a.activity.size(), 40u * 12u);
  EXPECT_EQ(a.activity, b.activity);
  EXPECT_NE(simulate(net, quick(), 40, 8).activity, a.activity);
  for (const double x : a.activity)
    ASSERT_TRUE(std::isfinite(x));
}

TEST(Dynamics, AnExtraPulseChangesNothingBeforeItStarts) {
  const Network net = ring(12);
  const Recording plain = simulate(net, quick(), 40, 3);
  // At 10 time units after the burn-in: point 20 is its first step.
  const Recording pulsed = simulate_with_pulse(net, quick(), 40, 3, 4, 10.0, 5.0, 1.0);
  for (std::size_t e = 0; e < 21u * 12u; ++e)
    ASSERT_EQ(pulsed.activity[e], plain.activity[e]) << e;
  EXPECT_NE(pulsed.activity, plain.activity);
}

TEST(Dynamics, RefusesOptionsNamingThem) {
  const Network net = ring(6);
  DynamicsOptions bad = quick();
  bad.sample_interval = 0.07;
  try {
    simulate(net, bad, 10, 0);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("sample_interval must be a positive multiple of dt = 0.05"));
  }
  bad = quick();
  bad.stimulus_nodes = 7;
  EXPECT_THROW(simulate(net, bad, 10, 0), std::invalid_argument);
  EXPECT_THROW(simulate_with_pulse(net, quick(), 10, 0, 6, 1.0, 1.0, 1.0), std::invalid_argument);
  Network malformed = net;
  malformed.coupling.pop_back();
  EXPECT_THROW(simulate(malformed, quick(), 10, 0), std::invalid_argument);
}

}  // namespace
}  // namespace pelab::tasks
