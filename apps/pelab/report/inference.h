#pragma once

// What a difference between two conditions resolves, at the number of seeds it was measured with:
// the per-seed paired difference, a seeded percentile-bootstrap 95% CI, an exact sign-flip
// permutation test (or a permutation test of the difference of means when the seeds differ),
// Holm's correction across the comparisons of one table, and the seeds that the observed spread
// would need for 80% power. Per condition: mean, bootstrap CI, median and interquartile mean (the
// spreads here are heavy-tailed: a seed that does not fit), and the seeds that failed.
//
// Plain C++ on doubles; the tests check it against scipy and numpy (tests/apps/inference_test.cpp).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pelab::report {

struct InferenceOptions {
  /// Bootstrap resamples (the CIs) and the seed of their draws: the same values give the same CI.
  std::int64_t resamples = 10000;
  std::uint64_t seed = 20240612;
  /// Enumerate every sign flip (2^n) or relabelling up to this many; above it, draw this many at
  /// random (Monte Carlo, p = (hits + 1) / (draws + 1)).
  std::int64_t exact_limit = 1 << 20;
  double alpha = 0.05;
  /// The scale each series' other scales are compared with (`pelab report --reference-scale`);
  /// unset, or where a series has no such point, its smallest.
  std::optional<double> reference_scale;
};

/// One condition's values over seeds.
struct ConditionSummary {
  std::size_t n = 0;       ///< finite values
  std::size_t failed = 0;  ///< non-finite values (a run that diverged: NaN)
  double mean = 0.0;
  double ci_low = 0.0, ci_high = 0.0;  ///< percentile bootstrap of the mean
  double median = 0.0;
  /// Interquartile mean: the mean left when floor(n / 4) values are cut from each end
  /// (scipy.stats.trim_mean(x, 0.25), as rliable's IQM of Agarwal et al. 2021).
  double iqm = 0.0;
};
ConditionSummary summarise_condition(const std::vector<double>& values,
                                     const InferenceOptions& options = {});

/// B against A: the difference is B - A.
struct Comparison {
  bool paired = false;  ///< on the seeds both conditions hold; else unpaired (a note says so)
  std::size_t n = 0;    ///< pairs (paired), or finite values of A and B together
  std::size_t n_a = 0, n_b = 0;
  std::vector<double> differences;  ///< per seed, B - A, in seed order (paired)
  std::vector<std::int64_t> seeds;  ///< the seeds of `differences`
  double difference = 0.0;          ///< mean of the differences, or mean(B) - mean(A)
  double ci_low = 0.0, ci_high = 0.0;
  double p = 1.0;       ///< two-sided permutation p
  bool exact = true;    ///< every flip or relabelling enumerated
  double min_p = 1.0;   ///< the smallest p the design can give (2 / 2^n paired)
  double p_holm = 1.0;  ///< Holm-adjusted over its table (apply_holm); until then, p
  /// Seeds for 80% power at alpha, from the observed mean and spread (paired: of the differences;
  /// unpaired: per condition), and never fewer than the test needs to reach alpha at all (6
  /// paired, 4 a condition unpaired); nullopt where the observed difference is 0 or there is no
  /// spread to estimate.
  std::optional<std::int64_t> seeds_for_power;

  /// The CI excludes 0 and the (Holm-adjusted) p is at most alpha: with 3 seeds, never (the
  /// smallest attainable p is 0.25), however narrow the bootstrap CI.
  bool resolved(double alpha = 0.05) const {
    return (ci_low > 0.0 || ci_high < 0.0) && p_holm <= alpha;
  }
  /// One line: "+2.8 [95% CI -1.0, 6.4], p = 0.25 (exact sign flip, n = 3; smallest attainable
  /// p 0.25 > 0.05), Holm p = 0.5: not resolved at n = 3 (about 14 seeds for 80% power)".
  /// `format` formats one value (fmt syntax), `factor` scales differences for display.
  std::string text(const std::string& format = "{:.4g}", double factor = 1.0) const;
  /// "about 26 seeds for 80% power" (unpaired: "seeds a condition"; `unit` names what n counts),
  /// or, past 1,000, "over 1,000 seeds for 80% power": a difference near 0 gives millions, a
  /// count nobody would run. Empty when seeds_for_power is nullopt.
  std::string power_text(const std::string& unit = "seeds") const;
  /// What the test rests on: "n = 10" paired, "n = 6 + 10, unpaired" (B's seeds and A's, in the
  /// order the difference B - A reads: their sum would read as more seeds than either has).
  std::string sample_size() const;
  /// How it was computed, for the report's methods paragraph.
  std::string method() const;
};

/// Compares B with A over seeds: paired on the seeds both hold finite values for when there are at
/// least two such seeds and every finite value of each is on one (the same seeds), else unpaired.
Comparison compare(const std::map<std::int64_t, double>& a, const std::map<std::int64_t, double>& b,
                   const InferenceOptions& options = {});

/// Holm's step-down adjustment of p-values (the order of `p` is kept).
std::vector<double> holm_adjust(const std::vector<double>& p);
/// Sets each comparison's p_holm over the set.
void apply_holm(std::vector<Comparison>& comparisons);

/// Fisher's method: one p-value for k independent tests, from chi^2 with 2k degrees of freedom.
/// Non-finite p-values are left out; nullopt when none is left.
std::optional<double> fisher_combined(const std::vector<double>& p);

/// Seeds needed for power `power` of a two-sided test at `alpha` for a mean `effect` with
/// standard deviation `sd` (normal approximation: ((z_{1-alpha/2} + z_power) sd / effect)^2).
std::optional<std::int64_t> seeds_for_power(double effect, double sd, double alpha = 0.05,
                                            double power = 0.8);

}  // namespace pelab::report
