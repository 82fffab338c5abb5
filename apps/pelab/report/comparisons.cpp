#include "report/comparisons.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"

namespace pelab::report {

namespace {

std::map<std::int64_t, double> by_seed(const Point& point, const std::string& key) {
  std::map<std::int64_t, double> values;
  for (const RunRecord& run : point.runs) {
    const auto it = run.values.find(key);
    if (it != run.values.end()) values[run.seed] = it->second;
  }
  return values;
}

bool has_values(const Point& point, const std::string& key) {
  const auto values = by_seed(point, key);
  return std::any_of(values.begin(), values.end(),
                     [](const auto& entry) { return std::isfinite(entry.second); });
}

double sample_sd(const std::vector<double>& values) {
  if (values.size() < 2) return std::nan("");
  double mean = 0.0;
  for (double v : values)
    mean += v / static_cast<double>(values.size());
  double squares = 0.0;
  for (double v : values)
    squares += (v - mean) * (v - mean);
  return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

std::string instance_family(const Point& point, std::string* instance_key, std::string* instance) {
  std::string family = point.family;
  for (const auto& [key, value] : point.varying) {
    if (is_instance_key(key)) {
      *instance_key = key;
      *instance = value;
    } else {
      family += fmt::format(", {}={}", key, value);
    }
  }
  return family;
}

// Scale B against scale A of one family, over the instances holding both.
std::optional<InstanceComparison> compare_over_instances(
    const std::string& key, const std::string& family, const std::string& instance_key,
    const std::map<std::string, std::map<double, const Point*>>& instances, double scale_a,
    double scale_b, const InferenceOptions& options) {
  InstanceComparison out;
  out.metric = key;
  out.family = family;
  out.instance_key = instance_key;
  out.a = fmt::format("{}={}", family, format_number(scale_a));
  out.b = fmt::format("{}={}", family, format_number(scale_b));
  std::map<std::int64_t, double> zeros, means, pooled_a, pooled_b;
  std::int64_t pair = 0;
  double within_squares = 0.0;
  std::size_t within_df = 0;
  for (const auto& [instance, scales] : instances) {
    const auto a = scales.find(scale_a), b = scales.find(scale_b);
    if (a == scales.end() || b == scales.end()) continue;
    const auto va = by_seed(*a->second, key), vb = by_seed(*b->second, key);
    std::vector<double> differences;
    for (const auto& [seed, value] : va) {
      const auto other = vb.find(seed);
      if (other == vb.end() || !std::isfinite(value) || !std::isfinite(other->second)) continue;
      differences.push_back(other->second - value);
      pooled_a[pair] = value;
      pooled_b[pair] = other->second;
      ++pair;
    }
    if (differences.empty()) continue;
    double mean = 0.0;
    for (double d : differences)
      mean += d / static_cast<double>(differences.size());
    const auto index = static_cast<std::int64_t>(out.instances.size());
    out.instances.push_back(instance);
    out.instance_means.push_back(mean);
    out.instance_n.push_back(differences.size());
    zeros[index] = 0.0;
    means[index] = mean;
    if (differences.size() > 1) {
      within_squares +=
          std::pow(sample_sd(differences), 2) * static_cast<double>(differences.size() - 1);
      within_df += differences.size() - 1;
    }
  }
  if (out.instances.size() < 2) return std::nullopt;
  out.by_instance = compare(zeros, means, options);
  out.pooled = compare(pooled_a, pooled_b, options);
  out.between_instance_sd = sample_sd(out.instance_means);
  out.within_instance_sd =
      within_df > 0 ? std::sqrt(within_squares / static_cast<double>(within_df)) : std::nan("");
  return out;
}

void add_instance_comparisons(const Experiment& experiment, const std::string& key,
                              const MetricDisplay& display, const InferenceOptions& options,
                              Inference& inference) {
  // family -> instance -> scale -> point
  std::map<std::string, std::map<std::string, std::map<double, const Point*>>> families;
  std::map<std::string, std::string> key_of_family;
  for (const Point& point : experiment.points) {
    if (!point.init_scale || !has_values(point, key)) continue;
    std::string instance_key, instance;
    const std::string family = instance_family(point, &instance_key, &instance);
    if (instance_key.empty()) continue;
    families[family][instance][*point.init_scale] = &point;
    key_of_family[family] = instance_key;
  }
  std::vector<InstanceComparison> found;
  for (const auto& [family, instances] : families) {
    std::set<double> scales;
    for (const auto& [instance, by_scale] : instances)
      for (const auto& [scale, point] : by_scale)
        scales.insert(scale);
    if (scales.size() < 2) continue;
    const double reference = *scales.begin();
    for (auto it = std::next(scales.begin()); it != scales.end(); ++it) {
      if (auto comparison = compare_over_instances(key, family, key_of_family.at(family), instances,
                                                   reference, *it, options)) {
        comparison->display = display;
        found.push_back(std::move(*comparison));
      }
    }
  }
  // Holm over the instance-level tests of one metric and split.
  std::vector<Comparison> tests;
  for (const auto& each : found)
    tests.push_back(each.by_instance);
  apply_holm(tests);
  for (std::size_t i = 0; i < found.size(); ++i) {
    found[i].by_instance.p_holm = tests[i].p_holm;
    // The pooled pairs are a companion, not a test of the table: their p stays unadjusted.
    inference.instances.push_back(std::move(found[i]));
  }
}

std::string csv_row(const std::string& kind, const std::string& metric, const std::string& a,
                    const std::string& b, const Comparison& c) {
  // n is what the test rests on (the pairs, or both points' seeds together); n_b and n_a each
  // point's seeds, as an unpaired comparison is written ("n = 2 + 3, unpaired").
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", kind, csv_field(metric),
                     csv_field(a), csv_field(b), c.paired ? "paired" : "unpaired", c.n,
                     format_number(c.difference), format_number(c.ci_low), format_number(c.ci_high),
                     format_number(c.p), format_number(c.p_holm), format_number(c.min_p),
                     c.exact ? "exact" : "monte-carlo",
                     c.seeds_for_power ? std::to_string(*c.seeds_for_power) : "",
                     c.paired ? c.n : c.n_b, c.paired ? c.n : c.n_a);
}

const Point* find_point(const Experiment& experiment, const std::string& name) {
  for (const Point& point : experiment.points) {
    if (point.label == name || point.point == name) return &point;
  }
  return nullptr;
}

}  // namespace

bool is_instance_key(const std::string& key) {
  const std::string suffix = "seed";
  return key.rfind("task.", 0) == 0 && key.size() > suffix.size() &&
         key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace {

bool same_scale(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
}

// Each row's Holm p over the rows of its table: one family of comparisons.
void adjust_holm(ComparisonTable& table) {
  std::vector<Comparison> tests;
  for (const auto& row : table.rows)
    tests.push_back(row.comparison);
  apply_holm(tests);
  for (std::size_t i = 0; i < tests.size(); ++i)
    table.rows[i].comparison.p_holm = tests[i].p_holm;
}

// Within each series, every init scale against the series' reference (options.reference_scale
// where the series has it, else its smallest), on `key`; Holm over the table.
ComparisonTable scale_comparisons(const Experiment& experiment, const std::string& key,
                                  const MetricDisplay& display, const std::string& split,
                                  const InferenceOptions& options) {
  ComparisonTable table{key, display, split, {}};
  // Points come by series, then scale: the first of a series with a scale is its smallest.
  std::map<std::string, const Point*> reference;
  for (const Point& point : experiment.points) {
    if (!point.init_scale || !has_values(point, key)) continue;
    const auto [it, first] = reference.emplace(point.series, &point);
    if (!first && options.reference_scale &&
        same_scale(*point.init_scale, *options.reference_scale))
      it->second = &point;
  }
  for (const Point& point : experiment.points) {
    if (!point.init_scale || !has_values(point, key)) continue;
    const Point& a = *reference.at(point.series);
    if (&a == &point) continue;
    table.rows.push_back({key, a.label, point.label, a.point, point.point,
                          compare(by_seed(a, key), by_seed(point, key), options)});
  }
  adjust_holm(table);
  return table;
}

// The probes' headline scalars, displayed as the task's metrics are (a p-value is a test of its
// own, not a quantity to compare): does a condition change what the PE learned?
std::vector<MetricDisplay> probe_headlines(const Experiment& experiment) {
  std::vector<MetricDisplay> displays;
  for (const auto& [probe, scalars] : probes_of(experiment)) {
    for (const Headline& headline : headlines_of(experiment, probe, scalars)) {
      if (headline.scalar.rfind("p_value", 0) == 0) continue;
      const std::string key = fmt::format("probe/{}/{}", probe, headline.scalar);
      displays.push_back({key,
                          fmt::format("Probe `{}` {}{}", probe, headline.scalar,
                                      headline.better == Better::kHigher  ? " (higher is better)"
                                      : headline.better == Better::kLower ? " (lower is better)"
                                                                          : ""),
                          headline.scalar, 1.0, "{:.4f}"});
    }
  }
  return displays;
}

}  // namespace

Inference infer(const Experiment& experiment, const std::vector<MetricDisplay>& metrics,
                const InferenceOptions& options) {
  Inference inference;
  inference.options = options;
  for (const MetricDisplay& metric : metrics) {
    for (const std::string& split : evaluation_splits(experiment)) {
      const std::string key = split + "/all/" + metric.metric;
      ComparisonTable table = scale_comparisons(experiment, key, metric, split, options);
      if (!table.rows.empty()) inference.tables.push_back(std::move(table));
      add_instance_comparisons(experiment, key, metric, options, inference);
    }
  }
  for (const MetricDisplay& display : probe_headlines(experiment)) {
    ComparisonTable table = scale_comparisons(experiment, display.metric, display, "", options);
    if (!table.rows.empty()) inference.tables.push_back(std::move(table));
  }
  return inference;
}

std::vector<ComparisonTable> compare_named(const Experiment& experiment,
                                           const std::vector<MetricDisplay>& metrics,
                                           const std::vector<NamedPair>& pairs,
                                           const InferenceOptions& options) {
  std::vector<std::pair<const Point*, const Point*>> points;
  for (const NamedPair& pair : pairs) {
    const Point* pa = find_point(experiment, pair.a);
    const Point* pb = find_point(experiment, pair.b);
    if (pa == nullptr || pb == nullptr) {
      std::vector<std::string> names;
      for (const Point& point : experiment.points)
        names.push_back(fmt::format("'{}' ({})", point.label, point.point));
      throw Error(fmt::format("--compare: no point named '{}' in {}; its points are {}",
                              pa == nullptr ? pair.a : pair.b, experiment.dir,
                              fmt::join(names, ", ")));
    }
    // Twice the same comparison would count twice in Holm's family.
    PELAB_CHECK(std::find(points.begin(), points.end(), std::make_pair(pa, pb)) == points.end(),
                "--compare: '{}' against '{}' is asked for twice; ask for each comparison once",
                pair.b, pair.a);
    points.emplace_back(pa, pb);
  }
  // One table per metric, a row per pair that has it; the pairs asked for together are one
  // family, Holm-adjusted within each metric (one pair: p itself).
  auto table_of = [&](const std::string& key, const MetricDisplay& display,
                      const std::string& split) {
    ComparisonTable table{key, display, split, {}};
    for (const auto& [pa, pb] : points) {
      if (!has_values(*pa, key) || !has_values(*pb, key)) continue;
      table.rows.push_back({key, pa->label, pb->label, pa->point, pb->point,
                            compare(by_seed(*pa, key), by_seed(*pb, key), options)});
    }
    adjust_holm(table);
    return table;
  };
  std::vector<ComparisonTable> tables;
  for (const MetricDisplay& metric : metrics) {
    for (const std::string& split : evaluation_splits(experiment)) {
      ComparisonTable table = table_of(split + "/all/" + metric.metric, metric, split);
      if (!table.rows.empty()) tables.push_back(std::move(table));
    }
  }
  for (const MetricDisplay& display : probe_headlines(experiment)) {
    ComparisonTable table = table_of(display.metric, display, "");
    if (!table.rows.empty()) tables.push_back(std::move(table));
  }
  return tables;
}

std::string comparisons_csv(const Inference& inference) {
  std::string csv =
      "kind,metric,a,b,pairing,n,difference,ci_low,ci_high,p,p_holm,min_p,permutations,"
      "seeds_for_power,n_b,n_a\n";
  for (const auto& table : inference.tables) {
    for (const auto& row : table.rows)
      csv += csv_row("points", row.metric, row.a, row.b, row.comparison);
  }
  for (const auto& each : inference.instances) {
    csv += csv_row("instances:" + each.instance_key, each.metric, each.a, each.b, each.by_instance);
    csv += csv_row("instance-seed-pairs:" + each.instance_key, each.metric, each.a, each.b,
                   each.pooled);
  }
  return csv;
}

std::string comparisons_text(const Inference& inference) {
  std::string text;
  for (const auto& table : inference.tables) {
    for (const auto& row : table.rows) {
      text += fmt::format("{}: {} - {}: {}\n", row.metric, row.b, row.a,
                          row.comparison.text(table.display.format, table.display.factor));
    }
  }
  for (const auto& each : inference.instances) {
    text += fmt::format("{}: {} - {} over {} {}s (the instance as the unit): {}\n", each.metric,
                        each.b, each.a, each.instances.size(), each.instance_key,
                        each.by_instance.text(each.display.format, each.display.factor));
  }
  return text;
}

}  // namespace pelab::report
