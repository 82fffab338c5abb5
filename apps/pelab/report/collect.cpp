// Reading an experiment's run folders back and aggregating them over seeds.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/base/plugin_kind.h"
#include "pelab/config/sections.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/probing.h"
#include "pelab/runs/run_folder.h"
#include "report.h"

namespace pelab::report {

namespace fs = boost::filesystem;

Statistic summarise(const std::vector<double>& all) {
  std::vector<double> values;
  for (double v : all) {
    if (std::isfinite(v)) values.push_back(v);
  }
  Statistic s;
  s.n = values.size();
  if (values.empty()) return s;
  // Seeds that agree exactly (a frozen PE's probes) have that value and no spread, not a sum's
  // rounding of it (an SEM of 9e-17).
  if (std::all_of(values.begin(), values.end(), [&](double v) { return v == values.front(); })) {
    s.mean = values.front();
    return s;
  }
  for (double v : values)
    s.mean += v;
  s.mean /= static_cast<double>(s.n);
  if (s.n > 1) {
    double squares = 0.0;
    for (double v : values)
      squares += (v - s.mean) * (v - s.mean);
    s.sem = std::sqrt(squares / static_cast<double>(s.n - 1)) / std::sqrt(static_cast<double>(s.n));
  }
  return s;
}

namespace {

// What a point's configuration says about its PE: the series it belongs to and its init scale.
struct PEDescription {
  std::string base;  // "learned, normal std" or "sinusoidal_nd"
  std::optional<double> scale;
  std::string scale_key;
  /// Every parameter that a schema marks as an init scale, the PE's own and its nested plugins',
  /// in schema order ({"pe.positions_init.std", 0.2}, {"pe.generators_init.std", 2.0}): the
  /// report takes the one its points vary (name_series).
  std::vector<std::pair<std::string, double>> scale_candidates;
  std::vector<std::pair<std::string, std::string>> nested;  // {"init", "normal"}
  std::map<std::string, std::string> entries;               // the whole config, flattened
  std::vector<std::string> probes;  // as the run names their outputs, in order
  std::string task;                 // the task plugin
};

// Every parameter of the plugin table at `prefix` of a run's configuration that its schema marks
// as the init scale, as {its dotted key, value}, nested plugin parameters (a PE's initializers)
// included, in schema order. A plugin that is not on the plugin path adds a warning and marks
// nothing.
void marked_scales(const StoredConfig& config, const std::string& prefix, PluginKind kind,
                   Registry& registry, std::set<std::string>& warnings,
                   std::vector<std::pair<std::string, double>>& out) {
  const auto name = config.shown(prefix + ".plugin");
  if (!name) return;
  const ParamSchema* schema = nullptr;
  try {
    schema = &registry.schema(kind, *name);
  } catch (const Error& e) {
    warnings.insert(
        fmt::format("the {} plugin '{}' could not be loaded, so its init scale (if it "
                    "has one) forms no series: {}",
                    to_string(kind), *name, e.what()));
    return;
  }
  // A run's stored configuration is resolved: the marked parameter is spelt out, defaults included.
  if (const ParamSpec* spec = schema->init_scale()) {
    const std::string key = prefix + "." + spec->name;
    if (const auto value = config.number(key)) out.emplace_back(key, *value);
  }
  for (const ParamSpec& spec : schema->specs()) {
    if (spec.type == ParamType::kPlugin)
      marked_scales(config, prefix + "." + spec.name, spec.plugin_kind, registry, warnings, out);
  }
}

// The plugins nested directly in the PE's table, in key order, as {key, plugin}: {"init",
// "normal"} for a learned PE.
std::vector<std::pair<std::string, std::string>> nested_pe_plugins(const StoredConfig& config) {
  std::vector<std::pair<std::string, std::string>> plugins;
  const std::string prefix = "pe.", suffix = ".plugin";
  for (const auto& [key, value] : config.values) {
    if (key.size() <= prefix.size() + suffix.size() || key.rfind(prefix, 0) != 0 ||
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string middle =
        key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
    if (middle.find('.') == std::string::npos) plugins.emplace_back(middle, value.shown);
  }
  return plugins;
}

PEDescription describe_pe(const StoredConfig& config, Registry* registry,
                          std::set<std::string>& warnings) {
  PEDescription description;
  for (const auto& [key, value] : config.values)
    description.entries[key] = value.shown;
  description.task = config.shown("task.plugin").value_or("");
  std::map<std::string, int> seen;
  for (const auto& plugin : config.probe_plugins())
    description.probes.push_back(probe_output_name(plugin, ++seen[plugin]));
  const bool has_pe =
      std::any_of(config.values.begin(), config.values.end(),
                  [](const auto& entry) { return entry.first.rfind("pe.", 0) == 0; });
  description.base = has_pe ? config.shown("pe.plugin").value_or("?") : "none";
  if (!has_pe) return description;
  description.nested = nested_pe_plugins(config);
  if (registry != nullptr) {
    marked_scales(config, "pe", PluginKind::kPositionalEncoding, *registry, warnings,
                  description.scale_candidates);
  }
  return description;
}

// Names a point's series once its init scale is chosen (`scale_key`, one of its candidates, or
// "" for none): the PE and its nested plugin ("learned, normal std"); where the PE nests several
// (rope_mixed: positions_init, frequencies_init), the one that holds the scale, by its key
// ("rope_mixed, positions_init normal std"), or all of them by key when none does.
void name_series(PEDescription& description, const std::string& scale_key) {
  for (const auto& [key, value] : description.scale_candidates) {
    if (key != scale_key) continue;
    description.scale_key = key;
    description.scale = value;
  }
  for (const auto& [key, plugin] : description.nested) {
    if (description.nested.size() == 1) {
      description.base += ", " + plugin;
    } else if (!description.scale || description.scale_key.rfind("pe." + key + ".", 0) == 0) {
      description.base += fmt::format(", {} {}", key, plugin);
    }
  }
  // "learned, normal std": the scale's own name closes the series' name.
  if (description.scale)
    description.base += " " + description.scale_key.substr(description.scale_key.rfind('.') + 1);
}

// The splits in the order the run's metrics first list them.
std::vector<std::string> splits_of(const std::string& run_dir) {
  std::vector<std::string> splits;
  for (const MetricRow& row : RunFolder(run_dir).read_metrics()) {
    if (row.split != "train_epoch" &&
        std::find(splits.begin(), splits.end(), row.split) == splits.end())
      splits.push_back(row.split);
  }
  return splits;
}

template <typename T>
void append_once(std::vector<T>& list, const T& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

// A run's record for the report: its final metrics, its cost and its probes' scalars, with the
// notes and errors its probes recorded; the probes' headlines go to `headlines` (the first run that
// declares a probe's headlines names them).
RunRecord run_record(const RunFolder& folder, const RunSummary& summary,
                     std::map<std::string, std::vector<Headline>>& headlines) {
  RunRecord run;
  run.dir = folder.dir();
  run.seed = summary.seed;
  for (const auto& [key, value] : summary.final_metrics)
    run.values[key] = value;
  // What the run cost, beside its results: comparable between points only when their runs
  // had the machine to the same degree (a summary records the threads, not the load).
  run.values["run/steps_per_second"] = summary.steps_per_second;
  run.values["run/wall_seconds"] = summary.wall_seconds;
  run.values["run/parameters"] = static_cast<double>(summary.parameters);
  run.values["run/threads"] = static_cast<double>(summary.threads);
  run.compute = summary.compute.short_text();
  run.reused_from = summary.reused_from;
  run.plugins = summary.plugins;
  for (const auto& [probe, scalars] : summary.probes) {
    for (const auto& [name, value] : scalars)
      run.values[fmt::format("probe/{}/{}", probe, name)] = value;
    const auto record = folder.read_probe_record(probe);
    if (!record) continue;
    if (!headlines.count(probe) && !record->headlines.empty()) headlines[probe] = record->headlines;
    if (!record->note.empty()) run.notes.push_back(fmt::format("{} note: {}", probe, record->note));
    if (!record->error.empty())
      run.notes.push_back(fmt::format("{} error: {}", probe, record->error));
  }
  return run;
}

// For each probe of a plugin that `config` lists more than once, the settings in which it differs
// from the others of its plugin ("relation = functional_connectivity"; "(default)" where it leaves
// a key out), by output name.
std::map<std::string, std::string> probe_settings(const StoredConfig& config) {
  const std::vector<std::string> plugins = config.probe_plugins();
  std::map<std::string, std::vector<std::size_t>> tables_of;  // plugin -> its [[probe]] indices
  for (std::size_t i = 0; i < plugins.size(); ++i)
    tables_of[plugins[i]].push_back(i);
  std::map<std::string, std::string> settings;
  for (const auto& [plugin, tables] : tables_of) {
    if (tables.size() < 2) continue;
    std::set<std::string> keys;  // every key any of them sets
    for (const std::size_t i : tables) {
      const std::string prefix = fmt::format("probe.{}.", i);
      for (auto it = config.values.lower_bound(prefix);
           it != config.values.end() && it->first.rfind(prefix, 0) == 0; ++it)
        keys.insert(it->first.substr(prefix.size()));
    }
    keys.erase("plugin");
    std::vector<std::vector<std::string>> parts(tables.size());
    for (const auto& key : keys) {
      std::vector<std::string> values;
      for (const std::size_t i : tables)
        values.push_back(config.shown(fmt::format("probe.{}.{}", i, key)).value_or("(default)"));
      if (std::all_of(values.begin(), values.end(), [&](const auto& v) { return v == values[0]; }))
        continue;
      for (std::size_t j = 0; j < tables.size(); ++j)
        parts[j].push_back(key + " = " + values[j]);
    }
    for (std::size_t j = 0; j < tables.size(); ++j) {
      if (!parts[j].empty())
        settings[probe_output_name(plugin, static_cast<int>(j) + 1)] =
            fmt::format("{}", fmt::join(parts[j], ", "));
    }
  }
  return settings;
}

// Reads the finished runs of one or more experiment folders into an Experiment: the runs grouped
// by sweep point, the points labelled and grouped into series, each point's statistics over its
// seeds, and the points in report order.
class Collector {
 public:
  Collector(const std::vector<std::string>& dirs, Registry* registry,
            const std::vector<RunFilter>& filters)
      : registry_(registry), combined_(dirs.size() > 1) {
    experiment_.dir = fmt::format("{}", fmt::join(dirs, ", "));
    experiment_.filters = filters;
  }

  // One run folder of the experiment folder `folder`.
  void add_run(const std::string& run_dir, const std::string& folder) {
    const RunFolder run_folder(run_dir);
    const auto summary = run_folder.read_summary();
    if (!summary) {
      experiment_.skipped.push_back(
          fmt::format("{}: not finished (no readable {})", run_dir, RunFolder::kSummaryFile));
      return;
    }
    if (!summary->finished()) {
      experiment_.skipped.push_back(fmt::format("{}: {}", run_dir, summary->status));
      return;
    }
    if (!experiment_.filters.empty() &&
        !meets_filters(run_folder.read_stored_config(), summary->seed)) {
      ++experiment_.filtered_out;
      return;
    }
    const std::string experiment_name =
        summary->experiment.empty() ? fs::path(folder).filename().string() : summary->experiment;
    // With several folders a point is "<experiment>/<point>", as the folders lie under an output
    // folder: the same experiment in two folders (shards run on two machines) shares its points.
    std::string point = summary->point.empty() ? "default" : summary->point;
    if (combined_) point = experiment_name + "/" + point;
    const auto [seen, first] = seen_seeds_.emplace(std::make_pair(point, summary->seed), run_dir);
    if (!first) {
      experiment_.skipped.push_back(fmt::format(
          "{}: the same point and seed as {}, which is counted (a seed counts once in a mean)",
          run_dir, seen->second));
      return;
    }
    run_folder.check_config_unchanged(*summary);
    RunRecord run = run_record(run_folder, *summary, experiment_.headlines);
    append_once(experiment_names_, experiment_name);
    if (!by_point_.count(point)) {
      order_.push_back(point);
      by_point_[point].point = point;
      for (auto& [probe, text] : probe_settings(run_folder.read_stored_config()))
        experiment_.probe_settings.emplace(probe, text);
      // Resolved where the plugins are at hand: a run written before a plugin gained a key and one
      // written after are then the same configuration, not two points told apart by it.
      descriptions_[point] =
          describe_pe(registry_ != nullptr ? run_folder.read_resolved_config(*registry_)
                                           : run_folder.read_stored_config(),
                      registry_, warnings_);
      experiment_of_point_[point] = experiment_name;
      // The splits in the order the first run of each point lists them: a point may evaluate on
      // splits the others do not (a PE with dropout evaluated both ways).
      for (const auto& split : splits_of(run_dir))
        append_once(experiment_.splits, split);
    }
    by_point_[point].runs.push_back(std::move(run));
  }

  Experiment finish() {
    check_filters_met();
    choose_scales();
    describe_experiment();
    PELAB_CHECK(!by_point_.empty(), "'{}' holds no finished run:\n  {}", experiment_.dir,
                fmt::join(experiment_.skipped, "\n  "));
    std::map<std::string, std::vector<std::string>> series_members;
    for (const auto& point : order_)
      series_members[descriptions_[point].base].push_back(point);
    for (const auto& [base, members] : series_members)
      label_series(base, members);
    for (auto& [name, point] : by_point_)
      aggregate_seeds(point);
    order_points();
    note_metrics_not_shared();
    return std::move(experiment_);
  }

 private:
  // Whether a finished run meets every filter; the values each filter's key takes are kept for
  // the error when none does.
  bool meets_filters(const StoredConfig& config, std::int64_t seed) {
    bool meets = true;
    for (const auto& filter : experiment_.filters) {
      if (filter.key == RunFilter::kSeedKey) {
        filter_values_[filter.key].insert(std::to_string(seed));
        if (std::find(filter.seeds.begin(), filter.seeds.end(), seed) == filter.seeds.end())
          meets = false;
        continue;
      }
      const std::optional<std::string> value = config.shown(filter.key);
      filter_values_[filter.key].insert(value.value_or("(absent)"));
      if (!value) {
        meets = false;
        continue;
      }
      const std::optional<double> number = number_of(*value), wanted = number_of(filter.value);
      if (number && wanted ? *number != *wanted : *value != filter.value) meets = false;
    }
    return meets;
  }

  void check_filters_met() {
    if (experiment_.filters.empty() || !by_point_.empty() || experiment_.filtered_out == 0) return;
    std::vector<std::string> taken;
    for (const auto& filter : experiment_.filters) {
      taken.push_back(
          fmt::format("{} is {} there", filter.key, fmt::join(filter_values_[filter.key], ", ")));
    }
    throw Error(fmt::format(
        "--where {}: none of the {} finished run(s) in '{}' meets it ({}); give a key and a value "
        "of their config.toml, e.g. --where task.dims=2, or the seeds to keep, --where "
        "seed=2235,6068",
        fmt::join(filter_texts(), " --where "), experiment_.filtered_out, experiment_.dir,
        fmt::join(taken, "; ")));
  }

  std::vector<std::string> filter_texts() const {
    std::vector<std::string> texts;
    for (const auto& filter : experiment_.filters)
      texts.push_back(filter.text());
    return texts;
  }

  // The init scale of each point: of the parameters its schemas mark, the first that the points
  // of its experiment with the same marked parameters vary (liere's generators_init.std in a
  // sweep of it, though positions_init.std comes first), else the first marked one.
  void choose_scales() {
    std::map<std::pair<std::string, std::vector<std::string>>, std::vector<std::string>> groups;
    for (const auto& point : order_) {
      std::vector<std::string> marked;
      for (const auto& [key, value] : descriptions_[point].scale_candidates)
        marked.push_back(key);
      groups[{experiment_of_point_[point], marked}].push_back(point);
    }
    for (const auto& [group, members] : groups) {
      const std::vector<std::string>& keys = group.second;
      std::string chosen = keys.empty() ? "" : keys.front();
      for (const auto& key : keys) {
        std::set<double> values;
        for (const auto& point : members)
          for (const auto& [candidate, value] : descriptions_[point].scale_candidates)
            if (candidate == key) values.insert(value);
        if (values.size() > 1) {
          chosen = key;
          break;
        }
      }
      for (const auto& point : members)
        name_series(descriptions_[point], chosen);
    }
  }

  // The experiment's name, task, warnings and probe order, from its points.
  void describe_experiment() {
    experiment_.name = fmt::format("{}", fmt::join(experiment_names_, " + "));
    // Runs of several experiments side by side: each experiment's points form their own series,
    // named for it, so that a curve never joins points of two experiments.
    if (experiment_names_.size() > 1) {
      for (auto& [point, description] : descriptions_)
        description.base = experiment_of_point_[point] + ": " + description.base;
    }
    experiment_.warnings.assign(warnings_.begin(), warnings_.end());
    std::set<std::string> tasks;
    for (const auto& [point, description] : descriptions_) {
      if (!description.task.empty()) tasks.insert(description.task);
    }
    experiment_.task = fmt::format("{}", fmt::join(tasks, ", "));
    // Probes in the order the manifest lists them.
    for (const auto& point : order_) {
      for (const auto& probe : descriptions_[point].probes)
        append_once(experiment_.probe_order, probe);
    }
  }

  std::string value_of(const std::string& point, const std::string& key) {
    const auto& entries = descriptions_[point].entries;
    const auto it = entries.find(key);
    return it == entries.end() ? std::string("(absent)") : it->second;
  }

  // Whether the points of a series all have one value of `key` outside the PE that differs from
  // the value most points of their experiment have (if one value has the most).
  bool departs_from_experiment(const std::vector<std::string>& members, const std::string& key,
                               const std::string& value) {
    std::map<std::string, int> counts;
    for (const auto& point : order_) {
      if (experiment_of_point_[point] == experiment_of_point_[members.front()])
        ++counts[value_of(point, key)];
    }
    const auto most = std::max_element(counts.begin(), counts.end(),
                                       [](auto& a, auto& b) { return a.second < b.second; });
    const bool one_most = std::count_if(counts.begin(), counts.end(), [&](auto& entry) {
                            return entry.second == most->second;
                          }) == 1;
    return one_most && most->first != value;
  }

  // A series is the points sharing a PE description; configuration keys that differ between
  // them (other than the scale and the seed) split it further and are named in its label. So are
  // the keys outside the PE in which a series departs from what most points of its experiment
  // have (a sinusoidal PE with dropout beside learned PEs without it).
  std::vector<std::string> differing_keys(const std::vector<std::string>& members) {
    std::set<std::string> keys;
    for (const auto& point : members) {
      for (const auto& [key, value] : descriptions_[point].entries)
        keys.insert(key);
    }
    std::vector<std::string> differing;
    for (const auto& key : keys) {
      // Probes run on the trained model: they tell no two points apart.
      if (key.rfind("experiment.", 0) == 0 || key.rfind("probe.", 0) == 0 ||
          host_execution_keys().count(key) != 0 ||
          key == descriptions_[members.front()].scale_key) {
        continue;
      }
      std::set<std::string> values;
      for (const auto& point : members)
        values.insert(value_of(point, key));
      if (values.size() > 1) {
        differing.push_back(key);
        continue;
      }
      if (key == "pe" || key.rfind("pe.", 0) == 0) continue;  // the series' name says it
      if (departs_from_experiment(members, key, *values.begin())) differing.push_back(key);
    }
    return differing;
  }

  void label_series(const std::string& base, const std::vector<std::string>& members) {
    const std::vector<std::string> differing = differing_keys(members);
    for (const auto& name : members) {
      Point& point = by_point_[name];
      const PEDescription& description = descriptions_[name];
      std::string extras;
      point.varying.clear();
      for (const auto& key : differing) {
        auto it = description.entries.find(key);
        const std::string value = it == description.entries.end() ? "-" : it->second;
        extras += fmt::format(", {}={}", key, value);
        point.varying.emplace_back(key, value);
      }
      point.family = base;
      point.series = base + extras;
      point.init_scale = description.scale;
      point.scale_key = description.scale_key;
      point.label = description.scale
                        ? fmt::format("{}={}{}", base, format_number(*description.scale), extras)
                        : base + extras;
    }
  }

  static void aggregate_seeds(Point& point) {
    std::sort(point.runs.begin(), point.runs.end(),
              [](const RunRecord& a, const RunRecord& b) { return a.seed < b.seed; });
    std::map<std::string, std::vector<double>> values;
    for (const auto& run : point.runs) {
      for (const auto& [key, value] : run.values)
        values[key].push_back(value);
    }
    for (const auto& [key, list] : values)
      point.stats[key] = summarise(list);
  }

  static bool varying_less(const std::vector<std::pair<std::string, std::string>>& a,
                           const std::vector<std::pair<std::string, std::string>>& b) {
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (a[i].first != b[i].first) return a[i].first < b[i].first;
      const std::optional<double> x = number_of(a[i].second), y = number_of(b[i].second);
      if (x && y) {
        if (*x != *y) return *x < *y;
      } else if (a[i].second != b[i].second) {
        return a[i].second < b[i].second;
      }
    }
    return a.size() < b.size();
  }

  // Scaled series first (each family's by its other axes, each series by scale), then the others.
  void order_points() {
    std::vector<std::string> series_order;
    std::map<std::string, const Point*> first_of_series;
    std::map<std::string, std::size_t> family_rank;  // families in order of appearance
    for (const auto& name : order_) {
      const Point& point = by_point_[name];
      if (!point.init_scale) continue;
      append_once(series_order, point.series);
      first_of_series.emplace(point.series, &point);
      family_rank.emplace(point.family, family_rank.size());
    }
    // The series of one family by their other axes' values, numbers as numbers (d_model 32
    // before 128, not in the folders' alphabetical order).
    std::stable_sort(series_order.begin(), series_order.end(),
                     [&](const std::string& a, const std::string& b) {
                       const Point& pa = *first_of_series.at(a);
                       const Point& pb = *first_of_series.at(b);
                       if (pa.family != pb.family)
                         return family_rank.at(pa.family) < family_rank.at(pb.family);
                       return varying_less(pa.varying, pb.varying);
                     });
    for (const auto& series : series_order) {
      std::vector<Point*> members;
      for (const auto& name : order_) {
        if (by_point_[name].init_scale && by_point_[name].series == series)
          members.push_back(&by_point_[name]);
      }
      std::stable_sort(members.begin(), members.end(), [](const Point* a, const Point* b) {
        return *a->init_scale < *b->init_scale;
      });
      for (Point* point : members)
        experiment_.points.push_back(*point);
    }
    for (const auto& name : order_) {
      if (!by_point_[name].init_scale) experiment_.points.push_back(by_point_[name]);
    }
    if (!experiment_.splits.empty()) return;
    for (const auto& [key, stat] : experiment_.points.front().stats) {
      const std::string split = key.substr(0, key.find('/'));
      if (split != "probe" && split != "run") append_once(experiment_.splits, split);
    }
  }

  // Experiments of different tasks side by side: each metric is compared where it exists, and the
  // report says which experiments do not evaluate it rather than showing empty panels.
  void note_metrics_not_shared() {
    if (experiment_names_.size() < 2) return;
    std::map<std::string, std::set<std::string>> experiments_of_metric;
    for (const auto& point : experiment_.points) {
      for (const auto& [key, stat] : point.stats) {
        const std::string split = key.substr(0, key.find('/'));
        if (split == "probe" || split == "run") continue;
        experiments_of_metric[key.substr(key.rfind('/') + 1)].insert(
            experiment_of_point_[point.point]);
      }
    }
    for (const auto& [metric, experiments] : experiments_of_metric) {
      std::vector<std::string> without;
      for (const auto& name : experiment_names_) {
        if (!experiments.count(name)) without.push_back(name);
      }
      if (without.empty()) continue;
      experiment_.warnings.push_back(fmt::format(
          "metric '{}' is evaluated by {} and not by {}: its tables show '-' for the points "
          "of the latter, and its figures leave them out",
          metric, fmt::join(experiments, ", "), fmt::join(without, ", ")));
    }
  }

  Registry* registry_;
  const bool combined_;
  Experiment experiment_;
  std::map<std::string, Point> by_point_;
  std::vector<std::string> order_;  // the points in the order their first run was read
  std::map<std::string, PEDescription> descriptions_;
  std::map<std::string, std::string> experiment_of_point_;
  std::vector<std::string> experiment_names_;
  std::map<std::pair<std::string, std::int64_t>, std::string> seen_seeds_;  // -> its run folder
  std::set<std::string> warnings_;
  std::map<std::string, std::set<std::string>> filter_values_;  // key -> the values runs hold
};

}  // namespace

std::string probe_title(const Experiment& experiment, const std::string& probe) {
  const auto settings = experiment.probe_settings.find(probe);
  return settings == experiment.probe_settings.end()
             ? probe
             : fmt::format("{} ({})", probe, settings->second);
}

std::optional<double> number_of(const std::string& value) {
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  const double number = std::strtod(value.c_str(), &end);
  if (end != value.c_str() + value.size()) return std::nullopt;
  return number;
}

RunFilter RunFilter::parse(const std::string& text) {
  const std::size_t equals = text.find('=');
  PELAB_CHECK(equals != std::string::npos && equals > 0 && equals + 1 < text.size(),
              "--where '{}': give a configuration key and the value its runs must have, "
              "KEY=VALUE, e.g. --where task.dims=2 or --where pe.plugin=learned",
              text);
  RunFilter filter{text.substr(0, equals), text.substr(equals + 1), {}};
  if (filter.key == kSeedKey) {
    // The run's own seed, not a configuration key: one seed or a comma-separated list of them.
    std::size_t begin = 0;
    while (begin <= filter.value.size()) {
      const std::size_t comma = std::min(filter.value.find(',', begin), filter.value.size());
      const std::string item = filter.value.substr(begin, comma - begin);
      char* end = nullptr;
      const long long seed = std::strtoll(item.c_str(), &end, 10);
      PELAB_CHECK(!item.empty() && end == item.c_str() + item.size(),
                  "--where '{}': '{}' is not a seed; give the seeds to keep as integers, one or a "
                  "comma-separated list, e.g. --where seed=2235,6068,6312",
                  text, item);
      filter.seeds.push_back(seed);
      begin = comma + 1;
    }
  }
  return filter;
}

Experiment collect(const std::string& dir, Registry* registry) {
  return collect(std::vector<std::string>{dir}, registry);
}

Experiment collect(const std::vector<std::string>& dirs, Registry* registry,
                   const std::vector<RunFilter>& filters) {
  PELAB_CHECK(!dirs.empty(), "no folder to report on: give an experiment or run folder");
  Collector collector(dirs, registry, filters);
  for (const auto& dir : dirs) {
    for (const auto& run_dir : ExperimentFolder::run_folders(dir))
      collector.add_run(run_dir, dir);
  }
  return collector.finish();
}

std::vector<MetricDisplay> headline_metrics(const Experiment& experiment) {
  static const std::vector<MetricDisplay> kKnown = {
      {"accuracy", "Accuracy (%)", "acc.", 100.0, "{:.1f}"},
      {"mse", "Masked-token MSE (lower is better)", "MSE", 1.0, "{:.4f}"},
      {"r", "Masked-token Pearson r (higher is better)", "r", 1.0, "{:.3f}"},
  };
  std::vector<MetricDisplay> found;
  for (const auto& display : kKnown) {
    const std::string suffix = "/" + display.metric;
    const bool present =
        std::any_of(experiment.points.begin(), experiment.points.end(), [&](const Point& point) {
          return std::any_of(point.stats.begin(), point.stats.end(), [&](const auto& entry) {
            const std::string& key = entry.first;
            return key.rfind("probe/", 0) != 0 && key.rfind("run/", 0) != 0 &&
                   key.size() > suffix.size() &&
                   key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
          });
        });
    if (present) found.push_back(display);
  }
  if (found.empty()) found.push_back(kKnown.front());
  return found;
}

std::vector<std::string> metric_groups(const Experiment& experiment, const std::string& split,
                                       const std::string& metric) {
  std::vector<std::string> groups;
  const std::string prefix = split + "/";
  const std::string suffix = "/" + metric;
  for (const auto& point : experiment.points) {
    for (const auto& [key, stat] : point.stats) {
      if (key.rfind(prefix, 0) != 0 || key.size() < prefix.size() + suffix.size() ||
          key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      const std::string group =
          key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
      if (group.find('/') != std::string::npos) continue;
      if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
    }
  }
  std::stable_partition(groups.begin(), groups.end(), [](const auto& g) { return g == "all"; });
  return groups;
}

std::string results_csv(const Experiment& experiment) {
  // A p-value's mean over seeds is no p-value: fisher_p and seeds_below_0.05 combine them.
  std::string csv = "point,metric,mean,sem,n,series,init_scale,fisher_p,seeds_below_0.05\n";
  for (const auto& point : experiment.points) {
    // Final metrics first, then probe scalars, then the run's cost.
    std::vector<std::string> keys;
    const auto rank = [](const std::string& key) {
      return key.rfind("probe/", 0) == 0 ? 1 : key.rfind("run/", 0) == 0 ? 2 : 0;
    };
    for (const auto& [key, stat] : point.stats)
      keys.push_back(key);
    std::stable_sort(keys.begin(), keys.end(),
                     [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
    for (const auto& key : keys) {
      const Statistic& s = point.stats.at(key);
      const std::optional<CombinedP> p = is_p_value(key) ? combined_p(point, key) : std::nullopt;
      csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", csv_field(point.point), csv_field(key),
                         s.n ? format_number(s.mean) : "nan", s.n ? format_number(s.sem) : "nan",
                         s.n, csv_field(point.series),
                         point.init_scale ? format_number(*point.init_scale) : "",
                         p ? format_number(p->fisher) : "", p ? std::to_string(p->below_0_05) : "");
    }
  }
  return csv;
}

}  // namespace pelab::report
