#include "network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "option_checks.h"

namespace pelab::tasks {
namespace {

/// couple()'s nodes; its options are checked by validate_coupling().
void validate_nodes(const std::vector<double>& positions, std::int64_t dims,
                    const std::vector<std::int64_t>& modules) {
  require_dims(dims);
  const auto n = static_cast<std::int64_t>(modules.size());
  if (n < 2)
    reject_option("modules", "one id per node, with nodes >= 2", std::to_string(n) + " ids");
  if (positions.size() != static_cast<std::size_t>(n * dims))
    reject_option("positions",
                  "[nodes, dims] = [" + std::to_string(n) + ", " + std::to_string(dims) + "]",
                  std::to_string(positions.size()) + " values");
  // A NaN distance would break the ordering of the inputs.
  for (std::int64_t e = 0; e < n * dims; ++e)
    if (!std::isfinite(positions[e]))
      reject_option("positions", "finite",
                    format_option(positions[e]) + " at node " + std::to_string(e / dims));
  for (std::int64_t i = 0; i < n; ++i)
    if (modules[i] < 0)
      reject_option("modules", "ids >= 0",
                    std::to_string(modules[i]) + " at node " + std::to_string(i));
}

double distance(const Network& network, std::int64_t i, std::int64_t j) {
  const auto d = network.dims;
  double sum = 0.0;
  for (std::int64_t c = 0; c < d; ++c) {
    const double diff = network.positions[i * d + c] - network.positions[j * d + c];
    sum += diff * diff;
  }
  return std::sqrt(sum);
}

/// Row i of the coupling: its k strongest inputs, normalised to sum 1. Worked in log space so
/// that a short length scale (exp(-d / L) underflowing) still gives a well-defined row.
void couple_row(const CouplingOptions& o, Network& network, std::int64_t i, std::int64_t k) {
  const auto n = network.nodes;
  const double log_between = std::log(o.between_module_scale);  // -inf for 0: never kept
  std::vector<double> score(n, -std::numeric_limits<double>::infinity());
  for (std::int64_t j = 0; j < n; ++j) {
    if (j == i) continue;
    score[j] = -distance(network, i, j) / o.length_scale;
    if (network.module[i] != network.module[j]) score[j] += log_between;
  }
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  // Strongest first; stable, so ties keep the lower index.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return score[a] > score[b]; });

  double* row = &network.coupling[i * n];
  const double top = score[order[0]];
  if (!std::isfinite(top)) return;  // no possible input: the row stays zero (see the header)
  double sum = 0.0;
  for (std::int64_t r = 0; r < k; ++r) {
    const std::int64_t j = order[r];
    if (!std::isfinite(score[j])) break;
    row[j] = std::exp(score[j] - top);
    sum += row[j];
  }
  for (std::int64_t j = 0; j < n; ++j)
    row[j] /= sum;
}

}  // namespace

void validate_coupling(const CouplingOptions& o) {
  require_positive(o.length_scale, "length_scale");
  require_non_negative(o.between_module_scale, "between_module_scale");
  require_option(o.density > 0.0 && o.density <= 1.0, "density", "in (0, 1]", o.density);
}

Network couple(const std::vector<double>& positions, std::int64_t dims,
               const std::vector<std::int64_t>& modules, const CouplingOptions& options) {
  validate_nodes(positions, dims, modules);
  validate_coupling(options);
  const auto n = static_cast<std::int64_t>(modules.size());
  Network network;
  network.nodes = n;
  network.dims = dims;
  network.positions = positions;
  network.module = modules;
  network.coupling.assign(n * n, 0.0);

  const auto k = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::llround(options.density * static_cast<double>(n - 1))));
  for (std::int64_t i = 0; i < n; ++i)
    couple_row(options, network, i, k);
  return network;
}

std::vector<double> distances(const Network& network) {
  const auto n = network.nodes;
  std::vector<double> d(n * n, 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = i + 1; j < n; ++j)
      d[i * n + j] = d[j * n + i] = distance(network, i, j);
  return d;
}

}  // namespace pelab::tasks
