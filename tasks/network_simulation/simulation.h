#pragma once

// A nonlinear stochastic network in space: nodes placed in 2D or 3D and grouped into modules,
// coupled by the shared coupling rule (tasks/common/network.h), with the shared sigmoid rate
// dynamics (tasks/common/dynamics.h) driven by noise and by pulses to random node subsets, so
// that activity propagates along the structure. The generator of the network_simulation task
// (see docs/tasks/network_simulation.md).
//
// Plain C++ (no LibTorch): deterministic by seed (pelab::Random, whose draws are written out, so
// results do not depend on the standard library's distribution code).

#include <cstdint>
#include <string>
#include <vector>

#include "dynamics.h"
#include "network.h"

namespace pelab::network_simulation {

// The network model is shared with the brain task's synthetic cohort; the task and its tests
// name it here.
using tasks::distances;
using tasks::DynamicsOptions;
using tasks::Network;
using tasks::Recording;
using tasks::simulate;
using tasks::simulate_with_pulse;

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
  /// Which token is which node. "round_robin": as placed (clustered: node i in module i mod
  /// modules, so networks of any seed share their modules over the token indices). "shuffled":
  /// the same network with its nodes relabelled by a permutation drawn from the seed, so that
  /// networks of different seeds share no module structure over the indices (a null for what a
  /// PE carries from one network to another).
  std::string node_order = "round_robin";
  double module_spread = 0.12;
  /// Module centres keep this far from the cube's faces, in [0, 0.5).
  double centre_margin = 0.15;
  /// The coupling rule's options (tasks::CouplingOptions): exp(-distance / length_scale), times
  /// between_module_scale when the two nodes are in different modules, before sparsification and
  /// normalisation.
  double length_scale = 0.2;
  double between_module_scale = 0.3;
  /// Fraction of the other nodes whose input each node keeps (its strongest inputs), >= 1 input.
  double density = 0.25;
  std::uint64_t seed = 0;
};

/// Builds the network: places the nodes, then couples them by network_from(). Throws
/// std::invalid_argument for options out of range, naming the option.
Network make_network(const NetworkOptions& options);

/// The network on given nodes, coupled by make_network's rule (tasks::couple): `positions` is
/// [nodes, dims] (dims 2 or 3, nodes >= 2) in the unit cube, the units of length_scale (not
/// enforced; finite is); `modules` is [nodes], module ids 0 .. K-1. Uses options.length_scale,
/// between_module_scale and density only; the other options (nodes, dims, modules, placement,
/// seed, ...) are not used. The result's centres are empty. make_network(o) equals
/// network_from(its positions, o.dims, its module, o) in coupling, bit for bit. Throws
/// std::invalid_argument for bad input, naming it (dims, positions, modules or the option).
Network network_from(const std::vector<double>& positions, std::int64_t dims,
                     const std::vector<std::int64_t>& modules, const NetworkOptions& options);

}  // namespace pelab::network_simulation
