#pragma once

// The report's inference over an experiment's points: within each series, every init scale
// against the series' smallest (B - A, paired on seeds), for each headline metric on each
// evaluation split, Holm-adjusted within that table; per point, its summary (mean, bootstrap CI,
// median, IQM, failed seeds); and where the points also differ in a dataset instance (a task key
// that ends in "seed", e.g. task.network_seed), the same comparison with the instance as the unit
// beside the spread between instances and between seeds. Written to comparisons.csv and the
// report's "Comparisons" and "Dataset instances" sections.

#include <string>
#include <vector>

#include "report/inference.h"
#include "report/report.h"

namespace pelab::report {

/// One comparison of a table: point B against point A on one metric.
struct PointComparison {
  std::string metric;            ///< "test/all/mse"
  std::string a, b;              ///< the points' labels
  std::string a_point, b_point;  ///< the points as folders name them
  Comparison comparison;
};

/// The comparisons of one metric on one split, Holm-adjusted together.
struct ComparisonTable {
  std::string metric;  ///< "test/all/mse"
  MetricDisplay display;
  std::string split;
  std::vector<PointComparison> rows;
};

/// Scale B against scale A of one family over dataset instances.
struct InstanceComparison {
  std::string metric;
  MetricDisplay display;
  std::string family;                   ///< the series without the instance key
  std::string instance_key;             ///< "task.network_seed"
  std::string a, b;                     ///< the scales compared, as labels
  std::vector<std::string> instances;   ///< the instance values, in order
  std::vector<double> instance_means;   ///< per instance, mean over seeds of B - A
  std::vector<std::size_t> instance_n;  ///< per instance, the seeds paired
  Comparison by_instance;  ///< the instance as the unit: sign flip over the instance means
  Comparison pooled;       ///< every (instance, seed) pair as one unit (ignores the nesting)
  double between_instance_sd = 0.0;  ///< sd of the instance means
  double within_instance_sd = 0.0;   ///< pooled sd of the per-seed differences within instances
};

struct Inference {
  InferenceOptions options;  // as the tables were computed
  std::vector<ComparisonTable> tables;
  std::vector<InstanceComparison> instances;
};

/// What the report tests; nothing when no series has two scales.
Inference infer(const Experiment& experiment, const std::vector<MetricDisplay>& metrics,
                const InferenceOptions& options = {});

/// Two points to compare by name (a point's label or folder name): B - A.
struct NamedPair {
  std::string a;
  std::string b;
};

/// Comparisons asked for by name, on every headline metric and evaluation split and on the probes'
/// headline scalars: one table per metric with a row per pair that has it, Holm-adjusted over the
/// pairs asked for together (one pair: p itself); an Error that lists the points when a name
/// matches none.
std::vector<ComparisonTable> compare_named(const Experiment& experiment,
                                           const std::vector<MetricDisplay>& metrics,
                                           const std::vector<NamedPair>& pairs,
                                           const InferenceOptions& options = {});

/// comparisons.csv: one row per comparison and per instance comparison.
std::string comparisons_csv(const Inference& inference);

/// Every comparison in one line ("test/all/mse: learned, normal std=2 - ...=0.2: +0.03 [95% CI
/// ...]..."), for the terminal.
std::string comparisons_text(const Inference& inference);

/// Whether `key` names a dataset instance: a task parameter whose name ends in "seed".
bool is_instance_key(const std::string& key);

}  // namespace pelab::report
