#pragma once

// Nodes in space grouped into modules, and the coupling rule between them: structural coupling
// that decays with distance and is weaker between modules. Shared by the network_simulation task
// (nodes it places) and the brain task's synthetic cohort (parcels' centroids, networks as
// modules), whose dynamics (dynamics.h) run on it.
//
// Plain C++ (no LibTorch): the same nodes and options give the same coupling, bit for bit.

#include <cstdint>
#include <vector>

namespace pelab::tasks {

/// The coupling rule's options: exp(-distance / length_scale), times between_module_scale when
/// the two nodes are in different modules, before sparsification and normalisation.
struct CouplingOptions {
  double length_scale = 0.2;
  double between_module_scale = 0.3;
  /// Fraction of the other nodes whose input each node keeps (its strongest inputs), >= 1 input.
  double density = 0.25;
};

/// A coupled network. Matrices are row-major.
struct Network {
  std::int64_t nodes = 0;
  std::int64_t dims = 0;
  std::vector<double> positions;     // [nodes, dims], in [0, 1]
  std::vector<std::int64_t> module;  // [nodes], 0 .. modules-1
  /// [modules, dims]: the module centres a placement put the nodes around (the network_simulation
  /// task's make_network); empty for a network coupled on given nodes (couple()).
  std::vector<double> centres;
  /// [nodes, nodes]: coupling[i * nodes + j] is the weight of node j's activity in node i's input.
  /// Zero diagonal, non-negative, each row sums to 1 (a node's inputs are normalised); the one
  /// exception is a node with no possible input (alone in its module with between_module_scale
  /// 0), whose row is zero.
  std::vector<double> coupling;
};

/// Throws std::invalid_argument, naming the option, for options the coupling rule refuses.
void validate_coupling(const CouplingOptions& options);

/// The network on given nodes, coupled by the rule: `positions` is [nodes, dims] (dims 2 or 3,
/// nodes >= 2), in the units of length_scale (not enforced; finite is); `modules` is [nodes],
/// module ids 0 .. K-1. Each node keeps its round(density x (nodes - 1)) (at least 1) strongest
/// inputs, normalised to sum 1. The result's centres are empty. Throws std::invalid_argument for
/// bad input, naming it (dims, positions, modules or the option).
Network couple(const std::vector<double>& positions, std::int64_t dims,
               const std::vector<std::int64_t>& modules, const CouplingOptions& options);

/// Euclidean distances between the nodes: [nodes, nodes].
std::vector<double> distances(const Network& network);

}  // namespace pelab::tasks
