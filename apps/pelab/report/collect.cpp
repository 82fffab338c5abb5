// Reading an experiment's run folders back and aggregating them over seeds.

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "pelab/error.h"
#include "pelab/plugin_kind.h"
#include "pelab/registry.h"
#include "pelab/run_folder.h"
#include "pelab/run_io.h"
#include "pelab/run_loader.h"
#include "report.h"

namespace pelab::report {

namespace fs = boost::filesystem;
using json = nlohmann::json;

Statistic summarise(const std::vector<double>& all) {
  std::vector<double> values;
  for (double v : all) {
    if (std::isfinite(v)) values.push_back(v);
  }
  Statistic s;
  s.n = values.size();
  if (values.empty()) return s;
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

// Every leaf of a TOML table as "dotted.key" -> its TOML text.
void flatten(const toml::table& table, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  for (const auto& [key, node] : table) {
    const std::string path =
        prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    if (const toml::table* child = node.as_table()) {
      flatten(*child, path, out);
    } else if (const toml::array* array = node.as_array()) {
      // [[probe]] tables and lists: their text is enough to tell them apart.
      std::ostringstream text;
      text << *array;
      out[path] = text.str();
    } else if (const auto number = node.value_exact<double>()) {
      out[path] = format_number(*number);  // 0.1, not toml++'s 0.10000000000000001
    } else if (const auto string = node.value_exact<std::string>()) {
      out[path] = *string;  // both, not toml++'s 'both'
    } else {
      std::ostringstream text;
      node.visit([&](auto&& value) { text << value; });
      out[path] = text.str();
    }
  }
}

// What a point's configuration says about its PE: the series it belongs to and its init scale.
struct PEDescription {
  std::string base;  // "learned, normal std" or "sinusoidal_nd"
  std::optional<double> scale;
  std::string scale_key;
  std::map<std::string, std::string> entries;  // the whole config, flattened
  std::vector<std::string> probes;             // as the run names their outputs, in order
  std::string task;                            // the task plugin
};

// The parameter of `spec_table` (a plugin's table in a config) that its schema marks as the init
// scale, as {key under `prefix`, value}; nested plugin parameters (a PE's initializer) are searched
// too. A plugin that is not on the plugin path adds a warning and marks nothing.
std::optional<std::pair<std::string, double>> marked_scale(const toml::table& spec_table,
                                                           PluginKind kind,
                                                           const std::string& prefix,
                                                           Registry& registry,
                                                           std::set<std::string>& warnings) {
  const auto name = spec_table["plugin"].value<std::string>();
  if (!name) return std::nullopt;
  const ParamSchema* schema = nullptr;
  try {
    schema = &registry.schema(kind, *name);
  } catch (const Error& e) {
    warnings.insert(
        fmt::format("the {} plugin '{}' could not be loaded, so its init scale (if it "
                    "has one) forms no series: {}",
                    to_string(kind), *name, e.what()));
    return std::nullopt;
  }
  // A run's config.toml is resolved: the marked parameter is spelt out, defaults included.
  if (const ParamSpec* spec = schema->init_scale()) {
    if (const auto value = spec_table[spec->name].value<double>())
      return std::make_pair(prefix + "." + spec->name, *value);
  }
  for (const ParamSpec& spec : schema->specs()) {
    if (spec.type != ParamType::kPlugin) continue;
    if (const toml::table* nested = spec_table[spec.name].as_table()) {
      if (auto found =
              marked_scale(*nested, spec.plugin_kind, prefix + "." + spec.name, registry, warnings))
        return found;
    }
  }
  return std::nullopt;
}

PEDescription describe_pe(const std::string& config_path, Registry* registry,
                          std::set<std::string>& warnings) {
  PEDescription description;
  toml::table root;
  try {
    root = toml::parse_file(config_path);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}: invalid TOML: {}", config_path, e.description()));
  }
  flatten(root, "", description.entries);
  description.task = root["task"]["plugin"].value_or(std::string());
  if (const toml::array* probes = root["probe"].as_array()) {
    std::map<std::string, int> seen;
    for (const auto& node : *probes) {
      const toml::table* probe = node.as_table();
      const auto name = probe ? (*probe)["plugin"].value<std::string>() : std::nullopt;
      if (name) description.probes.push_back(probe_output_name(*name, ++seen[*name]));
    }
  }
  const toml::table* pe = root["pe"].as_table();
  const std::string plugin =
      pe ? pe->get("plugin") ? pe->get("plugin")->value_or(std::string("?")) : std::string("?")
         : std::string("none");
  description.base = plugin;
  if (pe == nullptr) return description;
  // The series: the PE and its nested plugins ("learned, normal").
  for (const auto& [key, node] : *pe) {
    if (const toml::table* nested = node.as_table()) {
      if (auto nested_plugin = (*nested)["plugin"].value<std::string>())
        description.base += ", " + *nested_plugin;
    }
  }
  if (registry == nullptr) return description;
  if (auto scale = marked_scale(*pe, PluginKind::kPositionalEncoding, "pe", *registry, warnings)) {
    description.scale_key = scale->first;
    description.scale = scale->second;
    // "learned, normal std": the scale's own name closes the series' name.
    description.base += " " + scale->first.substr(scale->first.rfind('.') + 1);
  }
  return description;
}

std::vector<std::string> sorted_subfolders(const fs::path& dir) {
  std::vector<std::string> out;
  boost::system::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (fs::is_directory(it->path())) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The splits in the order metrics.csv first lists them.
std::vector<std::string> splits_of(const std::string& run_dir) {
  std::vector<std::string> splits;
  for (const MetricRow& row : RunFolder(run_dir).read_metrics()) {
    if (row.split != "train_epoch" &&
        std::find(splits.begin(), splits.end(), row.split) == splits.end())
      splits.push_back(row.split);
  }
  return splits;
}

// The headlines a probe declared in its probes/<name>.json, or nullopt for a probe that declared
// none (or a file from a pelab before headlines).
std::optional<std::vector<Headline>> headlines_of(const json& document) {
  if (!document.contains("headlines") || !document["headlines"].is_array()) return std::nullopt;
  std::vector<Headline> headlines;
  for (const auto& entry : document["headlines"]) {
    if (!entry.is_object() || !entry.contains("scalar") || !entry["scalar"].is_string()) continue;
    Headline headline;
    headline.scalar = entry["scalar"].get<std::string>();
    const std::string better = entry.value("better", std::string("neither"));
    headline.better = better == "higher"  ? Better::kHigher
                      : better == "lower" ? Better::kLower
                                          : Better::kNeither;
    if (entry.contains("meaning") && entry["meaning"].is_string())
      headline.meaning = entry["meaning"].get<std::string>();
    headlines.push_back(std::move(headline));
  }
  if (headlines.empty()) return std::nullopt;
  return headlines;
}

// The run folders under `dir`: `dir` itself when it is a run folder, else its
// <point>/seed-<s>/ folders that hold a config.toml.
std::vector<std::string> run_folders(const std::string& dir) {
  PELAB_CHECK(fs::is_directory(dir), "'{}' is not a folder", dir);
  std::vector<std::string> run_dirs;
  if (fs::is_regular_file(fs::path(dir) / "config.toml")) {
    run_dirs.push_back(dir);
  } else {
    for (const auto& point : sorted_subfolders(dir)) {
      for (const auto& seed : sorted_subfolders(point)) {
        if (fs::path(seed).filename().string().rfind("seed-", 0) == 0 &&
            fs::is_regular_file(fs::path(seed) / "config.toml")) {
          run_dirs.push_back(seed);
        }
      }
    }
  }
  PELAB_CHECK(!run_dirs.empty(),
              "'{}' holds no runs: give a run folder (with config.toml) or an experiment folder "
              "(<out>/<experiment>, holding <point>/seed-<s>/ folders)",
              dir);
  return run_dirs;
}

}  // namespace

Experiment collect(const std::string& dir, Registry* registry) {
  return collect(std::vector<std::string>{dir}, registry);
}

Experiment collect(const std::vector<std::string>& dirs, Registry* registry) {
  PELAB_CHECK(!dirs.empty(), "no folder to report on: give an experiment or run folder");
  Experiment experiment;
  experiment.dir = fmt::format("{}", fmt::join(dirs, ", "));
  // With several folders a point is "<experiment>/<point>", as the folders lie under an output
  // folder: the same experiment in two folders (shards run on two machines) shares its points.
  const bool combined = dirs.size() > 1;
  std::vector<std::pair<std::string, std::string>> runs_and_folders;
  for (const auto& dir : dirs) {
    for (auto& run_dir : run_folders(dir))
      runs_and_folders.emplace_back(std::move(run_dir), dir);
  }

  std::map<std::string, Point> by_point;
  std::vector<std::string> order;
  std::map<std::string, PEDescription> descriptions;
  std::map<std::string, std::string> experiment_of_point;
  std::vector<std::string> experiment_names;
  std::map<std::pair<std::string, std::int64_t>, std::string> seen_seeds;  // -> its run folder
  std::set<std::string> points_with_splits;
  std::set<std::string> warnings;
  for (const auto& [run_dir, folder] : runs_and_folders) {
    const auto summary = RunFolder(run_dir).read_summary();
    if (!summary) {
      experiment.skipped.push_back(run_dir + ": not finished (no readable summary.json)");
      continue;
    }
    if (!summary->finished()) {
      experiment.skipped.push_back(fmt::format("{}: {}", run_dir, summary->status));
      continue;
    }
    const std::string experiment_name =
        summary->experiment.empty() ? fs::path(folder).filename().string() : summary->experiment;
    std::string point = summary->point.empty() ? "default" : summary->point;
    if (combined) point = experiment_name + "/" + point;
    const auto [seen, first] = seen_seeds.emplace(std::make_pair(point, summary->seed), run_dir);
    if (!first) {
      experiment.skipped.push_back(fmt::format(
          "{}: the same point and seed as {}, which is counted (a seed counts once in a mean)",
          run_dir, seen->second));
      continue;
    }
    RunRecord run;
    run.dir = run_dir;
    run.seed = summary->seed;
    for (const auto& [key, value] : summary->final_metrics)
      run.values[key] = value;
    // What the run cost, beside its results: comparable between points only when their runs
    // had the machine to the same degree (summary.json records the threads, not the load).
    run.values["run/steps_per_second"] = summary->steps_per_second;
    run.values["run/wall_seconds"] = summary->wall_seconds;
    run.values["run/parameters"] = static_cast<double>(summary->parameters);
    run.values["run/threads"] = static_cast<double>(summary->threads);
    run.compute = summary->compute.short_text();
    for (const auto& [probe, scalars] : summary->probes) {
      for (const auto& [name, value] : scalars)
        run.values[fmt::format("probe/{}/{}", probe, name)] = value;
      const std::string probe_json = fmt::format("{}/probes/{}.json", run_dir, probe);
      if (!fs::is_regular_file(probe_json)) continue;
      const json document = json::parse(read_file(probe_json), nullptr, false);
      if (document.is_discarded() || !document.is_object()) continue;
      if (!experiment.headlines.count(probe)) {
        if (auto headlines = headlines_of(document)) experiment.headlines[probe] = *headlines;
      }
      for (const char* field : {"note", "error"}) {
        if (document.contains(field) && document[field].is_string()) {
          run.notes.push_back(
              fmt::format("{} {}: {}", probe, field, document[field].get<std::string>()));
        }
      }
    }
    if (std::find(experiment_names.begin(), experiment_names.end(), experiment_name) ==
        experiment_names.end())
      experiment_names.push_back(experiment_name);
    if (!by_point.count(point)) {
      order.push_back(point);
      by_point[point].point = point;
      descriptions[point] = describe_pe(run_dir + "/config.toml", registry, warnings);
      experiment_of_point[point] = experiment_name;
    }
    // The splits in the order the first run of each point lists them: a point may evaluate on
    // splits the others do not (a PE with dropout evaluated both ways).
    if (points_with_splits.insert(point).second) {
      for (const auto& split : splits_of(run_dir)) {
        if (std::find(experiment.splits.begin(), experiment.splits.end(), split) ==
            experiment.splits.end())
          experiment.splits.push_back(split);
      }
    }
    by_point[point].runs.push_back(std::move(run));
  }
  experiment.name = fmt::format("{}", fmt::join(experiment_names, " + "));
  // Runs of several experiments side by side: each experiment's points form their own series,
  // named for it, so that a curve never joins points of two experiments.
  if (experiment_names.size() > 1) {
    for (auto& [point, description] : descriptions)
      description.base = experiment_of_point[point] + ": " + description.base;
  }
  experiment.warnings.assign(warnings.begin(), warnings.end());
  std::set<std::string> tasks;
  for (const auto& [point, description] : descriptions) {
    if (!description.task.empty()) tasks.insert(description.task);
  }
  experiment.task = fmt::format("{}", fmt::join(tasks, ", "));
  // Probes in the order the manifest lists them.
  for (const auto& point : order) {
    for (const auto& probe : descriptions[point].probes) {
      if (std::find(experiment.probe_order.begin(), experiment.probe_order.end(), probe) ==
          experiment.probe_order.end())
        experiment.probe_order.push_back(probe);
    }
  }
  PELAB_CHECK(!by_point.empty(), "'{}' holds no finished run:\n  {}", experiment.dir,
              fmt::join(experiment.skipped, "\n  "));

  // A series is the points sharing a PE description; configuration keys that differ between
  // them (other than the scale and the seed) split it further and are named in its label. So are
  // the keys outside the PE in which a series departs from what most points of its experiment
  // have (a sinusoidal PE with dropout beside learned PEs without it).
  const auto value_of = [&](const std::string& point, const std::string& key) {
    const auto& entries = descriptions[point].entries;
    const auto it = entries.find(key);
    return it == entries.end() ? std::string("(absent)") : it->second;
  };
  std::map<std::string, std::vector<std::string>> series_members;
  for (const auto& point : order)
    series_members[descriptions[point].base].push_back(point);
  for (const auto& [base, members] : series_members) {
    std::set<std::string> keys;
    for (const auto& point : members) {
      for (const auto& [key, value] : descriptions[point].entries)
        keys.insert(key);
    }
    std::vector<std::string> differing;
    for (const auto& key : keys) {
      if (key.rfind("experiment.", 0) == 0 || key == "train.threads" ||
          key == descriptions[members.front()].scale_key) {
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
      // The value most points of the experiment have, if one value has the most.
      std::map<std::string, int> counts;
      for (const auto& point : order) {
        if (experiment_of_point[point] == experiment_of_point[members.front()])
          ++counts[value_of(point, key)];
      }
      const auto most = std::max_element(counts.begin(), counts.end(),
                                         [](auto& a, auto& b) { return a.second < b.second; });
      const bool one_most = std::count_if(counts.begin(), counts.end(), [&](auto& entry) {
                              return entry.second == most->second;
                            }) == 1;
      if (one_most && most->first != *values.begin()) differing.push_back(key);
    }
    for (const auto& name : members) {
      Point& point = by_point[name];
      const PEDescription& description = descriptions[name];
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

  for (auto& [name, point] : by_point) {
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

  // Scaled series first (in order of appearance, each by scale), then the other points.
  std::vector<std::string> series_order;
  for (const auto& name : order) {
    const Point& point = by_point[name];
    if (point.init_scale &&
        std::find(series_order.begin(), series_order.end(), point.series) == series_order.end()) {
      series_order.push_back(point.series);
    }
  }
  for (const auto& series : series_order) {
    std::vector<Point*> members;
    for (const auto& name : order) {
      if (by_point[name].init_scale && by_point[name].series == series)
        members.push_back(&by_point[name]);
    }
    std::stable_sort(members.begin(), members.end(), [](const Point* a, const Point* b) {
      return *a->init_scale < *b->init_scale;
    });
    for (Point* point : members)
      experiment.points.push_back(*point);
  }
  for (const auto& name : order) {
    if (!by_point[name].init_scale) experiment.points.push_back(by_point[name]);
  }
  if (experiment.splits.empty()) {
    for (const auto& [key, stat] : experiment.points.front().stats) {
      const std::string split = key.substr(0, key.find('/'));
      if (split != "probe" && split != "run" &&
          std::find(experiment.splits.begin(), experiment.splits.end(), split) ==
              experiment.splits.end()) {
        experiment.splits.push_back(split);
      }
    }
  }
  return experiment;
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
  std::string csv = "point,metric,mean,sem,n,series,init_scale\n";
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
      csv += fmt::format("{},{},{},{},{},{},{}\n", csv_field(point.point), csv_field(key),
                         s.n ? format_number(s.mean) : "nan", s.n ? format_number(s.sem) : "nan",
                         s.n, csv_field(point.series),
                         point.init_scale ? format_number(*point.init_scale) : "");
    }
  }
  return csv;
}

}  // namespace pelab::report
