#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pelab/base/export.h"
#include "pelab/base/plugin_kind.h"
#include "pelab/config/sections.h"
#include "pelab/interfaces/params.h"

namespace pelab {

class Registry;

/// Where a run lies in its experiment's folder, for what a message or a help text tells a reader.
inline constexpr const char* kRunLayout = "<point>/seed-<s>";

/// A run's folder relative to its experiment's folder, `<point>/seed-<seed>`: part of a run's
/// identity, so the manifest refuses two runs that would share one. A run outside a sweep (point
/// "") is in `default/`; a point's characters other than letters, digits and `._-=+,` become `_`.
/// ExperimentFolder holds the folders this names.
PELAB_API std::string relative_run_path(const std::string& point, std::int64_t seed);

/// Everything one training run needs, fully resolved: every plugin table validated against its
/// plugin's schema, every default filled in.
struct PELAB_API RunConfig {
  std::string experiment;  // [experiment].name
  std::string point;       // the sweep point, "pe.init.std=0.2,train.lr=0.001"; "" without sweep
  std::int64_t seed = 0;
  Params experiment_params;
  Params model;
  Params train;
  PluginSpec task;
  PluginSpec pe;
  std::vector<PluginSpec> probes;

  /// The run's folder under the output root: `<experiment>/<relative_run_path>`.
  std::string relative_dir() const;
  /// The resolved configuration as a TOML document that `pelab run` accepts again.
  std::string to_toml() const;
};

/// A manifest: a TOML file composing a task, a model, a PE, training and probes, possibly with a
/// [sweep] over any of their keys and a list of seeds. Reading it validates every run of the sweep;
/// each error names file:line:column, what is wrong and how to fix it.
class PELAB_API Manifest {
 public:
  /// Reads and validates `path`. `overrides` are "dotted.key=value" strings (`--set`), applied
  /// before the sweep; the value is TOML ("0.3", "\"pre\"", "[1, 2]") or a bare string.
  static Manifest from_file(const std::string& path, Registry& registry,
                            const std::vector<std::string>& overrides = {});
  /// As from_file, reading `text` and naming it `source_name` in errors.
  static Manifest from_string(const std::string& text, const std::string& source_name,
                              Registry& registry, const std::vector<std::string>& overrides = {});

  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }
  /// One entry per sweep point and seed, points in sweep order, seeds innermost.
  const std::vector<RunConfig>& runs() const { return runs_; }
  /// The swept keys in manifest order, e.g. {"pe.init.std"}.
  const std::vector<std::string>& sweep_keys() const { return sweep_keys_; }
  std::size_t points() const;

 private:
  std::string name_;
  std::string source_;
  std::vector<std::string> sweep_keys_;
  std::vector<RunConfig> runs_;
};

/// A plugin written as a manifest writes it: a bare name ("rotary_nd") or a TOML inline table
/// ("{ plugin = \"learned\", init = { plugin = \"orthogonal\" } }"), validated against the
/// plugin's schema with every default filled in. `overrides` are `--set key=value` strings whose
/// keys are relative to the plugin's table ("init.std=0.5"). For tools such as `pelab bench`.
PELAB_API PluginSpec parse_plugin_spec(const std::string& text, PluginKind kind, Registry& registry,
                                       const std::vector<std::string>& overrides = {},
                                       const std::string& source_name = "command line");

}  // namespace pelab
