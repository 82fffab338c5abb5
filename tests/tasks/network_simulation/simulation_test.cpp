// The network simulation: the network's structure, the coupling on given nodes (network_from),
// the dynamics' formula and statistics, that activity propagates along the coupling, determinism
// and the option checks.

#include "simulation.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pelab::network_simulation {
namespace {

// ---------------------------------------------------------------------------------------------
// Helpers.

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - ma) * (b[i] - mb);
    aa += (a[i] - ma) * (a[i] - ma);
    bb += (b[i] - mb) * (b[i] - mb);
  }
  return ab / std::sqrt(aa * bb);
}

// Ranks from 0, ties sharing their mean rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (std::size_t first = 0; first < order.size();) {
    std::size_t last = first;
    while (last + 1 < order.size() && v[order[last + 1]] == v[order[first]])
      ++last;
    for (std::size_t r = first; r <= last; ++r)
      rank[order[r]] = 0.5 * static_cast<double>(first + last);
    first = last + 1;
  }
  return rank;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  return pearson(ranks(a), ranks(b));
}

double at(const std::vector<double>& matrix, std::int64_t n, std::int64_t i, std::int64_t j) {
  return matrix[i * n + j];
}

// Node i's recorded time series.
std::vector<double> series(const Recording& r, std::int64_t i) {
  std::vector<double> out(r.time_points);
  for (std::int64_t t = 0; t < r.time_points; ++t)
    out[t] = r.activity[t * r.nodes + i];
  return out;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  const double m = mean(v);
  double sum = 0.0;
  for (const double x : v)
    sum += (x - m) * (x - m);
  return std::sqrt(sum / static_cast<double>(v.size()));
}

double sigmoid(double u) {
  return 1.0 / (1.0 + std::exp(-u));
}

// `call` must throw std::invalid_argument whose message names `option`.
void expect_rejected(const std::function<void()>& call, const std::string& option) {
  try {
    call();
    ADD_FAILURE() << "no exception for " << option;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(option), std::string::npos)
        << "message \"" << e.what() << "\" does not name " << option;
  }
}

NetworkOptions options_in(std::int64_t dims, std::uint64_t seed = 0) {
  NetworkOptions options;
  options.dims = dims;
  options.seed = seed;
  return options;
}

// ---------------------------------------------------------------------------------------------
// The network.

TEST(Network, DefaultsAreWellFormed) {
  for (const std::string placement : {"clustered", "uniform"}) {
    for (const std::int64_t dims : {2, 3}) {
      SCOPED_TRACE(placement + " " + std::to_string(dims) + "D");
      NetworkOptions options = options_in(dims);
      options.placement = placement;
      const Network net = make_network(options);
      const std::int64_t n = options.nodes;
      ASSERT_EQ(net.nodes, n);
      ASSERT_EQ(net.dims, dims);
      ASSERT_EQ(net.positions.size(), static_cast<std::size_t>(n * dims));
      ASSERT_EQ(net.module.size(), static_cast<std::size_t>(n));
      ASSERT_EQ(net.centres.size(), static_cast<std::size_t>(options.modules * dims));
      ASSERT_EQ(net.coupling.size(), static_cast<std::size_t>(n * n));
      for (const double p : net.positions) {
        EXPECT_GE(p, 0.0);
        EXPECT_LE(p, 1.0);
      }
      for (const double c : net.centres) {
        EXPECT_GE(c, options.centre_margin);
        EXPECT_LE(c, 1.0 - options.centre_margin);
      }
      std::vector<int> members(options.modules, 0);
      for (const std::int64_t m : net.module) {
        ASSERT_GE(m, 0);
        ASSERT_LT(m, options.modules);
        ++members[m];
      }
      for (const int count : members)
        EXPECT_GT(count, 0);

      const std::int64_t k = std::llround(options.density * static_cast<double>(n - 1));  // 16
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(at(net.coupling, n, i, i), 0.0);
        double sum = 0.0;
        std::int64_t nonzero = 0;
        for (std::int64_t j = 0; j < n; ++j) {
          EXPECT_GE(at(net.coupling, n, i, j), 0.0);
          sum += at(net.coupling, n, i, j);
          nonzero += at(net.coupling, n, i, j) > 0.0;
        }
        EXPECT_NEAR(sum, 1.0, 1e-12);
        EXPECT_EQ(nonzero, k);
      }
    }
  }
}

TEST(Network, ClusteredDealsNodesToModulesRoundRobin) {
  const NetworkOptions options;
  const Network net = make_network(options);
  for (std::int64_t i = 0; i < net.nodes; ++i)
    EXPECT_EQ(net.module[i], i % options.modules);
}

// "shuffled" is the round-robin network with its nodes relabelled: each token j is some node
// order[j] of it, with that node's position, module and couplings; the modules are then no longer
// i mod modules, and the order depends on the seed.
TEST(Network, ShuffledNodeOrderRelabelsTheSameNetwork) {
  for (const std::string placement : {"clustered", "uniform"}) {
    SCOPED_TRACE(placement);
    NetworkOptions options = options_in(2, 3);
    options.placement = placement;
    const Network as_placed = make_network(options);
    options.node_order = "shuffled";
    const Network shuffled = make_network(options);
    ASSERT_EQ(shuffled.nodes, as_placed.nodes);
    EXPECT_EQ(shuffled.centres, as_placed.centres);
    // Find each token's node by its position (distinct: continuous draws).
    const std::int64_t n = as_placed.nodes;
    std::vector<std::int64_t> order(static_cast<std::size_t>(n), -1);
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < n; ++i) {
        if (shuffled.positions[j * 2] == as_placed.positions[i * 2] &&
            shuffled.positions[j * 2 + 1] == as_placed.positions[i * 2 + 1])
          order[j] = i;
      }
      ASSERT_GE(order[j], 0) << "token " << j << " is no node of the placed network";
    }
    std::vector<std::int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(sorted[i], i) << "not a permutation";
    std::int64_t moved = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      moved += order[j] != j;
      EXPECT_EQ(shuffled.module[j], as_placed.module[order[j]]);
      for (std::int64_t k = 0; k < n; ++k)
        // Near, not equal: a row's normalisation sums its entries in another order.
        ASSERT_NEAR(shuffled.coupling[j * n + k], as_placed.coupling[order[j] * n + order[k]],
                    1e-12)
            << "W[" << j << ", " << k << "]";
    }
    EXPECT_GT(moved, n / 2);
  }
  NetworkOptions options;
  options.node_order = "shuffled";
  const Network shuffled = make_network(options);
  std::int64_t round_robin = 0;
  for (std::int64_t i = 0; i < shuffled.nodes; ++i)
    round_robin += shuffled.module[i] == i % options.modules;
  EXPECT_LT(round_robin, shuffled.nodes / 2);
  NetworkOptions other_seed = options;
  other_seed.seed = options.seed + 1;
  EXPECT_NE(make_network(other_seed).module, shuffled.module);
}

TEST(Network, UniformPlacementJoinsTheNearestCentre) {
  NetworkOptions options = options_in(3, 5);
  options.placement = "uniform";
  const Network net = make_network(options);
  for (std::int64_t i = 0; i < net.nodes; ++i) {
    std::vector<double> to_centre(options.modules, 0.0);
    for (std::int64_t m = 0; m < options.modules; ++m)
      for (std::int64_t c = 0; c < 3; ++c)
        to_centre[m] += std::pow(net.positions[i * 3 + c] - net.centres[m * 3 + c], 2);
    const auto nearest = std::min_element(to_centre.begin(), to_centre.end()) - to_centre.begin();
    EXPECT_EQ(net.module[i], nearest) << "node " << i;
  }
}

TEST(Network, DistancesMatchPositions) {
  const Network net = make_network(options_in(3, 2));
  const std::vector<double> d = distances(net);
  const std::int64_t n = net.nodes;
  ASSERT_EQ(d.size(), static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(at(d, n, i, i), 0.0);
    for (std::int64_t j = 0; j < n; ++j) {
      EXPECT_EQ(at(d, n, i, j), at(d, n, j, i));
      double sum = 0.0;
      for (std::int64_t c = 0; c < 3; ++c)
        sum += std::pow(net.positions[i * 3 + c] - net.positions[j * 3 + c], 2);
      EXPECT_NEAR(at(d, n, i, j), std::sqrt(sum), 1e-12);
    }
  }
}

TEST(Network, WithinModuleCouplingIsStronger) {
  for (const std::int64_t dims : {2, 3}) {
    const Network net = make_network(options_in(dims, 1));
    const std::int64_t n = net.nodes;
    double within = 0.0, between = 0.0;
    int within_pairs = 0, between_pairs = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        if (i == j) continue;
        if (net.module[i] == net.module[j]) {
          within += at(net.coupling, n, i, j);
          ++within_pairs;
        } else {
          between += at(net.coupling, n, i, j);
          ++between_pairs;
        }
      }
    }
    EXPECT_GT(within / within_pairs, 3.0 * between / between_pairs) << dims << "D";
  }
}

TEST(Network, CouplingFallsWithDistance) {
  for (const std::int64_t dims : {2, 3}) {
    const Network net = make_network(options_in(dims, 3));
    const std::vector<double> d = distances(net);
    std::vector<double> weight, distance;
    for (std::size_t e = 0; e < net.coupling.size(); ++e) {
      if (net.coupling[e] == 0.0) continue;
      weight.push_back(net.coupling[e]);
      distance.push_back(d[e]);
    }
    EXPECT_LT(spearman(weight, distance), -0.5) << dims << "D";
  }
}

TEST(Network, KeepsTheStrongestInputsWithExponentialWeights) {
  // One module: the coupling is exp(-distance / length_scale) alone, so the kept inputs are the
  // nearest nodes and the weights' ratios follow the distances.
  NetworkOptions options;
  options.modules = 1;
  options.nodes = 20;
  options.density = 0.3;  // k = round(0.3 * 19) = 6
  const Network net = make_network(options);
  const std::vector<double> d = distances(net);
  const std::int64_t n = net.nodes;
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> others;
    for (std::int64_t j = 0; j < n; ++j)
      if (j != i) others.push_back(j);
    std::sort(others.begin(), others.end(),
              [&](std::int64_t a, std::int64_t b) { return at(d, n, i, a) < at(d, n, i, b); });
    const std::int64_t nearest = others[0];
    for (std::size_t r = 0; r < others.size(); ++r) {
      const std::int64_t j = others[r];
      if (r >= 6) {
        EXPECT_EQ(at(net.coupling, n, i, j), 0.0);
        continue;
      }
      const double ratio = at(net.coupling, n, i, j) / at(net.coupling, n, i, nearest);
      EXPECT_NEAR(ratio, std::exp(-(at(d, n, i, j) - at(d, n, i, nearest)) / 0.2), 1e-9);
    }
  }
}

TEST(Network, DensityBoundsTheInputs) {
  NetworkOptions options;
  options.nodes = 10;
  options.modules = 2;
  for (const auto& [density, k] : std::vector<std::pair<double, int>>{{1.0, 9}, {1e-3, 1}}) {
    options.density = density;
    const Network net = make_network(options);
    for (std::int64_t i = 0; i < 10; ++i) {
      int nonzero = 0;
      for (std::int64_t j = 0; j < 10; ++j)
        nonzero += at(net.coupling, 10, i, j) > 0.0;
      EXPECT_EQ(nonzero, k) << "density " << density << " node " << i;
    }
  }
}

TEST(Network, ZeroBetweenModuleScaleKeepsModulesApart) {
  NetworkOptions options;
  options.nodes = 9;
  options.modules = 3;
  options.density = 1.0;
  options.between_module_scale = 0.0;
  const Network net = make_network(options);
  for (std::int64_t i = 0; i < 9; ++i) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < 9; ++j) {
      if (net.module[i] != net.module[j]) {
        EXPECT_EQ(at(net.coupling, 9, i, j), 0.0);
      }
      sum += at(net.coupling, 9, i, j);
    }
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  // A node alone in its module then has no input at all: its row is zero (see the header).
  options.modules = 9;
  const Network alone = make_network(options);
  for (const double w : alone.coupling)
    EXPECT_EQ(w, 0.0);
}

TEST(Network, DeterministicBySeed) {
  const Network a = make_network(options_in(2, 7));
  const Network b = make_network(options_in(2, 7));
  const Network c = make_network(options_in(2, 8));
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_EQ(a.centres, b.centres);
  EXPECT_EQ(a.coupling, b.coupling);
  EXPECT_NE(a.positions, c.positions);
  EXPECT_NE(a.coupling, c.coupling);
}

TEST(Network, RejectsBadOptions) {
  const std::vector<std::pair<std::function<void(NetworkOptions&)>, std::string>> cases = {
      {[](NetworkOptions& o) { o.nodes = 1; }, "nodes"},
      {[](NetworkOptions& o) { o.dims = 4; }, "dims"},
      {[](NetworkOptions& o) { o.dims = 1; }, "dims"},
      {[](NetworkOptions& o) { o.modules = 0; }, "modules"},
      {[](NetworkOptions& o) { o.modules = 65; }, "modules"},
      {[](NetworkOptions& o) { o.placement = "grid"; }, "placement"},
      {[](NetworkOptions& o) { o.node_order = "sorted"; }, "node_order"},
      {[](NetworkOptions& o) { o.module_spread = 0.0; }, "module_spread"},
      {[](NetworkOptions& o) { o.length_scale = -1.0; }, "length_scale"},
      {[](NetworkOptions& o) { o.length_scale = std::nan(""); }, "length_scale"},
      {[](NetworkOptions& o) { o.between_module_scale = -0.1; }, "between_module_scale"},
      {[](NetworkOptions& o) { o.density = 0.0; }, "density"},
      {[](NetworkOptions& o) { o.density = 1.5; }, "density"},
      {[](NetworkOptions& o) { o.centre_margin = 0.5; }, "centre_margin"},
  };
  for (const auto& [mutate, option] : cases) {
    NetworkOptions options;
    mutate(options);
    expect_rejected([&] { make_network(options); }, option);
  }
  // The message has the value and the allowed range too.
  NetworkOptions options;
  options.dims = 4;
  try {
    make_network(options);
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "dims must be 2 or 3, got 4");
  }
}

// ---------------------------------------------------------------------------------------------
// The coupling on given nodes (network_from).

TEST(NetworkFrom, GivesMakeNetworksCouplingOnItsNodes) {
  // Exactly: make_network's coupling is network_from's on the placed nodes.
  for (const std::string placement : {"clustered", "uniform"}) {
    for (const std::int64_t dims : {2, 3}) {
      for (const double between : {0.3, 0.0}) {
        SCOPED_TRACE(placement + " " + std::to_string(dims) + "D, between " +
                     std::to_string(between));
        NetworkOptions options = options_in(dims, 11);
        options.nodes = 40;
        options.modules = 5;
        options.placement = placement;
        options.between_module_scale = between;
        const Network made = make_network(options);
        const Network rebuilt = network_from(made.positions, dims, made.module, options);
        EXPECT_EQ(rebuilt.nodes, made.nodes);
        EXPECT_EQ(rebuilt.dims, dims);
        EXPECT_EQ(rebuilt.positions, made.positions);
        EXPECT_EQ(rebuilt.module, made.module);
        EXPECT_EQ(rebuilt.coupling, made.coupling);
        EXPECT_TRUE(rebuilt.centres.empty());
      }
    }
  }
}

TEST(NetworkFrom, FollowsTheRuleByHand) {
  // Three nodes, all inputs kept: node 0's inputs are exp(-0.3 / 0.2) from node 1 (same module)
  // and 0.5 exp(-0.4 / 0.2) from node 2 (another module), normalised.
  NetworkOptions options;
  options.length_scale = 0.2;
  options.between_module_scale = 0.5;
  options.density = 1.0;
  const Network net = network_from({0.0, 0.0, 0.3, 0.0, 0.0, 0.4}, 2, {0, 0, 1}, options);
  const double w01 = std::exp(-1.5), w02 = 0.5 * std::exp(-2.0);
  EXPECT_NEAR(at(net.coupling, 3, 0, 1), w01 / (w01 + w02), 1e-15);
  EXPECT_NEAR(at(net.coupling, 3, 0, 2), w02 / (w01 + w02), 1e-15);
  EXPECT_EQ(at(net.coupling, 3, 0, 0), 0.0);
  // Node 2's inputs both cross modules and are 0.4 and 0.5 away.
  const double w20 = std::exp(-2.0), w21 = std::exp(-2.5);
  EXPECT_NEAR(at(net.coupling, 3, 2, 0), w20 / (w20 + w21), 1e-15);
  EXPECT_NEAR(at(net.coupling, 3, 2, 1), w21 / (w20 + w21), 1e-15);

  // Density 0.5 keeps round(0.5 * 2) = 1 input: the strongest.
  options.density = 0.5;
  const Network sparse = network_from({0.0, 0.0, 0.3, 0.0, 0.0, 0.4}, 2, {0, 0, 1}, options);
  EXPECT_EQ(at(sparse.coupling, 3, 0, 1), 1.0);
  EXPECT_EQ(at(sparse.coupling, 3, 0, 2), 0.0);
}

TEST(NetworkFrom, IgnoresThePlacementOptions) {
  const Network made = make_network(options_in(3, 5));
  NetworkOptions other = options_in(2, 99);  // dims, seed, nodes, ... are not network_from's
  other.nodes = 7;
  other.modules = 1;
  other.placement = "uniform";
  EXPECT_EQ(network_from(made.positions, 3, made.module, other).coupling, made.coupling);
}

TEST(NetworkFrom, RejectsBadInput) {
  const Network made = make_network(options_in(2));
  const NetworkOptions options;
  const auto from = [&](std::vector<double> positions, std::int64_t dims,
                        std::vector<std::int64_t> modules, const NetworkOptions& o) {
    return [=] { network_from(positions, dims, modules, o); };
  };
  expect_rejected(from(made.positions, 4, made.module, options), "dims");
  expect_rejected(from(made.positions, 3, made.module, options), "positions");  // 64 x 3 != 128
  expect_rejected(from({0.5, 0.5}, 2, {0}, options), "modules");                // one node
  std::vector<double> nan_position = made.positions;
  nan_position[5] = std::nan("");
  expect_rejected(from(nan_position, 2, made.module, options), "positions");
  std::vector<std::int64_t> negative = made.module;
  negative[3] = -1;
  expect_rejected(from(made.positions, 2, negative, options), "modules");
  const std::vector<std::pair<std::function<void(NetworkOptions&)>, std::string>> cases = {
      {[](NetworkOptions& o) { o.length_scale = 0.0; }, "length_scale"},
      {[](NetworkOptions& o) { o.between_module_scale = -0.1; }, "between_module_scale"},
      {[](NetworkOptions& o) { o.density = 0.0; }, "density"},
      {[](NetworkOptions& o) { o.density = std::nan(""); }, "density"},
  };
  for (const auto& [mutate, option] : cases) {
    NetworkOptions bad;
    mutate(bad);
    expect_rejected(from(made.positions, 2, made.module, bad), option);
  }
  try {
    network_from(made.positions, 2, negative, options);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "modules must be ids >= 0, got -1 at node 3");
  }
}

// ---------------------------------------------------------------------------------------------
// The dynamics.

TEST(Dynamics, OneStepFollowsTheFormula) {
  // Two nodes: each one's only input is the other, with weight 1; no noise, no random pulses.
  NetworkOptions network_options;
  network_options.nodes = 2;
  network_options.modules = 1;
  const Network net = make_network(network_options);
  DynamicsOptions o;
  o.noise_std = 0.0;
  o.stimulus_rate = 0.0;
  o.burn_in = 0.0;
  o.sample_interval = o.dt;
  const Recording plain = simulate(net, o, 2, 0);
  const Recording pulsed = simulate_with_pulse(net, o, 2, 0, 1, 0.0, 4.0, 1.0);
  const double rate = o.dt / o.tau;
  const double drive = o.gain * (1.0 * 0.5) + o.self_coupling * 0.5;
  const double x1 = 0.5 + rate * (-0.5 + sigmoid(drive + 0.0 + o.bias));
  const double x1_pulsed = 0.5 + rate * (-0.5 + sigmoid(drive + 4.0 + o.bias));
  EXPECT_EQ(plain.activity, (std::vector<double>{0.5, 0.5, x1, x1}));
  EXPECT_EQ(pulsed.activity, (std::vector<double>{0.5, 0.5, x1, x1_pulsed}));
}

// Pulses restricted to some nodes drive only those: without coupling and noise, every other node
// rests at its fixed point while the candidates move. Without candidates, the pulses are drawn
// exactly as before the option existed (the same recording).
TEST(Dynamics, PulsesDriveOnlyTheCandidateNodes) {
  NetworkOptions network_options;
  network_options.nodes = 12;
  network_options.modules = 3;
  const Network net = make_network(network_options);
  DynamicsOptions o;
  o.gain = 0.0;  // no coupling: a node moves only when a pulse drives it
  o.noise_std = 0.0;
  o.stimulus_rate = 2.0;
  o.stimulus_nodes = 2;
  o.burn_in = 200.0;
  for (std::int64_t node = 0; node < net.nodes; ++node) {
    if (net.module[static_cast<std::size_t>(node)] == 1) o.stimulus_candidates.push_back(node);
  }
  ASSERT_GE(o.stimulus_candidates.size(), 2u);
  const Recording recording = simulate(net, o, 400, 7);
  for (std::int64_t node = 0; node < net.nodes; ++node) {
    double low = 1.0, high = 0.0;
    for (std::int64_t t = 0; t < recording.time_points; ++t) {
      const double x = recording.activity[static_cast<std::size_t>(t * net.nodes + node)];
      low = std::min(low, x);
      high = std::max(high, x);
    }
    if (net.module[static_cast<std::size_t>(node)] == 1) {
      EXPECT_GT(high - low, 0.05) << "candidate node " << node << " never pulsed";
    } else {
      EXPECT_LT(high - low, 1e-9) << "node " << node << " moved without a pulse";
    }
  }
  DynamicsOptions every = o;
  every.stimulus_candidates.clear();
  DynamicsOptions listed = o;
  listed.stimulus_candidates.resize(static_cast<std::size_t>(net.nodes));
  std::iota(listed.stimulus_candidates.begin(), listed.stimulus_candidates.end(), 0);
  EXPECT_EQ(simulate(net, every, 50, 3).activity, simulate(net, listed, 50, 3).activity);
  DynamicsOptions too_many = o;
  too_many.stimulus_nodes = static_cast<std::int64_t>(o.stimulus_candidates.size()) + 1;
  EXPECT_THROW(simulate(net, too_many, 10, 3), std::invalid_argument);
}

TEST(Dynamics, WithoutNoiseSettlesAtTheFixedPoint) {
  // The rows sum to 1 and every node starts at 0.5, so all nodes stay equal and settle at the
  // solution of x = phi((gain + self_coupling) x + bias), unique as gain + self_coupling < 4.
  const Network net = make_network(NetworkOptions{});
  DynamicsOptions o;
  o.noise_std = 0.0;
  o.stimulus_rate = 0.0;
  o.burn_in = 200.0;  // the distance to it shrinks by about exp(-0.2) per unit time
  double lo = 0.0, hi = 1.0;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (sigmoid((o.gain + o.self_coupling) * mid + o.bias) > mid ? lo : hi) = mid;
  }
  const Recording r = simulate(net, o, 3, 0);
  for (std::int64_t i = 0; i < net.nodes; ++i)
    EXPECT_NEAR(r.activity[2 * net.nodes + i], lo, 1e-6);
}

TEST(Dynamics, NoiseAloneGivesTheOrnsteinUhlenbeckSpread) {
  // Without coupling or pulses, each node is an Euler-discretised Ornstein-Uhlenbeck process
  // around phi(bias), of variance noise_std^2 tau / (2 - dt / tau).
  const Network net = make_network(NetworkOptions{});
  DynamicsOptions o;
  o.gain = 0.0;
  o.self_coupling = 0.0;
  o.stimulus_rate = 0.0;
  o.sample_interval = 2.0;  // nearly independent samples
  const Recording r = simulate(net, o, 1000, 3);
  const double expected = o.noise_std * std::sqrt(o.tau / (2.0 - o.dt / o.tau));
  EXPECT_NEAR(mean(r.activity), sigmoid(o.bias), 0.02 * expected);
  EXPECT_NEAR(stddev(r.activity), expected, 0.03 * expected);
}

TEST(Dynamics, PulsesArriveAtTheirRate) {
  // No coupling or noise, a bias far below 0 and pulses that saturate phi: a node's mean
  // activity is the fraction of time it is driven, 1 - exp(-rate * stimulus_nodes / nodes *
  // duration) for Poisson pulses (overlapping ones do not add once phi saturates).
  const Network net = make_network(NetworkOptions{});
  DynamicsOptions o;
  o.gain = 0.0;
  o.self_coupling = 0.0;
  o.noise_std = 0.0;
  o.bias = -30.0;
  o.stimulus_amplitude = 60.0;
  o.stimulus_rate = 2.0;
  o.stimulus_nodes = 8;
  const Recording r = simulate(net, o, 4000, 4);
  const double expected = 1.0 - std::exp(-o.stimulus_rate * 8.0 / 64.0 * o.stimulus_duration);
  EXPECT_NEAR(mean(r.activity), expected, 0.06 * expected);
}

TEST(Dynamics, DeterministicBySeed) {
  const Network net = make_network(NetworkOptions{});
  const DynamicsOptions o;
  const Recording a = simulate(net, o, 200, 11);
  const Recording b = simulate(net, o, 200, 11);
  const Recording c = simulate(net, o, 200, 12);
  EXPECT_EQ(a.time_points, 200);
  EXPECT_EQ(a.nodes, 64);
  EXPECT_EQ(a.sample_interval, 0.5);
  ASSERT_EQ(a.activity.size(), 200u * 64u);
  EXPECT_EQ(a.activity, b.activity);
  EXPECT_NE(a.activity, c.activity);
  // The noise and the pulses each change the recording on their own.
  DynamicsOptions quiet = o;
  quiet.noise_std = 0.0;
  EXPECT_NE(simulate(net, quiet, 200, 11).activity, simulate(net, quiet, 200, 12).activity);
  quiet.stimulus_rate = 0.0;
  EXPECT_EQ(simulate(net, quiet, 200, 11).activity, simulate(net, quiet, 200, 12).activity);
}

TEST(Dynamics, StationaryStatisticsAreInRange) {
  // Neither dead nor saturated nor stuck in a high state: every node's mean well inside (0, 1),
  // clearly fluctuating, and no module far from the others.
  for (const std::int64_t dims : {2, 3}) {
    SCOPED_TRACE(std::to_string(dims) + "D");
    const Network net = make_network(options_in(dims, 1));
    const Recording r = simulate(net, DynamicsOptions{}, 2000, 5);
    const double overall = mean(r.activity);
    EXPECT_GT(overall, 0.15);
    EXPECT_LT(overall, 0.7);
    for (std::int64_t i = 0; i < net.nodes; ++i) {
      const std::vector<double> x = series(r, i);
      EXPECT_NEAR(mean(x), overall, 0.1) << "node " << i;
      EXPECT_GT(stddev(x), 0.02) << "node " << i;
      EXPECT_LT(stddev(x), 0.25) << "node " << i;
    }
  }
}

TEST(Dynamics, CorrelationFallsWithDistanceAndRisesWithCoupling) {
  for (const std::int64_t dims : {2, 3}) {
    const Network net = make_network(options_in(dims, 0));
    const Recording r = simulate(net, DynamicsOptions{}, 2000, 6);
    const std::vector<double> d = distances(net);
    const std::int64_t n = net.nodes;
    std::vector<std::vector<double>> x(n);
    for (std::int64_t i = 0; i < n; ++i)
      x[i] = series(r, i);
    std::vector<double> correlation, distance, coupling;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = i + 1; j < n; ++j) {
        correlation.push_back(pearson(x[i], x[j]));
        distance.push_back(at(d, n, i, j));
        coupling.push_back(at(net.coupling, n, i, j) + at(net.coupling, n, j, i));
      }
    }
    EXPECT_LT(spearman(correlation, distance), -0.4) << dims << "D";
    EXPECT_GT(spearman(correlation, coupling), 0.5) << dims << "D";
  }
}

TEST(Dynamics, APulseSpreadsToTheCoupledNeighboursFirst) {
  const Network net = make_network(NetworkOptions{});
  const std::int64_t n = net.nodes;
  const std::vector<double> d = distances(net);
  DynamicsOptions o;
  o.sample_interval = 0.1;
  const std::int64_t points = 250;
  const double at_time = 5.0;  // recorded point 50
  for (const std::int64_t source : {0, 21, 42}) {
    SCOPED_TRACE("pulse at node " + std::to_string(source));
    const Recording plain = simulate(net, o, points, 9);
    const Recording pulsed = simulate_with_pulse(net, o, points, 9, source, at_time, 4.0, 1.0);
    // Same noise and random pulses: nothing differs before the pulse.
    for (std::int64_t t = 0; t <= 50; ++t)
      for (std::int64_t i = 0; i < n; ++i)
        ASSERT_EQ(plain.activity[t * n + i], pulsed.activity[t * n + i]) << t << " " << i;

    // The 3 nodes that the source drives most strongly, and the 3 farthest from it.
    std::vector<std::int64_t> others;
    for (std::int64_t i = 0; i < n; ++i)
      if (i != source) others.push_back(i);
    std::vector<std::int64_t> near = others, far = others;
    std::sort(near.begin(), near.end(), [&](std::int64_t a, std::int64_t b) {
      return at(net.coupling, n, a, source) > at(net.coupling, n, b, source);
    });
    std::sort(far.begin(), far.end(), [&](std::int64_t a, std::int64_t b) {
      return at(d, n, a, source) > at(d, n, b, source);
    });
    // A group's mean response over time.
    const auto response = [&](const std::vector<std::int64_t>& group) {
      std::vector<double> out(points, 0.0);
      for (std::int64_t t = 0; t < points; ++t)
        for (std::size_t g = 0; g < 3; ++g)
          out[t] += std::abs(pulsed.activity[t * n + group[g]] - plain.activity[t * n + group[g]]);
      return out;
    };
    const std::vector<double> near_response = response(near), far_response = response(far);
    const double near_peak = *std::max_element(near_response.begin(), near_response.end());
    const double far_peak = *std::max_element(far_response.begin(), far_response.end());
    const auto half_time = [](const std::vector<double>& r, double peak) {
      return std::find_if(r.begin(), r.end(), [&](double v) { return v >= 0.5 * peak; }) -
             r.begin();
    };
    EXPECT_GT(near_peak, 0.03);  // 3 nodes, about 0.01 or more each
    EXPECT_GT(near_peak, 10.0 * far_peak);
    EXPECT_LE(half_time(near_response, near_peak), half_time(far_response, far_peak));
  }
}

TEST(Dynamics, SampleIntervalMustBeAMultipleOfDt) {
  const Network net = make_network(NetworkOptions{});
  DynamicsOptions o;
  o.sample_interval = 0.15;  // 2.9999999999999996 steps of 0.05 in binary: accepted
  EXPECT_EQ(simulate(net, o, 3, 0).activity.size(), 3u * 64u);
  o.sample_interval = 0.12;
  expect_rejected([&] { simulate(net, o, 3, 0); }, "sample_interval");
}

TEST(Dynamics, RejectsBadOptions) {
  const Network net = make_network(NetworkOptions{});
  const std::vector<std::pair<std::function<void(DynamicsOptions&)>, std::string>> cases = {
      {[](DynamicsOptions& o) { o.tau = 0.0; }, "tau"},
      {[](DynamicsOptions& o) { o.dt = 0.0; }, "dt"},
      {[](DynamicsOptions& o) { o.dt = 2.0; }, "dt"},
      {[](DynamicsOptions& o) { o.gain = INFINITY; }, "gain"},
      {[](DynamicsOptions& o) { o.noise_std = -0.1; }, "noise_std"},
      {[](DynamicsOptions& o) { o.stimulus_rate = -1.0; }, "stimulus_rate"},
      {[](DynamicsOptions& o) { o.stimulus_nodes = 65; }, "stimulus_nodes"},
      {[](DynamicsOptions& o) { o.stimulus_nodes = -1; }, "stimulus_nodes"},
      {[](DynamicsOptions& o) { o.stimulus_duration = -1.0; }, "stimulus_duration"},
      {[](DynamicsOptions& o) { o.burn_in = -1.0; }, "burn_in"},
      {[](DynamicsOptions& o) { o.sample_interval = 0.0; }, "sample_interval"},
      {[](DynamicsOptions& o) { o.sample_interval = 0.01; }, "sample_interval"},
  };
  for (const auto& [mutate, option] : cases) {
    DynamicsOptions o;
    mutate(o);
    expect_rejected([&] { simulate(net, o, 3, 0); }, option);
  }
  const DynamicsOptions o;
  expect_rejected([&] { simulate(net, o, 0, 0); }, "time_points");
  expect_rejected([&] { simulate_with_pulse(net, o, 3, 0, 64, 0.0, 1.0, 1.0); }, "node");
  expect_rejected([&] { simulate_with_pulse(net, o, 3, 0, -1, 0.0, 1.0, 1.0); }, "node");
  expect_rejected([&] { simulate_with_pulse(net, o, 3, 0, 0, -1.0, 1.0, 1.0); }, "at");
  expect_rejected([&] { simulate_with_pulse(net, o, 3, 0, 0, 0.0, 1.0, -1.0); }, "duration");
  Network broken = net;
  broken.coupling.pop_back();
  expect_rejected([&] { simulate(broken, o, 3, 0); }, "network");
}

// dt and burn_in each in range, together 1e12 steps: once a run with no end and no progress, now
// refused before the first step, with the figure and the keys to change.
TEST(Dynamics, RefusesARecordingBeyondTheWorkLimitBeforeStarting) {
  const Network net = make_network(NetworkOptions{});
  DynamicsOptions o;
  o.dt = 1e-6;
  o.sample_interval = 1e-6;
  o.burn_in = 1e6;
  try {
    simulate(net, o, 3, 0);
    FAIL() << "a recording of 1e12 steps was started";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("the recording needs 1e+12 integration steps"));
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("on 64 nodes, 6.4e+13 node-steps, beyond the limit of 2e+10"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("raise dt or sample_interval, shorten burn_in"));
  }
  o.burn_in = 0.1;  // 1e5 steps: within it
  EXPECT_EQ(simulate(net, o, 2, 0).activity.size(), 2u * 64u);
}

}  // namespace
}  // namespace pelab::network_simulation
