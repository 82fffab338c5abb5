#include "simulation.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include <pelab/sdk.h>

#include "option_checks.h"

namespace pelab::network_simulation {
namespace {

// The placement's stream from the network's seed (the dynamics draw from streams of their own).
constexpr std::uint64_t kPlacementStream = 0x5ee1d0f1a2b3c4d5ULL;
// The relabelling's, so that "shuffled" leaves the placement's draws as they are.
constexpr std::uint64_t kNodeOrderStream = 0x0d3e0f5a1b2c3d4eULL;

tasks::CouplingOptions coupling_options(const NetworkOptions& o) {
  tasks::CouplingOptions coupling;
  coupling.length_scale = o.length_scale;
  coupling.between_module_scale = o.between_module_scale;
  coupling.density = o.density;
  return coupling;
}

// Each failure names the option, its value and what is allowed.
void validate(const NetworkOptions& o) {
  using tasks::require_option;
  require_option(o.nodes >= 2, "nodes", ">= 2", static_cast<double>(o.nodes));
  tasks::require_dims(o.dims);
  require_option(o.modules >= 1 && o.modules <= o.nodes, "modules",
                 "in [1, nodes = " + std::to_string(o.nodes) + "]", static_cast<double>(o.modules));
  if (o.placement != "clustered" && o.placement != "uniform")
    tasks::reject_option("placement", "\"clustered\" or \"uniform\"", "\"" + o.placement + "\"");
  if (o.node_order != "round_robin" && o.node_order != "shuffled") {
    tasks::reject_option("node_order", "\"round_robin\" or \"shuffled\"",
                         "\"" + o.node_order + "\"");
  }
  tasks::require_positive(o.module_spread, "module_spread");
  tasks::validate_coupling(coupling_options(o));
  require_option(o.centre_margin >= 0.0 && o.centre_margin < 0.5, "centre_margin", "in [0, 0.5)",
                 o.centre_margin);
}

void place_centres(const NetworkOptions& o, Random& random, Network& network) {
  network.centres.resize(o.modules * o.dims);
  for (double& c : network.centres)
    c = o.centre_margin + (1.0 - 2.0 * o.centre_margin) * random.uniform();
}

void place_clustered(const NetworkOptions& o, Random& random, Network& network) {
  for (std::int64_t i = 0; i < o.nodes; ++i) {
    const std::int64_t m = i % o.modules;
    network.module[i] = m;
    for (std::int64_t c = 0; c < o.dims; ++c) {
      const double x = network.centres[m * o.dims + c] + o.module_spread * random.normal();
      network.positions[i * o.dims + c] = std::clamp(x, 0.0, 1.0);
    }
  }
}

void place_uniform(const NetworkOptions& o, Random& random, Network& network) {
  for (double& x : network.positions)
    x = random.uniform();
  for (std::int64_t i = 0; i < o.nodes; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (std::int64_t m = 0; m < o.modules; ++m) {
      double sum = 0.0;
      for (std::int64_t c = 0; c < o.dims; ++c) {
        const double diff = network.positions[i * o.dims + c] - network.centres[m * o.dims + c];
        sum += diff * diff;
      }
      if (sum < best) {  // strict: ties go to the lower module
        best = sum;
        network.module[i] = m;
      }
    }
  }
}

// Token j becomes the node placed as order[j]: the same positions and modules in another order.
void relabel_nodes(const NetworkOptions& o, Network& network) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(o.nodes));
  std::iota(order.begin(), order.end(), 0);
  Random::from_splitmix(o.seed, kNodeOrderStream).shuffle(order);
  const std::vector<double> positions = network.positions;
  const std::vector<std::int64_t> modules = network.module;
  for (std::int64_t j = 0; j < o.nodes; ++j) {
    const std::int64_t from = order[static_cast<std::size_t>(j)];
    network.module[j] = modules[from];
    for (std::int64_t c = 0; c < o.dims; ++c)
      network.positions[j * o.dims + c] = positions[from * o.dims + c];
  }
}

}  // namespace

Network make_network(const NetworkOptions& options) {
  validate(options);
  // The placement: centres, then the nodes' positions and modules.
  Network placed;
  placed.positions.resize(options.nodes * options.dims);
  placed.module.resize(options.nodes);
  Random random = Random::from_splitmix(options.seed, kPlacementStream);
  place_centres(options, random, placed);
  if (options.placement == "clustered")
    place_clustered(options, random, placed);
  else
    place_uniform(options, random, placed);
  if (options.node_order == "shuffled") relabel_nodes(options, placed);

  // The coupling through network_from, so that the rule has one implementation.
  Network network = network_from(placed.positions, options.dims, placed.module, options);
  network.centres = std::move(placed.centres);
  return network;
}

Network network_from(const std::vector<double>& positions, std::int64_t dims,
                     const std::vector<std::int64_t>& modules, const NetworkOptions& options) {
  return tasks::couple(positions, dims, modules, coupling_options(options));
}

}  // namespace pelab::network_simulation
