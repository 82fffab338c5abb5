// The paper's second experiment: the nodes of a simulated nonlinear stochastic network are the
// tokens, each token's input is a window of its node's activity, and the model predicts the
// windows of masked nodes. The nodes' true positions (2D or 3D) are hidden from the model; probes
// compare them, the modules and the coupling with what the PE learned. See
// docs/tasks/network_simulation.md.

#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <pelab/sdk.h>

#include "masked_splits.h"
#include "simulation.h"

namespace pelab::network_simulation {
namespace {

// Bumped whenever the simulation or the way recordings are made changes, so that cached
// recordings of an older generator are never used.
constexpr const char* kGeneratorVersion = "network_simulation recordings v1";

NetworkOptions network_options(const Params& params) {
  NetworkOptions options;
  options.nodes = params.integer("nodes");
  options.dims = params.integer("dims");
  options.modules = params.integer("modules");
  options.placement = params.string("placement");
  options.node_order = params.string("node_order");
  options.module_spread = params.real("module_spread");
  options.centre_margin = params.real("centre_margin");
  options.length_scale = params.real("length_scale");
  options.between_module_scale = params.real("between_module_scale");
  options.density = params.real("density");
  options.seed = static_cast<std::uint64_t>(params.integer("network_seed"));
  return options;
}

DynamicsOptions dynamics_options(const Params& params) {
  DynamicsOptions options;
  options.gain = params.real("gain");
  options.self_coupling = params.real("self_coupling");
  options.bias = params.real("bias");
  options.tau = params.real("tau");
  options.dt = params.real("dt");
  options.noise_std = params.real("noise_std");
  options.stimulus_rate = params.real("stimulus_rate");
  options.stimulus_nodes = params.integer("stimulus_nodes");
  options.stimulus_amplitude = params.real("stimulus_amplitude");
  options.stimulus_duration = params.real("stimulus_duration");
  options.burn_in = params.real("burn_in");
  options.sample_interval = params.real("sample_interval");
  return options;
}

// The parameters that only cut a recording into samples, mask them or say where to cache them.
// Every other parameter is part of a recording's cache key: a parameter added to the task is in
// the key unless it is listed here, so that a cached recording is never stale.
const std::set<std::string> kNotInRecordingKey = {
    "window",    "stride",     "train_windows",   "test_windows", "train_seed",
    "test_seed", "mask_ratio", "high_mask_ratio", "cache",        "cache_dir"};

// The cache key of a recording: the generator's version and every parameter that shapes it.
std::string describe_recording(const Params& params, std::int64_t seed, std::int64_t time_points) {
  std::string text = std::string(kGeneratorVersion) + "\n";
  for (const auto& [name, value] : params.values()) {
    if (!kNotInRecordingKey.count(name)) text += name + " = " + format_value(value) + "\n";
  }
  return text + fmt::format("seed = {}\ntime_points = {}\n", seed, time_points);
}

// Runs a simulator and turns its argument errors into the user's errors.
template <typename Function>
auto checked(Function&& function) {
  try {
    return function();
  } catch (const std::invalid_argument& e) {
    throw Error(fmt::format("the network_simulation task's parameters: {}", e.what()));
  }
}

torch::Tensor to_tensor(const std::vector<double>& values, std::vector<std::int64_t> shape) {
  return torch::tensor(values, torch::kFloat64).reshape(shape);
}

class NetworkSimulationTask final : public Task {
 public:
  explicit NetworkSimulationTask(const PluginContext& context)
      : params_(context.params),
        window_(params_.integer("window")),
        stride_(params_.integer("stride")),
        splits_(params_, "network_simulation") {
    network_ = checked([&] { return make_network(network_options(params_)); });
    check_memory();
    // Both recordings are made (or read) here, so that bad parameters fail before training.
    train_ = recording(params_.integer("train_seed"), params_.integer("train_windows"));
    test_ = recording(params_.integer("test_seed"), params_.integer("test_windows"));
    check_signal(train_, "training");
    check_signal(test_, "test");
    layout_ = make_layout();
  }

  Layout layout() const override { return layout_; }
  std::int64_t input_size() const override { return window_; }
  Objective objective() const override { return Objective::masked_token_regression(window_); }
  std::vector<std::string> splits() const override { return tasks::MaskedSplits::names(); }

  Dataset load(const std::string& split) override {
    return splits_.load(
        split, [&] { return windows(train_); }, [&] { return windows(test_); });
  }

 private:
  Layout make_layout() const {
    Layout layout;
    layout.tokens = network_.nodes;
    layout.coordinates = to_tensor(network_.positions, {network_.nodes, network_.dims});
    layout.axis_names = network_.dims == 2 ? std::vector<std::string>{"x", "y"}
                                           : std::vector<std::string>{"x", "y", "z"};
    // The model never sees where a node is: the positions are ground truth for probes.
    layout.coordinates_visible = false;
    layout.communities = torch::tensor(network_.module, torch::kInt64);
    for (std::int64_t m = 0; m < params_.integer("modules"); ++m)
      layout.community_names.push_back(fmt::format("module {}", m));
    layout.relations["coupling"] = to_tensor(network_.coupling, {network_.nodes, network_.nodes});
    // The functional connectivity of the training recording, as an fMRI study would compute it.
    layout.relations["functional_connectivity"] = functional_connectivity(train_);
    return layout;
  }

  // The dynamics' options, with the nodes pulses may drive when they are one module's.
  DynamicsOptions dynamics() const {
    DynamicsOptions options = dynamics_options(params_);
    const std::int64_t module = params_.integer("stimulus_module");
    if (module < 0) return options;
    PELAB_CHECK(module < params_.integer("modules"),
                "stimulus_module = {}: the network has {} modules (0 to {})", module,
                params_.integer("modules"), params_.integer("modules") - 1);
    for (std::int64_t node = 0; node < network_.nodes; ++node) {
      if (network_.module[static_cast<std::size_t>(node)] == module)
        options.stimulus_candidates.push_back(node);
    }
    return options;
  }

  // What the recordings and their windows will take, refused before anything is allocated: each
  // recording is held twice in float64 (the simulator's and the tensor), its windows once in
  // float32 (inputs and targets share them).
  void check_memory() const {
    const double nodes = static_cast<double>(network_.nodes);
    const double train = static_cast<double>(params_.integer("train_windows"));
    const double test = static_cast<double>(params_.integer("test_windows"));
    const auto time_points = [&](double windows) { return (windows - 1) * stride_ + window_; };
    const double window_bytes = (train + test) * nodes * static_cast<double>(window_) * 4.0;
    const double recording_bytes = (time_points(train) + time_points(test)) * nodes * 16.0;
    check_fits_in_memory(
        window_bytes + recording_bytes, "the network_simulation task",
        fmt::format("{:.0f} + {:.0f} windows (train_windows + test_windows) x {} nodes x {} points "
                    "in float32, {} of them, and their recordings",
                    train, test, network_.nodes, window_, format_bytes(window_bytes)),
        "Use fewer train_windows or test_windows, fewer nodes or a shorter window");
  }

  // A recording with no signal is refused, as a constant one would be: without noise and pulses
  // the network settles to its fixed point, and z-scoring each node would turn what is left (the
  // last of its approach, rounding) into training data. A node carries a signal when its activity
  // varies by at least this fraction of its scale (its root-mean-square value); the defaults give
  // about 0.1, a network at rest after the burn-in about 1e-6.
  static constexpr double kMinimumVariation = 1e-4;
  void check_signal(const torch::Tensor& activity, const char* which) const {
    const torch::Tensor spread = activity.std(0, /*unbiased=*/false);
    const torch::Tensor scale = activity.square().mean(0).sqrt();
    const torch::Tensor variation = spread / scale.clamp_min(std::numeric_limits<double>::min());
    const std::int64_t node = variation.argmin().item<std::int64_t>();
    const double least = variation[node].item<double>();
    PELAB_CHECK(
        least >= kMinimumVariation,
        "the {} recording of the network_simulation task has no signal: node {} varies by "
        "{:.2g} of its scale (std {:.3g} around {:.3g}), below the {:g} that counts as a "
        "signal. With noise_std = {:g} and stimulus_rate = {:g} the network settles to a "
        "fixed point; give the dynamics noise (noise_std > 0) or pulses (stimulus_rate > 0, "
        "stimulus_nodes > 0 and stimulus_amplitude != 0)",
        which, node, least, spread[node].item<double>(),
        activity.select(1, node).mean().item<double>(), kMinimumVariation,
        params_.real("noise_std"), params_.real("stimulus_rate"));
  }

  // A recording's activity [time, nodes] (float64): simulated, or read from the cache.
  torch::Tensor recording(std::int64_t seed, std::int64_t windows) const {
    const std::int64_t time_points = (windows - 1) * stride_ + window_;
    const auto simulate_now = [&] {
      const Recording recorded = checked([&] {
        return simulate(network_, dynamics(), time_points, static_cast<std::uint64_t>(seed));
      });
      return to_tensor(recorded.activity, {recorded.time_points, recorded.nodes});
    };
    if (!params_.boolean("cache")) return simulate_now();
    const DataCache cache("network_simulation", describe_recording(params_, seed, time_points),
                          params_.string("cache_dir"));
    const std::string file = cache.path("activity.npy");
    if (cache.ready()) {
      torch::Tensor activity = read_npy(file);
      PELAB_CHECK(activity.dim() == 2 && activity.size(0) == time_points &&
                      activity.size(1) == network_.nodes,
                  "the cached recording '{}' has the wrong shape: delete its folder {}", file,
                  cache.dir());
      return activity;
    }
    torch::Tensor activity = simulate_now();
    write_npy(file, activity);
    cache.commit();
    return activity;
  }

  // Windows of `window` time points every `stride`, each node's activity z-scored over the whole
  // recording: inputs and targets [windows, nodes, window], float32.
  Dataset windows(const torch::Tensor& activity) const {
    const torch::Tensor mean = activity.mean(0, /*keepdim=*/true);
    const torch::Tensor std = activity.std(0, /*unbiased=*/false, /*keepdim=*/true);
    const torch::Tensor z = ((activity - mean) / std).to(torch::kFloat32);
    Dataset data;
    data.inputs = z.unfold(0, window_, stride_).contiguous();  // [windows, nodes, window]
    data.targets = data.inputs;
    return data;
  }

  // The correlation matrix of the nodes' activity: [nodes, nodes].
  static torch::Tensor functional_connectivity(const torch::Tensor& activity) {
    const torch::Tensor centred = activity - activity.mean(0, /*keepdim=*/true);
    const torch::Tensor unit = centred / centred.norm(2, {0}, /*keepdim=*/true);
    return unit.t().matmul(unit);
  }

  Params params_;
  std::int64_t window_;
  std::int64_t stride_;
  tasks::MaskedSplits splits_;
  Network network_;
  torch::Tensor train_;  // [time, nodes] float64
  torch::Tensor test_;
  Layout layout_;
};

void declare(ParamSchema& schema) {
  // The defaults are the simulator's own (simulation.h, dynamics.h): written once, there.
  const NetworkOptions network;
  const DynamicsOptions dynamics;
  // The network.
  schema.integer("nodes", network.nodes, "Nodes of the network (the tokens).").in_range(2, 1024);
  schema.integer("dims", network.dims, "Dimensions of the space the nodes are placed in: 2 or 3.")
      .in_range(2, 3);
  schema.integer("modules", network.modules, "Spatial modules the nodes are grouped into.")
      .in_range(1, 64);
  schema.choice("placement", network.placement, {"clustered", "uniform"},
                "\"clustered\": nodes Gaussian around their module's centre (module_spread); "
                "\"uniform\": nodes uniform in the unit square/cube, each in the module of its "
                "nearest centre.");
  schema.choice("node_order", network.node_order, {"round_robin", "shuffled"},
                "Which token is which node. \"round_robin\": as placed (clustered: node i in "
                "module i mod modules, on every network_seed); \"shuffled\": the same network "
                "with its nodes relabelled by a permutation drawn from network_seed, so networks "
                "of different seeds share no modules over the token indices.");
  schema
      .real("module_spread", network.module_spread,
            "Std of a node's position around its module's centre.")
      .in_range(1e-6, 10.0);
  schema
      .real("centre_margin", network.centre_margin,
            "Module centres keep this far from the cube's faces.")
      .in_range(0.0, 0.499);
  schema
      .real("length_scale", network.length_scale,
            "Coupling decays as exp(-distance / length_scale) (the unit square/cube).")
      .in_range(1e-6, 100.0);
  schema
      .real("between_module_scale", network.between_module_scale,
            "Factor on the coupling between nodes of different modules (1: no modules in W).")
      .in_range(0.0, 1.0);
  schema
      .real("density", network.density, "Fraction of the other nodes whose input each node keeps.")
      .in_range(1e-6, 1.0);
  schema
      .integer("network_seed", static_cast<std::int64_t>(network.seed),
               "Seed of the positions and modules (the network).")
      .at_least(0);
  // The dynamics: x <- x + dt/tau (-x + phi(gain W x + self_coupling x + I(t) + bias)) + noise.
  // gain + self_coupling < 4 keeps one stable state (see simulation.h).
  schema.real("gain", dynamics.gain, "Gain of the coupling input W x.").in_range(0.0, 1e3);
  schema
      .real("self_coupling", dynamics.self_coupling,
            "Weight of a node's own activity in its input.")
      .in_range(-1e3, 1e3);
  schema.real("bias", dynamics.bias, "Constant input (sets the resting activity).")
      .in_range(-1e3, 1e3);
  schema.real("tau", dynamics.tau, "Time constant.").in_range(1e-6, 1e6);
  schema.real("dt", dynamics.dt, "Euler-Maruyama step.").in_range(1e-6, 10.0);
  schema
      .real("noise_std", dynamics.noise_std, "Std of the noise per unit time (sqrt(dt) per step).")
      .in_range(0.0, 100.0);
  schema.real("stimulus_rate", dynamics.stimulus_rate, "Pulses per unit time (Poisson).")
      .in_range(0.0, 1e3);
  schema
      .integer("stimulus_nodes", dynamics.stimulus_nodes,
               "Nodes driven by each pulse, drawn at random.")
      .in_range(0, 1024);
  schema
      .integer("stimulus_module", -1,
               "Pulses drive only nodes of this module (-1: any node): another regime of the same "
               "network, e.g. a \"task state\" to transfer a PE learned at \"rest\" to.")
      .in_range(-1, 63);
  schema.real("stimulus_amplitude", dynamics.stimulus_amplitude, "Input of a pulse.")
      .in_range(-1e3, 1e3);
  schema.real("stimulus_duration", dynamics.stimulus_duration, "Duration of a pulse.")
      .in_range(0.0, 1e3);
  schema.real("burn_in", dynamics.burn_in, "Time simulated and discarded before recording.")
      .in_range(0.0, 1e6);
  schema
      .real("sample_interval", dynamics.sample_interval,
            "Time between recorded points (a multiple of dt).")
      .in_range(1e-6, 1e3);
  // Samples and splits.
  schema.integer("window", 16, "Time points per token (the input and the target of a node).")
      .in_range(1, 4096);
  schema.integer("stride", 8, "Time points between the starts of consecutive windows.")
      .in_range(1, 4096);
  schema.integer("train_windows", 2000, "Windows of the training recording.").in_range(1, 1000000);
  schema
      .integer("test_windows", 500,
               "Windows of the test recording (same network, other noise and pulses).")
      .in_range(1, 1000000);
  schema.integer("train_seed", 1, "Seed of the training recording's noise and pulses.").at_least(0);
  schema.integer("test_seed", 2, "Seed of the test recording's noise and pulses.").at_least(0);
  tasks::MaskedSplits::declare(schema, "nodes");
  // The cache.
  schema.boolean("cache", true,
                 "Keep the recordings in the data cache (keyed by every parameter above), so that "
                 "the runs of a sweep simulate them once.");
  schema.string("cache_dir", "",
                "The cache's root; \"\" = $PELAB_CACHE_DIR, else $XDG_CACHE_HOME/pelab, else "
                "~/.cache/pelab.");
}

std::shared_ptr<Task> create(const PluginContext& context) {
  return std::make_shared<NetworkSimulationTask>(context);
}

}  // namespace
}  // namespace pelab::network_simulation

PELAB_REGISTER_PLUGIN("network_simulation", "1.0.0",
                      "Masked-node prediction on a simulated nonlinear stochastic network in 2D/3D "
                      "(the paper's second experiment)",
                      pelab::network_simulation::declare, pelab::network_simulation::create)
