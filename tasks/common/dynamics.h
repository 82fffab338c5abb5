#pragma once

// Sigmoid rate dynamics on a coupled network (network.h), driven by noise and by pulses to random
// node subsets, so that activity propagates along the structure: the network_simulation task's
// recordings and the brain task's synthetic parcel activity (see
// docs/tasks/network_simulation.md).
//
// Plain C++ (no LibTorch): deterministic by seed (pelab::Random, whose draws are written out, so
// results do not depend on the standard library's distribution code).

#include <cstdint>
#include <vector>

#include "network.h"

namespace pelab::tasks {

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

}  // namespace pelab::tasks
