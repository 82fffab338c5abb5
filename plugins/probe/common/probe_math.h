#pragma once

// Small numerical helpers shared by pelab's probe plugins (header-only: each probe is its own
// .so). Everything is float64 on the CPU.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include <pelab/sdk.h>

namespace pelab::probe_math {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline torch::Tensor f64(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
}

/// Declares the layout probes' `tensor` key: which of the PE's snapshotted parameters to read as
/// its position table instead of its table (or kernel).
inline void declare_tensor_key(ParamSchema& schema) {
  schema.string("tensor", "",
                "A PE parameter to read as the position table instead of the PE's table or "
                "kernel, e.g. \"positions\" (rope_mixed, liere, string with learned positions) or "
                "\"angles\" (learned_rotary); its first dimension must be the tokens. \"auto\": "
                "the first of positions, angles, table that the PE has (the same probe over PEs "
                "of several families). Empty: the table, or the kernel.");
}

/// The snapshots a layout probe reads: with `tensor` empty, as they are; with `tensor` naming a
/// parameter that the snapshots hold (PESnapshot::tensors, [pes, N, ...]), that parameter as each
/// snapshot's table, [pes, N, the rest flattened]. Errors name the probe and its key.
inline std::vector<PESnapshot> position_tables(const std::vector<PESnapshot>& snapshots,
                                               const std::string& tensor, const std::string& probe,
                                               std::int64_t tokens) {
  if (tensor.empty()) return snapshots;
  if (tensor == "auto") {
    // By the names pelab's PEs give their learned positions; none: the table or the kernel.
    for (const char* name : {"positions", "angles", "table"}) {
      const bool held = std::any_of(snapshots.begin(), snapshots.end(),
                                    [&](const PESnapshot& s) { return s.tensors.count(name) > 0; });
      if (held) return position_tables(snapshots, name, probe, tokens);
    }
    return snapshots;
  }
  std::vector<PESnapshot> tables;
  std::vector<std::string> held;
  for (const auto& snapshot : snapshots) {
    for (const auto& entry : snapshot.tensors)
      if (std::find(held.begin(), held.end(), entry.first) == held.end())
        held.push_back(entry.first);
    const auto found = snapshot.tensors.find(tensor);
    if (found == snapshot.tensors.end()) continue;
    const torch::Tensor& values = found->second;
    PELAB_CHECK(values.dim() >= 3 && values.size(1) == tokens,
                "{}: tensor = \"{}\" is [{}] over the PEs, not a position table: its first "
                "dimension after the PEs must be the {} tokens",
                probe, tensor, fmt::join(values.sizes(), ", "), tokens);
    PESnapshot table;
    table.epoch = snapshot.epoch;
    table.tables = values.reshape({values.size(0), tokens, -1});
    tables.push_back(std::move(table));
  }
  PELAB_CHECK(
      !tables.empty() || snapshots.empty(),
      "{}: tensor = \"{}\" names no parameter of the run's PE snapshots ({}); set tensor to "
      "one of them, or leave it empty for the PE's table or kernel",
      probe, tensor,
      held.empty() ? std::string("they hold none: written before pelab stored parameters")
                   : fmt::format("they hold {}", fmt::join(held, ", ")));
  return tables;
}

/// The snapshots that hold tables (or, with `kernels`, kernels), in training order.
inline std::vector<const PESnapshot*> with_tables(const std::vector<PESnapshot>& snapshots,
                                                  bool kernels = false) {
  std::vector<const PESnapshot*> out;
  for (const auto& snapshot : snapshots) {
    if (kernels ? snapshot.kernels.defined() : snapshot.tables.defined()) out.push_back(&snapshot);
  }
  return out;
}

/// The snapshots that hold tables, or, where none does, those that hold kernels (then
/// `use_kernels` is set), in training order.
inline std::vector<const PESnapshot*> tables_or_kernels(const std::vector<PESnapshot>& snapshots,
                                                        bool& use_kernels) {
  use_kernels = false;
  auto out = with_tables(snapshots);
  if (out.empty()) {
    out = with_tables(snapshots, /*kernels=*/true);
    use_kernels = true;
  }
  return out;
}

inline torch::Tensor epochs_of(const std::vector<const PESnapshot*>& snapshots) {
  std::vector<double> epochs;
  for (const auto* s : snapshots)
    epochs.push_back(static_cast<double>(s->epoch));
  return torch::tensor(epochs, torch::kFloat64);
}

/// The values above the diagonal of a square matrix, row by row.
inline torch::Tensor upper_triangle(const torch::Tensor& matrix) {
  const std::int64_t n = matrix.size(0);
  const torch::Tensor index = torch::triu_indices(n, n, 1);
  return matrix.index({index[0], index[1]});
}

/// Euclidean distances between the rows of x: [N, N].
inline torch::Tensor euclidean_distances(const torch::Tensor& x) {
  const torch::Tensor d = f64(x);
  const torch::Tensor squared = (d.unsqueeze(1) - d.unsqueeze(0)).pow(2).sum(-1);
  return squared.sqrt();
}

/// Cosine similarities between the rows of x: [N, N]; a zero row is similar to nothing (0).
inline torch::Tensor cosine_similarities(const torch::Tensor& x) {
  const torch::Tensor d = f64(x);
  const torch::Tensor norms = d.norm(2, {1}, /*keepdim=*/true);
  const torch::Tensor unit = d / norms.clamp_min(1e-300);
  torch::Tensor s = unit.matmul(unit.t());
  const torch::Tensor zero = (norms.squeeze(1) == 0);
  s.index_put_({zero}, 0.0);
  s.index_put_({torch::indexing::Slice(), zero}, 0.0);
  return s;
}

/// A kernel turned into a similarity: symmetrised, and normalised to a unit diagonal
/// (K_ij / sqrt(K_ii K_jj)) when the diagonal is positive. `normalised` says whether it was.
inline torch::Tensor kernel_similarity(const torch::Tensor& kernel, bool* normalised = nullptr) {
  const torch::Tensor k = f64(kernel);
  const torch::Tensor s = (k + k.t()) / 2;
  const torch::Tensor diagonal = s.diagonal();
  const bool positive = diagonal.min().item<double>() > 0;
  if (normalised) *normalised = positive;
  if (!positive) return s;
  const torch::Tensor scale = diagonal.sqrt();
  return s / (scale.unsqueeze(1) * scale.unsqueeze(0));
}

/// Ranks from 1, ties sharing their average rank (as scipy.stats.rankdata). Values within
/// `tolerance` of the smallest value of their run of sorted values count as tied.
inline std::vector<double> average_ranks(const std::vector<double>& values,
                                         double tolerance = 0.0) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] - values[order[i]] <= tolerance)
      ++j;
    const double rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t k = i; k <= j; ++k)
      ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
}

/// The tolerance below which differences between values derived from float32 snapshots are
/// rounding noise: 1e-6 of the largest magnitude.
inline double float32_tolerance(const torch::Tensor& values) {
  return values.numel() > 0 ? 1e-6 * values.abs().max().item<double>() : 0.0;
}

inline std::vector<double> to_vector(const torch::Tensor& t) {
  const torch::Tensor d = f64(t).flatten();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

inline torch::Tensor from_vector(const std::vector<double>& v) {
  return torch::tensor(v, torch::kFloat64);
}

/// Pearson correlation of two equally long vectors; NaN when either is constant.
inline double pearson(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor x = f64(a).flatten() - f64(a).mean();
  const torch::Tensor y = f64(b).flatten() - f64(b).mean();
  const double denominator =
      std::sqrt(x.pow(2).sum().item<double>() * y.pow(2).sum().item<double>());
  if (!(denominator > 0)) return kNaN;
  return (x * y).sum().item<double>() / denominator;
}

/// Spearman correlation: the Pearson correlation of the average ranks (ties within each
/// vector's float32 tolerance).
inline double spearman(const torch::Tensor& a, const torch::Tensor& b) {
  return pearson(from_vector(average_ranks(to_vector(a), float32_tolerance(f64(a)))),
                 from_vector(average_ranks(to_vector(b), float32_tolerance(f64(b)))));
}

/// A symmetric N x N matrix of the ranks of the upper-triangle entries of `matrix` (diagonal 0),
/// ties as in spearman().
inline torch::Tensor rank_matrix(const torch::Tensor& matrix) {
  const std::int64_t n = matrix.size(0);
  const torch::Tensor index = torch::triu_indices(n, n, 1);
  const torch::Tensor upper = upper_triangle(f64(matrix));
  const torch::Tensor ranks =
      from_vector(average_ranks(to_vector(upper), float32_tolerance(upper)));
  torch::Tensor out = torch::zeros({n, n}, torch::kFloat64);
  out.index_put_({index[0], index[1]}, ranks);
  out.index_put_({index[1], index[0]}, ranks);
  return out;
}

/// Deterministic permutations of 0..n-1: the SDK's unbiased Fisher-Yates (pelab::Random) on a
/// std::mt19937_64 seeded with `seed`, the same permutations on every standard library.
class Permuter {
 public:
  explicit Permuter(std::uint64_t seed) : random_(Random::from_engine_seed(seed)) {}
  torch::Tensor next(std::int64_t n) {
    std::vector<std::int64_t> p(static_cast<std::size_t>(n));
    std::iota(p.begin(), p.end(), 0);
    random_.shuffle(p);
    return torch::tensor(p, torch::kInt64);
  }

 private:
  Random random_;
};

/// How each snapshot's PEs relate to a ground-truth matrix: Spearman and Pearson correlation over
/// the pairs above the diagonal, one value per PE (block) and snapshot, and the last snapshot's
/// matrices (for a permutation test and the arrays).
struct CorrelationHistory {
  std::vector<torch::Tensor> spearman;  // per snapshot: [pes]
  std::vector<torch::Tensor> pearson;
  std::vector<torch::Tensor> final_matrices;  // per PE: [tokens, tokens]
};

/// Turns every PE of every snapshot (tables, or kernels with `use_kernels`) into a token x token
/// matrix with `matrix_of(pe)` and correlates it with `truth`; `truth_name` says what the truth
/// is in the error for a snapshot of another token count ("the layout").
template <typename MatrixOf>
CorrelationHistory correlate_with(const std::vector<const PESnapshot*>& snapshots, bool use_kernels,
                                  const torch::Tensor& truth, const std::string& truth_name,
                                  MatrixOf matrix_of) {
  const torch::Tensor truth_upper = upper_triangle(truth);
  CorrelationHistory history;
  for (const auto* snapshot : snapshots) {
    const torch::Tensor pes = use_kernels ? snapshot->kernels : snapshot->tables;
    PELAB_CHECK(pes.size(1) == truth.size(0),
                "the PE snapshot of epoch {} has {} tokens but {} has {}", snapshot->epoch,
                pes.size(1), truth_name, truth.size(0));
    std::vector<double> spearman_values, pearson_values;
    history.final_matrices.clear();
    for (std::int64_t b = 0; b < pes.size(0); ++b) {
      const torch::Tensor matrix = matrix_of(pes[b]);
      const torch::Tensor upper = upper_triangle(matrix);
      spearman_values.push_back(spearman(upper, truth_upper));
      pearson_values.push_back(pearson(upper, truth_upper));
      history.final_matrices.push_back(matrix);
    }
    history.spearman.push_back(from_vector(spearman_values));
    history.pearson.push_back(from_vector(pearson_values));
  }
  return history;
}

/// A correlation's arrays: Spearman and Pearson per snapshot and PE ([snapshots, pes]), the
/// snapshots' epochs, the last snapshot's matrices ([pes, tokens, tokens]) as `matrices_name`, and
/// the ground truth they were correlated with as `truth_name`.
inline void add_correlation_arrays(ProbeResult& result, const CorrelationHistory& history,
                                   const std::vector<const PESnapshot*>& snapshots,
                                   const std::string& matrices_name, const torch::Tensor& truth,
                                   const std::string& truth_name) {
  result.arrays["spearman"] = torch::stack(history.spearman);
  result.arrays["pearson"] = torch::stack(history.pearson);
  result.arrays["epochs"] = epochs_of(snapshots);
  result.arrays[matrices_name] = torch::stack(history.final_matrices);
  result.arrays[truth_name] = truth;
}

/// The ranks of a matrix's pairs (rank_matrix), centred over the pairs, the diagonal 0: the
/// Spearman correlation of two matrices is the cosine of their centred rank matrices.
inline torch::Tensor centred_ranks(const torch::Tensor& matrix) {
  const std::int64_t n = matrix.size(0);
  const torch::Tensor ranks = rank_matrix(matrix);
  const double mean = upper_triangle(ranks).mean().item<double>();
  return (ranks - mean) * (1.0 - torch::eye(n, torch::kFloat64));
}

inline double cosine_of(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::sqrt(a.pow(2).sum().item<double>() * b.pow(2).sum().item<double>());
  return scale > 0 ? (a * b).sum().item<double>() / scale : kNaN;
}

/// One-sided permutation p-values of per-block statistics and of their mean over blocks:
/// `statistic(b, perm)` is block b's statistic with the tokens relabelled by `perm`. Adds
/// "<name>_block<b>" and "<name>", each (1 + #{permuted >= observed}) / (1 + permutations), NaN
/// where the observed value is.
template <typename Statistic>
inline void permutation_p_values(const std::vector<double>& observed, const Statistic& statistic,
                                 std::int64_t n, std::int64_t permutations, std::uint64_t seed,
                                 const std::string& name, ProbeResult& result) {
  const std::size_t blocks = observed.size();
  double observed_mean = 0.0;
  for (double value : observed)
    observed_mean += value / static_cast<double>(blocks);
  std::vector<std::int64_t> at_least(blocks, 0);
  std::int64_t mean_at_least = 0;
  Permuter permuter(seed);
  constexpr double kTolerance = 1e-12;  // a permutation that ties the observed value counts
  for (std::int64_t p = 0; p < permutations; ++p) {
    const torch::Tensor perm = permuter.next(n);
    double mean = 0.0;
    for (std::size_t b = 0; b < blocks; ++b) {
      const double value = statistic(b, perm);
      if (value >= observed[b] - kTolerance) ++at_least[b];
      mean += value / static_cast<double>(blocks);
    }
    if (mean >= observed_mean - kTolerance) ++mean_at_least;
  }
  const double denominator = static_cast<double>(permutations + 1);
  for (std::size_t b = 0; b < blocks; ++b) {
    result.scalars[per_block_scalar(name, static_cast<std::int64_t>(b))] =
        std::isfinite(observed[b]) ? static_cast<double>(at_least[b] + 1) / denominator : kNaN;
  }
  result.scalars[name] =
      std::isfinite(observed_mean) ? static_cast<double>(mean_at_least + 1) / denominator : kNaN;
}

/// A one-sided permutation test of a positive Spearman correlation between each of `matrices` (one
/// per block, N x N) and `truth`, over the pairs above the diagonal: relabel the tokens of the
/// matrix, keep the truth. Adds "p_value_block<b>" and "p_value" (for the mean over blocks):
/// p = (1 + #{rho_perm >= rho}) / (1 + permutations), NaN where rho is.
///
/// Spearman's rho of a token permutation pi is sum(C[pi][:, pi] * G) / sqrt(sum(C^2) sum(G^2)),
/// with C and G the rank matrices centred over the pairs (diagonals 0): permuting the tokens
/// permutes the pairs, so the ranks need computing once.
inline void spearman_permutation_test(const std::vector<torch::Tensor>& matrices,
                                      const torch::Tensor& truth, std::int64_t permutations,
                                      std::uint64_t seed, ProbeResult& result) {
  const std::int64_t n = truth.size(0);
  const torch::Tensor g = centred_ranks(truth);
  const double g_norm = g.pow(2).sum().item<double>();
  std::vector<torch::Tensor> c;
  std::vector<double> scale, observed;
  for (const auto& m : matrices) {
    c.push_back(centred_ranks(m));
    scale.push_back(std::sqrt(c.back().pow(2).sum().item<double>() * g_norm));
    observed.push_back(scale.back() > 0 ? (c.back() * g).sum().item<double>() / scale.back()
                                        : kNaN);
  }
  permutation_p_values(
      observed,
      [&](std::size_t b, const torch::Tensor& perm) {
        return scale[b] > 0
                   ? (c[b].index_select(0, perm).index_select(1, perm) * g).sum().item<double>() /
                         scale[b]
                   : kNaN;
      },
      n, permutations, seed, "p_value", result);
}

/// Columns centred over the rows (tokens).
inline torch::Tensor centred(const torch::Tensor& x) {
  const torch::Tensor d = f64(x);
  return d - d.mean(0, /*keepdim=*/true);
}

/// Eigenvalues (descending, clipped at 0) of the covariance of the rows of x: the PCA spectrum.
inline torch::Tensor pca_spectrum(const torch::Tensor& x) {
  const torch::Tensor c = centred(x);
  const double n = static_cast<double>(std::max<std::int64_t>(c.size(0) - 1, 1));
  const torch::Tensor singular = torch::linalg_svdvals(c);
  return singular.pow(2) / n;
}

/// The spectrum of a kernel read as a Gram matrix: eigenvalues of the doubly centred,
/// symmetrised kernel, descending, clipped at 0 (equal to pca_spectrum(P) when K = P P^T).
inline torch::Tensor kernel_spectrum(const torch::Tensor& kernel) {
  const torch::Tensor k = f64(kernel);
  const std::int64_t n = k.size(0);
  const torch::Tensor h = torch::eye(n, torch::kFloat64) -
                          torch::full({n, n}, 1.0 / static_cast<double>(n), torch::kFloat64);
  const torch::Tensor centred_kernel = h.matmul((k + k.t()) / 2).matmul(h);
  const torch::Tensor eigen = std::get<0>(torch::linalg_eigh(centred_kernel, "L"));
  const double denominator = static_cast<double>(std::max<std::int64_t>(n - 1, 1));
  return std::get<0>(eigen.clamp_min(0).sort(0, /*descending=*/true)) / denominator;
}

/// (sum lambda)^2 / sum lambda^2; NaN for an all-zero spectrum.
inline double participation_ratio(const torch::Tensor& spectrum) {
  const double sum = spectrum.sum().item<double>();
  const double squares = spectrum.pow(2).sum().item<double>();
  return squares > 0 ? sum * sum / squares : kNaN;
}

/// The name of layout axis `k`: its declared name, else "axis<k>".
inline std::string axis_name(const Layout& layout, std::int64_t k) {
  if (k < static_cast<std::int64_t>(layout.axis_names.size()) &&
      !layout.axis_names[static_cast<std::size_t>(k)].empty()) {
    return layout.axis_names[static_cast<std::size_t>(k)];
  }
  return fmt::format("axis{}", k);
}

/// Adds "<name>_block<b>" for every block's value and "<name>" for their mean (NaN when any
/// block's value is NaN).
inline void add_per_block(ProbeResult& result, const std::string& name,
                          const std::vector<double>& per_block) {
  double sum = 0.0;
  for (std::size_t b = 0; b < per_block.size(); ++b) {
    result.scalars[per_block_scalar(name, static_cast<std::int64_t>(b))] = per_block[b];
    sum += per_block[b];
  }
  result.scalars[name] = per_block.empty() ? kNaN : sum / static_cast<double>(per_block.size());
}

/// The partial Spearman correlation of each matrix with `truth`, controlling for `control` (three
/// relations between the same N tokens):
///   rho_xy.z = (rho_xy - rho_xz rho_yz) / sqrt((1 - rho_xz^2) (1 - rho_yz^2))
/// over the N(N-1)/2 pairs: what the matrix shares with the truth beyond what both share with the
/// control. Adds "partial_spearman" (mean over blocks) and per block; with permutations > 0 a
/// one-sided permutation p-value of each (the matrix's tokens relabelled, the truth and the
/// control kept), "partial_p_value" and per block, as spearman_permutation_test does.
inline void partial_spearman_test(const std::vector<torch::Tensor>& matrices,
                                  const torch::Tensor& truth, const torch::Tensor& control,
                                  std::int64_t permutations, std::uint64_t seed,
                                  ProbeResult& result) {
  const std::int64_t n = truth.size(0);
  const torch::Tensor y = centred_ranks(truth);
  const torch::Tensor z = centred_ranks(control);
  const double yz = cosine_of(y, z);
  const auto partial = [&](const torch::Tensor& x) {
    const double xy = cosine_of(x, y);
    const double xz = cosine_of(x, z);
    const double denominator = std::sqrt((1 - xz * xz) * (1 - yz * yz));
    return denominator > 0 ? (xy - xz * yz) / denominator : kNaN;
  };
  std::vector<torch::Tensor> xs;
  std::vector<double> observed;
  for (const auto& matrix : matrices) {
    xs.push_back(centred_ranks(matrix));
    observed.push_back(partial(xs.back()));
  }
  add_per_block(result, "partial_spearman", observed);
  if (permutations <= 0) return;
  permutation_p_values(
      observed,
      [&](std::size_t b, const torch::Tensor& perm) {
        return partial(xs[b].index_select(0, perm).index_select(1, perm));
      },
      n, permutations, seed, "partial_p_value", result);
}

}  // namespace pelab::probe_math
