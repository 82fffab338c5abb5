#include "report/inference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/base/random.h"

namespace pelab::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double mean_of(const std::vector<double>& values) {
  if (values.empty()) return kNaN;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// Sample standard deviation (n - 1); NaN below two values.
double sd_of(const std::vector<double>& values) {
  if (values.size() < 2) return kNaN;
  const double mean = mean_of(values);
  double squares = 0.0;
  for (double v : values)
    squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

// numpy.percentile's default (linear interpolation between the closest ranks) of sorted values.
double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return kNaN;
  const double position = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

std::vector<double> finite(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values)
    if (std::isfinite(v)) out.push_back(v);
  return out;
}

// The 2.5th and 97.5th percentiles of `statistic` over `resamples` bootstrap draws.
template <typename Draw>
std::pair<double, double> bootstrap_interval(std::int64_t resamples, const Draw& draw) {
  std::vector<double> statistics(static_cast<std::size_t>(resamples));
  for (double& statistic : statistics)
    statistic = draw();
  std::sort(statistics.begin(), statistics.end());
  return {percentile_sorted(statistics, 2.5), percentile_sorted(statistics, 97.5)};
}

double resampled_mean(const std::vector<double>& values, Random& random) {
  double sum = 0.0;
  for (std::size_t i = 0; i < values.size(); ++i)
    sum += values[random.below(values.size())];
  return sum / static_cast<double>(values.size());
}

// Two-sided p as scipy.stats.permutation_test gives it: twice the smaller tail, at most 1; a null
// statistic within a relative 1e-14 of the observed one counts as reaching it.
double max_magnitude(const std::vector<double>& values) {
  double largest = 0.0;
  for (double v : values)
    largest = std::max(largest, std::abs(v));
  return largest;
}

struct Tails {
  double observed = 0.0;
  double tolerance = 0.0;
  std::int64_t greater = 0, less = 0, total = 0;

  // `scale`: the largest magnitude among the values the statistics are sums of. A relabelling's
  // statistic equals the observed one up to the rounding of those sums, which is relative to the
  // values, not to the statistic: a difference of 2e-4 between values near 0.3 must not miss
  // its own labelling.
  Tails(double observed_statistic, double scale)
      : observed(observed_statistic),
        tolerance(1e-12 * std::max(std::abs(observed_statistic), scale)) {}
  void add(double statistic) {
    greater += statistic >= observed - tolerance;
    less += statistic <= observed + tolerance;
    ++total;
  }
  double p(bool exact) const {
    const double extra = exact ? 0.0 : 1.0;  // Monte Carlo: the observed labelling counts too
    const double tail = static_cast<double>(std::min(greater, less)) + extra;
    return std::min(1.0, 2.0 * tail / (static_cast<double>(total) + extra));
  }
};

// log of n choose k.
double log_choose(std::size_t n, std::size_t k) {
  return std::lgamma(static_cast<double>(n) + 1.0) - std::lgamma(static_cast<double>(k) + 1.0) -
         std::lgamma(static_cast<double>(n - k) + 1.0);
}

// Visits every k-subset of {0, ..., n-1} as a membership mask; returns false to stop.
template <typename Visit>
void for_each_subset(std::size_t n, std::size_t k, const Visit& visit) {
  std::vector<bool> mask(n, false);
  std::fill(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(k), true);
  do {
    visit(mask);
  } while (std::prev_permutation(mask.begin(), mask.end()));
}

// The inverse of the standard normal CDF (Acklam's rational approximation refined by one Halley
// step: accurate to about 1e-15 over (0, 1)).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

// The upper tail of chi^2 with an even number 2k of degrees of freedom, in closed form:
// exp(-x/2) sum_{i<k} (x/2)^i / i!.
double chi2_even_upper_tail(double x, std::size_t k) {
  const double half = x / 2.0;
  double term = 1.0, sum = 1.0;
  for (std::size_t i = 1; i < k; ++i) {
    term *= half / static_cast<double>(i);
    sum += term;
  }
  return std::exp(-half) * sum;
}

Comparison paired_comparison(std::vector<std::int64_t> seeds, std::vector<double> differences,
                             std::size_t n_a, std::size_t n_b, const InferenceOptions& options) {
  Comparison c;
  c.paired = true;
  c.seeds = std::move(seeds);
  c.differences = std::move(differences);
  c.n = c.differences.size();
  c.n_a = n_a;
  c.n_b = n_b;
  c.difference = mean_of(c.differences);
  Random random = Random::from_seed_sequence(options.seed, 1);
  std::tie(c.ci_low, c.ci_high) =
      bootstrap_interval(options.resamples, [&] { return resampled_mean(c.differences, random); });

  // Sign flips: the null that each seed's difference is as likely positive as negative.
  const std::size_t n = c.n;
  Tails tails(c.difference, max_magnitude(c.differences));
  const double flips = std::ldexp(1.0, static_cast<int>(n));
  c.exact = flips <= static_cast<double>(options.exact_limit);
  if (c.exact) {
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << n); ++mask) {
      double sum = 0.0;
      for (std::size_t i = 0; i < n; ++i)
        sum += (mask >> i & 1) ? -c.differences[i] : c.differences[i];
      tails.add(sum / static_cast<double>(n));
    }
  } else {
    Random flip = Random::from_seed_sequence(options.seed, 2);
    for (std::int64_t draw = 0; draw < options.exact_limit; ++draw) {
      double sum = 0.0;
      for (double d : c.differences)
        sum += flip.below(2) ? -d : d;
      tails.add(sum / static_cast<double>(n));
    }
  }
  c.p = c.p_holm = tails.p(c.exact);
  c.min_p = std::min(1.0, 2.0 / flips);
  c.seeds_for_power = seeds_for_power(c.difference, sd_of(c.differences), options.alpha);
  // Never fewer than the test needs to reach alpha at all: 2 / 2^n <= alpha.
  const auto least = static_cast<std::int64_t>(std::ceil(std::log2(2.0 / options.alpha)));
  if (c.seeds_for_power) c.seeds_for_power = std::max(*c.seeds_for_power, least);
  return c;
}

Comparison unpaired_comparison(const std::vector<double>& a, const std::vector<double>& b,
                               const InferenceOptions& options) {
  Comparison c;
  c.paired = false;
  c.n_a = a.size();
  c.n_b = b.size();
  c.n = a.size() + b.size();
  c.difference = mean_of(b) - mean_of(a);
  Random random = Random::from_seed_sequence(options.seed, 1);
  std::tie(c.ci_low, c.ci_high) = bootstrap_interval(
      options.resamples, [&] { return resampled_mean(b, random) - resampled_mean(a, random); });

  // Relabellings: the null that the labels A and B are exchangeable.
  std::vector<double> pooled = a;
  pooled.insert(pooled.end(), b.begin(), b.end());
  const double total = std::accumulate(pooled.begin(), pooled.end(), 0.0);
  const auto statistic_of_b_sum = [&](double b_sum) {
    return b_sum / static_cast<double>(b.size()) - (total - b_sum) / static_cast<double>(a.size());
  };
  // The observed statistic as the relabellings compute it, so that its own labelling matches.
  Tails tails(statistic_of_b_sum(std::accumulate(b.begin(), b.end(), 0.0)), max_magnitude(pooled));
  const double log_labellings = log_choose(c.n, b.size());
  c.exact = log_labellings <= std::log(static_cast<double>(options.exact_limit));
  if (c.exact) {
    for_each_subset(c.n, b.size(), [&](const std::vector<bool>& in_b) {
      double b_sum = 0.0;
      for (std::size_t i = 0; i < c.n; ++i)
        if (in_b[i]) b_sum += pooled[i];
      tails.add(statistic_of_b_sum(b_sum));
    });
  } else {
    Random shuffle = Random::from_seed_sequence(options.seed, 2);
    std::vector<double> order = pooled;
    for (std::int64_t draw = 0; draw < options.exact_limit; ++draw) {
      shuffle.shuffle(order);
      const double b_sum = std::accumulate(
          order.begin(), order.begin() + static_cast<std::ptrdiff_t>(b.size()), 0.0);
      tails.add(statistic_of_b_sum(b_sum));
    }
  }
  c.p = c.p_holm = tails.p(c.exact);
  c.min_p = std::min(1.0, 2.0 * std::exp(-log_labellings));
  // Seeds per condition: the variance of a difference of two means is twice a pooled one's.
  const double pooled_sd = std::sqrt((std::pow(sd_of(a), 2) + std::pow(sd_of(b), 2)) / 2.0);
  if (const auto per = seeds_for_power(c.difference, pooled_sd * std::sqrt(2.0), options.alpha)) {
    // Never fewer than the test needs to reach alpha at all: 2 / C(2n, n) <= alpha.
    std::int64_t least = 1;
    while (2.0 * std::exp(-log_choose(2 * static_cast<std::size_t>(least),
                                      static_cast<std::size_t>(least))) >
           options.alpha)
      ++least;
    c.seeds_for_power = std::max(*per, least);
  }
  return c;
}

}  // namespace

ConditionSummary summarise_condition(const std::vector<double>& values,
                                     const InferenceOptions& options) {
  ConditionSummary s;
  std::vector<double> kept = finite(values);
  s.n = kept.size();
  s.failed = values.size() - kept.size();
  if (kept.empty()) {
    s.mean = s.ci_low = s.ci_high = s.median = s.iqm = kNaN;
    return s;
  }
  s.mean = mean_of(kept);
  Random random = Random::from_seed_sequence(options.seed, 0);
  std::tie(s.ci_low, s.ci_high) =
      bootstrap_interval(options.resamples, [&] { return resampled_mean(kept, random); });
  std::sort(kept.begin(), kept.end());
  s.median = percentile_sorted(kept, 50.0);
  const std::size_t cut = kept.size() / 4;
  s.iqm = std::accumulate(kept.begin() + static_cast<std::ptrdiff_t>(cut),
                          kept.end() - static_cast<std::ptrdiff_t>(cut), 0.0) /
          static_cast<double>(kept.size() - 2 * cut);
  return s;
}

Comparison compare(const std::map<std::int64_t, double>& a, const std::map<std::int64_t, double>& b,
                   const InferenceOptions& options) {
  std::map<std::int64_t, double> finite_a, finite_b;
  for (const auto& [seed, value] : a)
    if (std::isfinite(value)) finite_a[seed] = value;
  for (const auto& [seed, value] : b)
    if (std::isfinite(value)) finite_b[seed] = value;
  PELAB_CHECK(!finite_a.empty() && !finite_b.empty(),
              "a comparison needs a finite value in each condition (A has {}, B has {})",
              finite_a.size(), finite_b.size());
  std::vector<std::int64_t> shared;
  std::vector<double> differences;
  for (const auto& [seed, value] : finite_a) {
    const auto other = finite_b.find(seed);
    if (other == finite_b.end()) continue;
    shared.push_back(seed);
    differences.push_back(other->second - value);
  }
  if (shared.size() >= 2 && shared.size() == finite_a.size() && shared.size() == finite_b.size())
    return paired_comparison(shared, differences, finite_a.size(), finite_b.size(), options);
  std::vector<double> va, vb;
  for (const auto& [seed, value] : finite_a)
    va.push_back(value);
  for (const auto& [seed, value] : finite_b)
    vb.push_back(value);
  return unpaired_comparison(va, vb, options);
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return p[i] < p[j]; });
  std::vector<double> adjusted(p.size());
  double running = 0.0;
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const double scaled = static_cast<double>(p.size() - rank) * p[order[rank]];
    running = std::max(running, std::min(1.0, scaled));
    adjusted[order[rank]] = running;
  }
  return adjusted;
}

void apply_holm(std::vector<Comparison>& comparisons) {
  std::vector<double> p;
  for (const Comparison& c : comparisons)
    p.push_back(c.p);
  const std::vector<double> adjusted = holm_adjust(p);
  for (std::size_t i = 0; i < comparisons.size(); ++i)
    comparisons[i].p_holm = adjusted[i];
}

std::optional<double> fisher_combined(const std::vector<double>& p) {
  double statistic = 0.0;
  std::size_t k = 0;
  for (double value : p) {
    if (!std::isfinite(value)) continue;
    statistic += -2.0 * std::log(std::max(value, std::numeric_limits<double>::min()));
    ++k;
  }
  if (k == 0) return std::nullopt;
  return chi2_even_upper_tail(statistic, k);
}

std::optional<std::int64_t> seeds_for_power(double effect, double sd, double alpha, double power) {
  if (!std::isfinite(effect) || !std::isfinite(sd) || effect == 0.0 || sd <= 0.0)
    return std::nullopt;
  const double z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power);
  return static_cast<std::int64_t>(std::ceil(std::pow(z * sd / effect, 2.0)));
}

std::string Comparison::text(const std::string& format, double factor) const {
  const auto value = [&](double v) { return fmt::format(fmt::runtime(format), v * factor); };
  std::string out = fmt::format("{}{} [95% CI {}, {}], p = {:.3g}", difference >= 0 ? "+" : "",
                                value(difference), value(ci_low), value(ci_high), p);
  if (min_p > 0.05) out += fmt::format(" (the smallest attainable p at this n is {:.3g})", min_p);
  out += fmt::format(", Holm p = {:.3g}", p_holm);
  if (resolved()) {
    out += fmt::format(": resolved at {}", sample_size());
  } else {
    out += fmt::format(": not resolved at {}", sample_size());
    if (seeds_for_power) out += fmt::format(" ({})", power_text());
  }
  return out;
}

std::string Comparison::power_text(const std::string& unit) const {
  if (!seeds_for_power) return "";
  const std::string count =
      *seeds_for_power > 1000 ? "over 1,000" : fmt::format("about {}", *seeds_for_power);
  return fmt::format("{} {}{} for 80% power", count, unit, paired ? "" : " a condition");
}

std::string Comparison::sample_size() const {
  // In the order the difference reads, B - A.
  return paired ? fmt::format("n = {}", n) : fmt::format("n = {} + {}, unpaired", n_b, n_a);
}

std::string Comparison::method() const {
  if (paired) {
    return fmt::format(
        "paired on {} seeds: mean of the per-seed differences, 95% percentile bootstrap CI over "
        "the seeds, two-sided sign-flip permutation test ({})",
        n, exact ? "every flip enumerated" : "Monte Carlo");
  }
  return fmt::format(
      "unpaired ({} and {} seeds, not the same seeds): difference of means, 95% percentile "
      "bootstrap CI resampling each condition, two-sided permutation test of the labels ({})",
      n_a, n_b, exact ? "every relabelling enumerated" : "Monte Carlo");
}

}  // namespace pelab::report
