#pragma once

// A nonlinear stochastic network in space: nodes placed in 2D or 3D and grouped into modules,
// structural coupling that decays with distance and is stronger within a module, and sigmoid
// rate dynamics driven by noise and by pulses to random node subsets, so that activity
// propagates along the structure. The generator of the network_simulation task and of the
// synthetic brain's parcel dynamics (see docs/tasks/network_simulation.md).
//
// Plain C++ (no LibTorch): deterministic by seed (std::mt19937_64 and hand-written
// distributions, so results do not depend on the standard library's distribution code).

#include <cstdint>
#include <string>
#include <vector>

namespace pelab::network_simulation {

/// How the network is built.
struct NetworkOptions {
  std::int64_t nodes = 64;
  std::int64_t dims = 2;  // 2 or 3
  std::int64_t modules = 4;
  /// "clustered": module centres uniform in [margin, 1 - margin]^dims, nodes Gaussian around
  /// their module's centre (std module_spread), clipped to the unit cube; nodes are dealt to
  /// modules round-robin. "uniform": nodes uniform in the unit cube, each in the module of its
  /// nearest centre.
  std::string placement = "clustered";
  double module_spread = 0.12;
  /// Module centres keep this far from the cube's faces, in [0, 0.5).
  double centre_margin = 0.15;
  /// Coupling before sparsification and normalisation: exp(-distance / length_scale), times
  /// between_module_scale when the two nodes are in different modules.
  double length_scale = 0.2;
  double between_module_scale = 0.3;
  /// Fraction of the other nodes whose input each node keeps (its strongest inputs), >= 1 input.
  double density = 0.25;
  std::uint64_t seed = 0;
};

/// A built network. Matrices are row-major.
struct Network {
  std::int64_t nodes = 0;
  std::int64_t dims = 0;
  std::vector<double> positions;     // [nodes, dims], in [0, 1]
  std::vector<std::int64_t> module;  // [nodes], 0 .. modules-1
  /// [modules, dims]: the module centres make_network placed the nodes around; empty for a
  /// network_from() network, whose modules were given and have no placed centre.
  std::vector<double> centres;
  /// [nodes, nodes]: coupling[i * nodes + j] is the weight of node j's activity in node i's input.
  /// Zero diagonal, non-negative, each row sums to 1 (a node's inputs are normalised); the one
  /// exception is a node with no possible input (alone in its module with between_module_scale
  /// 0), whose row is zero.
  std::vector<double> coupling;
};

/// Builds the network: places the nodes, then couples them by network_from(). Throws
/// std::invalid_argument for options out of range, naming the option.
Network make_network(const NetworkOptions& options);

/// The network on given nodes, coupled by make_network's rule: `positions` is [nodes, dims]
/// (dims 2 or 3, nodes >= 2) in the unit cube, the units of length_scale (not enforced; finite
/// is); `modules` is [nodes], module ids 0 .. K-1. Uses options.length_scale,
/// between_module_scale and density only; the other options (nodes, dims, modules, placement,
/// seed, ...) are not used. The result's centres are empty. make_network(o) equals
/// network_from(its positions, o.dims, its module, o) in coupling, bit for bit. Throws
/// std::invalid_argument for bad input, naming it (dims, positions, modules or the option).
Network network_from(const std::vector<double>& positions, std::int64_t dims,
                     const std::vector<std::int64_t>& modules, const NetworkOptions& options);

/// The rate dynamics, integrated by Euler-Maruyama with step dt:
///   x <- x + dt / tau * (-x + phi(gain * (W x)_i + self_coupling * x_i + I_i(t) + bias))
///          + noise_std * sqrt(dt) * xi,   xi ~ N(0, 1) per node and step,
/// with phi the logistic sigmoid. I(t) is a train of pulses: pulses start as a Poisson process
/// of rate stimulus_rate (per unit time); each drives stimulus_nodes nodes drawn at random with
/// amplitude stimulus_amplitude for stimulus_duration. A pulse acts on the steps that start in
/// [its start, its start + its duration).
///
/// The defaults keep gain + self_coupling < 4 = 1 / max phi': the map x -> phi(...) is then a
/// contraction, so there is one stable state (no bistable module stuck high or low), here at a
/// mean x of about 0.34 where the loop gain phi' * (gain + self_coupling) is about 0.85, so that
/// the pulses' and the noise's activity spreads along the coupling before it decays.
struct DynamicsOptions {
  double gain = 3.5;
  double self_coupling = 0.3;
  double bias = -2.0;
  double tau = 1.0;
  double dt = 0.05;
  double noise_std = 0.05;
  double stimulus_rate = 0.5;
  std::int64_t stimulus_nodes = 2;
  /// The nodes a pulse may drive; empty: every node. A regime of its own (pulses to one module
  /// only: a "task state" beside the "rest" of pulses anywhere).
  std::vector<std::int64_t> stimulus_candidates;
  double stimulus_amplitude = 4.0;
  double stimulus_duration = 1.0;
  /// Time simulated and discarded before the first recorded point (rounded to whole steps).
  double burn_in = 50.0;
  /// One recorded point every sample_interval units of time (a multiple of dt).
  double sample_interval = 0.5;
};

/// What a simulation recorded.
struct Recording {
  std::int64_t time_points = 0;
  std::int64_t nodes = 0;
  double sample_interval = 0.0;
  /// [time_points, nodes]: x at each recorded time; point p is at burn_in + p * sample_interval.
  std::vector<double> activity;
};

/// Simulates `time_points` recorded points after the burn-in, from x = 0.5 everywhere. The noise
/// and the pulses come from `seed` alone: the same network, options and seed give the same
/// recording, bit for bit. Throws std::invalid_argument for options out of range.
Recording simulate(const Network& network, const DynamicsOptions& options, std::int64_t time_points,
                   std::uint64_t seed);

/// As simulate(), with one extra pulse: `node` is driven with `amplitude` for `duration` from
/// `at` (time after the burn-in). The noise and the random pulses are those of simulate() with
/// the same seed, so the difference of the two recordings is the pulse's response.
Recording simulate_with_pulse(const Network& network, const DynamicsOptions& options,
                              std::int64_t time_points, std::uint64_t seed, std::int64_t node,
                              double at, double amplitude, double duration);

/// Euclidean distances between the nodes: [nodes, nodes].
std::vector<double> distances(const Network& network);

}  // namespace pelab::network_simulation
