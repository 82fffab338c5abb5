#include "dynamics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include <pelab/sdk.h>

#include "option_checks.h"

namespace pelab::tasks {
namespace {

// Independent streams drawn from one user seed: the noise and the pulses each get their own, so
// that an extra pulse (simulate_with_pulse) changes no draw.
constexpr std::uint64_t kNoiseStream = 0x6a09e667f3bcc908ULL;
constexpr std::uint64_t kPulseStream = 0xbb67ae8584caa73bULL;

// The most integration work one recording may ask for: steps x nodes.
constexpr double kMaxNodeSteps = 2e10;
// A recording of more work than this says how far it has come, every kProgressEvery.
constexpr double kProgressNodeSteps = 1e9;
constexpr auto kProgressEvery = std::chrono::seconds(10);

/// A network that simulate() can run on: its coupling is [nodes, nodes].
void validate(const Network& network) {
  const auto n = network.nodes;
  if (n < 1 || network.coupling.size() != static_cast<std::size_t>(n * n))
    throw std::invalid_argument("network is malformed: " + std::to_string(n) + " nodes but " +
                                std::to_string(network.coupling.size()) + " coupling entries");
}

/// The steps per recorded point.
std::int64_t validate(const DynamicsOptions& o, std::int64_t nodes, std::int64_t time_points) {
  require_finite(o.gain, "gain");
  require_finite(o.self_coupling, "self_coupling");
  require_finite(o.bias, "bias");
  require_positive(o.tau, "tau");
  require_option(o.dt > 0.0 && o.dt <= o.tau, "dt", "in (0, tau = " + format_option(o.tau) + "]",
                 o.dt);
  require_non_negative(o.noise_std, "noise_std");
  require_non_negative(o.stimulus_rate, "stimulus_rate");
  require_option(o.stimulus_nodes >= 0 && o.stimulus_nodes <= nodes, "stimulus_nodes",
                 "in [0, nodes = " + std::to_string(nodes) + "]",
                 static_cast<double>(o.stimulus_nodes));
  if (!o.stimulus_candidates.empty()) {
    const auto candidates = static_cast<std::int64_t>(o.stimulus_candidates.size());
    require_option(o.stimulus_nodes <= candidates, "stimulus_nodes",
                   "at most the " + std::to_string(candidates) + " nodes pulses may drive",
                   static_cast<double>(o.stimulus_nodes));
    for (const std::int64_t node : o.stimulus_candidates) {
      require_option(node >= 0 && node < nodes, "a stimulated node", "in [0, nodes)",
                     static_cast<double>(node));
    }
  }
  require_finite(o.stimulus_amplitude, "stimulus_amplitude");
  require_non_negative(o.stimulus_duration, "stimulus_duration");
  require_non_negative(o.burn_in, "burn_in");
  require_option(time_points >= 1, "time_points", ">= 1", static_cast<double>(time_points));

  const double ratio = o.sample_interval / o.dt;
  const double steps = std::round(ratio);
  require_option(std::isfinite(ratio) && steps >= 1.0 && std::abs(ratio - steps) <= 1e-9 * ratio,
                 "sample_interval", "a positive multiple of dt = " + format_option(o.dt),
                 o.sample_interval);
  // dt, burn_in and sample_interval can each be in range and together ask for a simulation
  // that never ends (dt 1e-6 with burn_in 1e6 is 1e12 steps): the work is bounded, before any of
  // it starts, by what the paper's training recording needs (2.05e7 node-steps: 64 nodes, 321,080
  // steps) times a thousand, some 10 minutes here.
  const double total_steps = o.burn_in / o.dt + static_cast<double>(time_points) * steps;
  const double node_steps = total_steps * static_cast<double>(nodes);
  if (!(node_steps <= kMaxNodeSteps)) {
    throw std::invalid_argument(fmt::format(
        "the recording needs {:.3g} integration steps of dt = {} (burn_in / dt + {} time points x "
        "sample_interval / dt) on {} nodes, {:.3g} node-steps, beyond the limit of {:.0e} (some "
        "10 minutes of simulation; the paper's training recording needs 2e7): raise dt or "
        "sample_interval, shorten burn_in, or record fewer windows",
        total_steps, format_option(o.dt), time_points, nodes, node_steps, kMaxNodeSteps));
  }
  return static_cast<std::int64_t>(steps);
}

/// The coupling as compressed sparse rows: rows keep only a fraction `density` of their inputs.
struct SparseRows {
  std::vector<std::int64_t> start;  // [nodes + 1]
  std::vector<std::int64_t> column;
  std::vector<double> weight;
};

SparseRows sparse_rows(const Network& network) {
  SparseRows rows;
  const auto n = network.nodes;
  rows.start.push_back(0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double w = network.coupling[i * n + j];
      if (w == 0.0) continue;
      rows.column.push_back(j);
      rows.weight.push_back(w);
    }
    rows.start.push_back(static_cast<std::int64_t>(rows.column.size()));
  }
  return rows;
}

struct Pulse {
  std::int64_t first_step = 0;  // active on steps [first_step, end_step)
  std::int64_t end_step = 0;
  double amplitude = 0.0;
  std::vector<std::int64_t> nodes;
};

/// The first step at or after time t (steps start at n * dt); small tolerance so that a time
/// that is a whole number of steps in exact arithmetic maps to that step.
std::int64_t step_at(double t, double dt) {
  const double steps = t / dt;
  const double rounded = std::round(steps);
  if (std::abs(steps - rounded) <= 1e-9 * std::max(1.0, steps))
    return static_cast<std::int64_t>(rounded);
  return static_cast<std::int64_t>(std::ceil(steps));
}

/// The random pulse train, drawn lazily in time order from its own stream.
class PulseTrain {
 public:
  PulseTrain(const DynamicsOptions& o, std::int64_t nodes, std::uint64_t seed)
      : options_(o), nodes_(nodes), random_(Random::from_splitmix(seed, kPulseStream)) {
    active_ = o.stimulus_rate > 0.0 && o.stimulus_nodes > 0 && o.stimulus_duration > 0.0;
    if (active_) advance(random_.exponential(o.stimulus_rate));
  }

  /// Appends to `pulses` every pulse that starts at or before `step`.
  void start_until(std::int64_t step, std::vector<Pulse>& pulses) {
    while (active_ && next_step_ <= step) {
      pulses.push_back(draw(next_time_));
      advance(next_time_ + random_.exponential(options_.stimulus_rate));
    }
  }

 private:
  void advance(double time) {
    next_time_ = time;
    next_step_ = step_at(time, options_.dt);
  }

  Pulse draw(double time) {
    Pulse pulse;
    pulse.first_step = step_at(time, options_.dt);
    pulse.end_step = step_at(time + options_.stimulus_duration, options_.dt);
    pulse.amplitude = options_.stimulus_amplitude;
    // Distinct nodes: the first stimulus_nodes entries of a partial Fisher-Yates shuffle of the
    // nodes pulses may drive (every node unless the options name some).
    std::vector<std::int64_t> order = options_.stimulus_candidates;
    if (order.empty()) {
      order.resize(static_cast<std::size_t>(nodes_));
      std::iota(order.begin(), order.end(), 0);
    }
    const auto candidates = static_cast<std::int64_t>(order.size());
    for (std::int64_t r = 0; r < options_.stimulus_nodes; ++r) {
      const auto j = r + static_cast<std::int64_t>(random_.below(candidates - r));
      std::swap(order[r], order[j]);
    }
    pulse.nodes.assign(order.begin(), order.begin() + options_.stimulus_nodes);
    return pulse;
  }

  const DynamicsOptions& options_;
  std::int64_t nodes_;
  Random random_;
  bool active_ = false;
  double next_time_ = 0.0;
  std::int64_t next_step_ = 0;
};

void add_input(const Pulse& pulse, std::int64_t step, std::vector<double>& input) {
  if (step < pulse.first_step || step >= pulse.end_step) return;
  for (const auto node : pulse.nodes)
    input[node] += pulse.amplitude;
}

double sigmoid(double u) {
  return 1.0 / (1.0 + std::exp(-u));
}

/// simulate() and simulate_with_pulse(): `extra`, when it has nodes, is added to the random
/// pulses without drawing from any stream.
Recording run(const Network& network, const DynamicsOptions& o, std::int64_t time_points,
              std::uint64_t seed, const Pulse& extra) {
  const auto n = network.nodes;
  const std::int64_t steps_per_sample = validate(o, n, time_points);
  const std::int64_t burn_in_steps = step_at(o.burn_in, o.dt);
  const std::int64_t last_step = burn_in_steps + (time_points - 1) * steps_per_sample;

  Recording recording;
  recording.time_points = time_points;
  recording.nodes = n;
  recording.sample_interval = o.sample_interval;
  recording.activity.reserve(time_points * n);

  const SparseRows rows = sparse_rows(network);
  Random noise = Random::from_splitmix(seed, kNoiseStream);
  PulseTrain train(o, n, seed);
  std::vector<Pulse> pulses;
  std::vector<double> x(n, 0.5), next(n), input(n);
  const double rate = o.dt / o.tau;
  const double noise_scale = o.noise_std * std::sqrt(o.dt);
  // Long set-up work shows progress (on stderr, as the run's log collects it).
  const bool show_progress =
      static_cast<double>(last_step) * static_cast<double>(n) > kProgressNodeSteps;
  auto next_report = std::chrono::steady_clock::now() + kProgressEvery;

  for (std::int64_t step = 0;; ++step) {
    if (show_progress && step % 65536 == 0 && std::chrono::steady_clock::now() >= next_report) {
      fmt::print(stderr, "simulating the network's recording: step {} of {} ({:.0f}%)\n", step,
                 last_step, 100.0 * static_cast<double>(step) / static_cast<double>(last_step));
      next_report += kProgressEvery;
    }
    if (step >= burn_in_steps && (step - burn_in_steps) % steps_per_sample == 0)
      recording.activity.insert(recording.activity.end(), x.begin(), x.end());
    if (step == last_step) break;

    // The pulses' input on this step; finished pulses are dropped.
    train.start_until(step, pulses);
    pulses.erase(std::remove_if(pulses.begin(), pulses.end(),
                                [&](const Pulse& p) { return p.end_step <= step; }),
                 pulses.end());
    std::fill(input.begin(), input.end(), 0.0);
    add_input(extra, step, input);
    for (const Pulse& p : pulses)
      add_input(p, step, input);

    for (std::int64_t i = 0; i < n; ++i) {
      double coupled = 0.0;
      for (auto e = rows.start[i]; e < rows.start[i + 1]; ++e)
        coupled += rows.weight[e] * x[rows.column[e]];
      const double drive = o.gain * coupled + o.self_coupling * x[i] + input[i] + o.bias;
      next[i] = x[i] + rate * (-x[i] + sigmoid(drive)) + noise_scale * noise.normal();
    }
    x.swap(next);
  }
  return recording;
}

}  // namespace

Recording simulate(const Network& network, const DynamicsOptions& options, std::int64_t time_points,
                   std::uint64_t seed) {
  validate(network);
  return run(network, options, time_points, seed, Pulse{});
}

Recording simulate_with_pulse(const Network& network, const DynamicsOptions& options,
                              std::int64_t time_points, std::uint64_t seed, std::int64_t node,
                              double at, double amplitude, double duration) {
  validate(network);
  require_option(node >= 0 && node < network.nodes, "node",
                 "in [0, nodes = " + std::to_string(network.nodes) + ")",
                 static_cast<double>(node));
  require_non_negative(at, "at");
  require_finite(amplitude, "amplitude");
  require_non_negative(duration, "duration");
  require_positive(options.dt, "dt");  // step_at below divides by it; run() checks the rest
  require_non_negative(options.burn_in, "burn_in");

  // `at` counts from the end of the burn-in, which is a whole number of steps.
  const std::int64_t burn_in_steps = step_at(options.burn_in, options.dt);
  Pulse extra;
  extra.first_step = burn_in_steps + step_at(at, options.dt);
  extra.end_step = burn_in_steps + step_at(at + duration, options.dt);
  extra.amplitude = amplitude;
  extra.nodes = {node};
  return run(network, options, time_points, seed, extra);
}

}  // namespace pelab::tasks
