#pragma once

// `pelab report`: aggregates the runs of an experiment folder (or one run folder) into
// results.csv, report.md and a self-contained report.html with gnuplot figures.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <torch/types.h>

#include "pelab/interfaces/probe.h"

namespace pelab {
class Registry;
}

namespace pelab::report {

/// Mean, standard error of the mean (sample standard deviation / sqrt(n)) and n over seeds.
/// Non-finite values (a probe's NaN, stored as null) are left out.
struct Statistic {
  double mean = 0.0;
  double sem = 0.0;
  std::size_t n = 0;
};
Statistic summarise(const std::vector<double>& values);

/// One finished run, read back from its folder.
struct RunRecord {
  std::string dir;
  std::int64_t seed = 0;
  /// Final metrics ("test/all/accuracy"), probe scalars ("probe/rsa/spearman") and the run's
  /// cost ("run/steps_per_second", "run/wall_seconds", "run/parameters", "run/threads"), from
  /// summary.
  std::map<std::string, double> values;
  /// Probe notes and errors, "probe: text".
  std::vector<std::string> notes;
  /// What computed it: "Cooperlake, AVX512, fp32" (the summary's compute record; "-" when older).
  std::string compute;
  /// The run it was copied from (`pelab run --reuse`), when it was not trained in its folder.
  std::string reused_from;
  /// The plugins that built it, "pe/learned" -> version (empty when its summary predates them).
  std::map<std::string, std::string> plugins;
};

/// One sweep point: its runs over seeds and their aggregate.
struct Point {
  std::string point;   // the sweep point as its summary names it ("default" without a sweep)
  std::string series;  // the curve it belongs to, e.g. "learned, normal std"
  std::string label;   // a short name, e.g. "learned, normal std=0.2" or "sinusoidal_nd"
  std::optional<double> init_scale;  // pe.init.std or a similar parameter, if it has one
  std::string scale_key;             // where the scale came from, e.g. "pe.init.std"
  std::string family;  // the PE description its series starts from, e.g. "learned, normal std"
  /// The configuration keys besides the scale that split its family into series, with this
  /// point's values, e.g. {"train.lr", "0.001"}: the other axes of a sweep.
  std::vector<std::pair<std::string, std::string>> varying;
  std::vector<RunRecord> runs;
  std::map<std::string, Statistic> stats;
};

/// A condition on a run's configuration (`pelab report --where task.dims=2`): its config.toml's
/// value at the dotted key equals `value`, as a reader is shown it ("learned", "0.2"); numbers
/// compare as numbers, so 2 and 2.0 match.
struct RunFilter {
  /// Not a configuration key: the run's own seed (`seed=2235,6068`: any of the seeds listed).
  static constexpr const char* kSeedKey = "seed";
  std::string key;
  std::string value;
  std::vector<std::int64_t> seeds;  ///< the seeds listed, for kSeedKey
  /// "key=value"; an Error says the form when it is not one.
  static RunFilter parse(const std::string& text);
  std::string text() const { return key + "=" + value; }
};

/// Every finished run under a folder, grouped into points.
struct Experiment {
  std::string dir;
  std::string name;
  std::string task;                  // the task plugin of the runs ("a, b" if they differ)
  std::vector<Point> points;         // series with a scale (by series, then scale), then the others
  std::vector<std::string> splits;   // in the order the metrics list them
  std::vector<std::string> skipped;  // unfinished or unreadable runs, with why
  /// What each probe declared as its headline scalars (their probe records), by probe output name.
  std::map<std::string, std::vector<Headline>> headlines;
  /// The probes in the order the runs' manifests list them.
  std::vector<std::string> probe_order;
  /// What tells apart the probes of a plugin that the manifest lists more than once, by output
  /// name ("connectivity_2" -> "relation = functional_connectivity"); absent for the others.
  std::map<std::string, std::string> probe_settings;
  /// E.g. an init plugin that could not be loaded to find its scale.
  std::vector<std::string> warnings;
  /// The filters the runs were chosen by, and how many finished runs they left out.
  std::vector<RunFilter> filters;
  std::size_t filtered_out = 0;
};

/// Reads `dir`: a run folder or an experiment folder
/// (ExperimentFolder::run_folders). Throws pelab::Error when it holds no run. With a registry, each
/// point's init scale is the parameter its plugins' schemas mark (ParamSpec::init_scale);
/// without one, no point has a scale.
Experiment collect(const std::string& dir, Registry* registry = nullptr);

/// Reads several folders side by side, as one report compares them. Each point is named
/// "<experiment>/<point>"; the points of different experiments form separate series, labelled
/// with the experiment's name, while the same experiment in two folders (a sweep sharded over
/// machines) shares its points. A seed that two folders hold for the same point counts once.
/// With filters, only the runs that meet all of them; an Error names the values a filter's key
/// takes when no run meets it.
Experiment collect(const std::vector<std::string>& dirs, Registry* registry = nullptr,
                   const std::vector<RunFilter>& filters = {});

/// Whether a key is a probe's p-value (`probe/<name>/p_value`, `<x>_p_value`, per block too):
/// combined over seeds by Fisher's method in the report, never averaged.
bool is_p_value(const std::string& key);
/// A point's p-values of one probe scalar over its seeds, combined (Fisher's method) and counted.
struct CombinedP {
  double fisher = 1.0;  // one p for the seeds' independent tests
  std::size_t below_0_05 = 0;
  std::size_t seeds = 0;
};
/// The combination of `key`'s finite values over the point's seeds; nullopt when it has none.
std::optional<CombinedP> combined_p(const Point& point, const std::string& key);
/// "Fisher 0.0144 (1 of 2 < 0.05)": combined_p as the report shows it; "-" when it has none.
std::string combined_p_text(const Point& point, const std::string& key);

/// The splits a model is judged on: every split but the training one, unless it is the only one.
std::vector<std::string> evaluation_splits(const Experiment& experiment);

/// How the report shows one of the metrics that the tasks' objectives evaluate.
struct MetricDisplay {
  std::string metric;   // as the run's metrics name it: "accuracy", "mse", "r"
  std::string title;    // e.g. "Accuracy (%)"
  std::string column;   // a short column name, e.g. "acc."
  double factor = 1.0;  // 100 for a percentage
  std::string format;   // fmt format of one value, e.g. "{:.1f}"
};

/// The headline metrics that some point has a final value for, in the order accuracy
/// (classification), mse and r (masked-token regression); accuracy when there are none.
std::vector<MetricDisplay> headline_metrics(const Experiment& experiment);

/// The groups of a split ("all", "binary", ...) that some point has `metric` for: "all" first,
/// then the others in the order their keys sort.
std::vector<std::string> metric_groups(const Experiment& experiment, const std::string& split,
                                       const std::string& metric);

/// results.csv: point,metric,mean,sem,n,series,init_scale for every metric, probe scalar and cost.
std::string results_csv(const Experiment& experiment);

/// The ground truth the figures draw: the task's token coordinates, or undefined.
struct Geometry {
  torch::Tensor coordinates;  // [N, D] float64
  std::vector<std::string> axis_names;
  torch::Tensor communities;  // [N] int64 (modules, networks), or undefined
  std::vector<std::string> community_names;
};

/// One figure: a gnuplot script (data inline) and the PNG it draws.
struct Figure {
  std::string name;     // file stem, e.g. "accuracy"
  std::string caption;  // one line
  std::string script;   // gnuplot commands, with `set output` to <name>.png
};

/// The figures of an experiment: each headline metric and the probe scalars vs init scale, PE
/// similarity heatmaps beside the ground truth, 2D PCA embeddings of the learned PEs with the true
/// grid drawn over them, training curves.
std::vector<Figure> make_figures(const Experiment& experiment, const Geometry& geometry);

struct ReportOptions {
  /// The gnuplot program; empty: $PELAB_GNUPLOT or `gnuplot`.
  std::string gnuplot;
  /// The init scale each series' other scales are compared with (InferenceOptions).
  std::optional<double> reference_scale;
  /// Only the runs that meet these (`--where`), e.g. one half of a sweep, its tests adjusted
  /// among that half's comparisons alone.
  std::vector<RunFilter> where;
};

/// What write_report produced.
struct ReportResult {
  std::string dir;
  std::size_t runs = 0;
  std::size_t points = 0;
  bool figures_drawn = false;
  /// Figures whose gnuplot script failed (each named in warnings): a defect of the report, so
  /// `pelab report` exits non-zero on them after writing everything else.
  std::size_t figures_failed = 0;
  /// The plain-text tables of the headline metrics (accuracy; or MSE and r), for the terminal.
  std::string metrics_table;
  /// The comparisons in one line each (comparisons.h), for the terminal; empty when none.
  std::string comparisons_text;
  std::vector<std::string> files;
  std::vector<std::string> warnings;
};

/// collect + results.csv + figures/ (*.gp, *.png) + report.md + report.html in `dir`. The
/// registry, if given, builds the task of the first run to draw the ground truth.
ReportResult write_report(const std::string& dir, Registry* registry,
                          const ReportOptions& options = {});

/// The report of several folders side by side (collect(dirs)), written in `out_dir`, which is
/// created if needed; the runs' folders are only read.
ReportResult write_report(const std::vector<std::string>& dirs, const std::string& out_dir,
                          Registry* registry, const ReportOptions& options = {});

/// The scalars that stand for a probe in tables and figures: those it declared (that some point
/// has), else its first scalar that is not per block.
std::vector<Headline> headlines_of(const Experiment& experiment, const std::string& probe,
                                   const std::set<std::string>& scalars);

/// A probe as a reader knows it: its output name, with the settings that tell it apart from
/// another probe of its plugin ("connectivity_2 (relation = functional_connectivity)").
std::string probe_title(const Experiment& experiment, const std::string& probe);

/// The probes that some point has scalars for (in the manifest's order, then any others) with
/// their scalars.
std::vector<std::pair<std::string, std::set<std::string>>> probes_of(const Experiment& experiment);

/// A configuration value as a number ("0.001", "128"), or nothing when it is not one ("adamw").
std::optional<double> number_of(const std::string& value);

/// Base64 (RFC 4648), for the images embedded in report.html.
std::string base64(const std::string& bytes);

}  // namespace pelab::report
