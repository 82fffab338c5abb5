#include "pelab/config/manifest.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <toml++/toml.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"
#include "pelab/plugins/registry.h"

namespace pelab {

namespace {

// The most runs one manifest may expand to (sweep points x seeds).
constexpr std::size_t kMaxRuns = 100000;

namespace fs = boost::filesystem;

const std::vector<std::string> kSections = {"experiment", "task",  "model", "pe",
                                            "train",      "probe", "sweep"};

std::string parent_of(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string describe_node(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return fmt::format("the string \"{}\"", *node.value<std::string>());
    case toml::node_type::integer:
      return fmt::format("the integer {}", *node.value<std::int64_t>());
    case toml::node_type::floating_point:
      return fmt::format("the float {}", format_number(*node.value<double>()));
    case toml::node_type::boolean:
      return *node.value<bool>() ? "true" : "false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

// A number as a double: a float, or an integer converted; nullopt for any other node.
std::optional<double> scalar_double(const toml::node& element) {
  if (element.is_floating_point()) return *element.value<double>();
  if (element.is_integer()) return static_cast<double>(*element.value<std::int64_t>());
  return std::nullopt;
}

// Values that replace or add keys of the manifest, by dotted path: `--set` overrides and the
// current sweep point. The nodes stay owned by their documents; each remembers where it came from.
struct Overlay {
  std::map<std::string, std::pair<const toml::node*, SourceLocation>> entries;

  const std::pair<const toml::node*, SourceLocation>* find(const std::string& path) const {
    auto it = entries.find(path);
    return it == entries.end() ? nullptr : &it->second;
  }
  // Keys directly below `path` that the overlay sets.
  std::vector<std::string> children(const std::string& path) const {
    std::vector<std::string> keys;
    const std::string prefix = path.empty() ? "" : path + ".";
    for (const auto& [key, entry] : entries) {
      if (key.rfind(prefix, 0) != 0) continue;
      const std::string rest = key.substr(prefix.size());
      const std::string first = rest.substr(0, rest.find('.'));
      if (std::find(keys.begin(), keys.end(), first) == keys.end()) keys.push_back(first);
    }
    return keys;
  }
};

// Resolves one manifest (with one overlay) into a RunConfig, validating every table against the
// schema of what it configures.
class Resolver {
 public:
  Resolver(const std::string& file, const toml::table& root, Registry& registry,
           const Overlay& overlay)
      : file_(file), root_(root), registry_(registry), overlay_(overlay) {}

  RunConfig resolve() {
    check_sections();
    RunConfig config;
    config.experiment_params = resolve_section("experiment", experiment_schema());
    config.model = resolve_section("model", model_schema());
    config.train = resolve_section("train", train_schema());
    config.task = resolve_plugin(node_at("task"), "task", PluginKind::kTask, "");
    config.pe = resolve_plugin(node_at("pe"), "pe", PluginKind::kPositionalEncoding, "");
    resolve_probes(config);
    check_model(config);
    return config;
  }

  /// The plugin table at `path` of the document, on its own (no other section needed).
  PluginSpec resolve_plugin_at(const std::string& path, PluginKind kind) const {
    return resolve_plugin(node_at(path), path, kind, "");
  }

  SourceLocation location_of(const toml::node& node, const std::string& path) const {
    if (const auto* entry = overlay_.find(path); entry && entry->first == &node) {
      return entry->second;
    }
    return location_from_source(node.source());
  }

  SourceLocation location_from_source(const toml::source_region& source) const {
    SourceLocation where;
    where.file = source.path ? *source.path : file_;
    where.line = static_cast<int>(source.begin.line);
    where.column = static_cast<int>(source.begin.column);
    return where;
  }

  std::string prefix(const SourceLocation& where) const {
    const std::string text = where.known() ? where.str() : file_;
    return text + ": ";
  }

 private:
  // The node at a dotted path: the overlay's if it sets it, else the manifest's.
  const toml::node* node_at(const std::string& path) const {
    if (const auto* entry = overlay_.find(path)) return entry->first;
    const std::string parent = parent_of(path);
    const toml::node* container = parent.empty() ? &root_ : node_at(parent);
    if (container == nullptr) return nullptr;
    const std::string key = path.substr(parent.empty() ? 0 : parent.size() + 1);
    if (const toml::table* table = container->as_table()) return table->get(key);
    if (const toml::array* array = container->as_array()) {
      if (key.find_first_not_of("0123456789") != std::string::npos) return nullptr;
      return array->get(std::stoul(key));
    }
    return nullptr;
  }

  // Keys of the table at `path`, with the position of each in the manifest, plus overlay keys.
  std::vector<std::pair<std::string, SourceLocation>> keys_of(const toml::node* node,
                                                              const std::string& path) const {
    std::vector<std::pair<std::string, SourceLocation>> keys;
    if (node != nullptr) {
      if (const toml::table* table = node->as_table()) {
        for (const auto& [key, value] : *table) {
          keys.emplace_back(std::string(key.str()), location_from_source(key.source()));
        }
      }
    }
    for (const auto& key : overlay_.children(path)) {
      const bool present = std::any_of(keys.begin(), keys.end(),
                                       [&](const auto& entry) { return entry.first == key; });
      if (present) continue;
      const std::string full = child_path(path, key);
      SourceLocation where;
      for (const auto& [overlay_path, entry] : overlay_.entries) {
        if (overlay_path == full || overlay_path.rfind(full + ".", 0) == 0) where = entry.second;
      }
      keys.emplace_back(key, where);
    }
    return keys;
  }

  void check_sections() const {
    for (const auto& [key, where] : keys_of(&root_, "")) {
      if (std::find(kSections.begin(), kSections.end(), key) != kSections.end()) continue;
      std::string message = fmt::format("{}unknown section '{}'", prefix(where), key);
      auto near = closest_names(key, kSections);
      if (!near.empty()) message += fmt::format("; did you mean '{}'?", near.front());
      message += fmt::format(" A manifest has the sections: {}.", fmt::join(kSections, ", "));
      throw Error(message);
    }
  }

  Params resolve_section(const std::string& section, const ParamSchema& schema) const {
    const toml::node* node = node_at(section);
    if (node != nullptr && !node->is_table()) {
      throw Error(fmt::format("{}'{}' must be a table ([{}])", prefix(location_of(*node, section)),
                              section, section));
    }
    return resolve_params(node, section, schema, fmt::format("[{}]", section), false);
  }

  Params resolve_params(const toml::node* node, const std::string& path, const ParamSchema& schema,
                        const std::string& what, bool has_plugin_key) const {
    Params params;
    for (const auto& [key, where] : keys_of(node, path)) {
      if (has_plugin_key && key == "plugin") continue;
      const ParamSpec* spec = schema.find(key);
      if (spec == nullptr) {
        std::string message = fmt::format("{}unknown key '{}' in {}", prefix(where), key, what);
        auto near = closest_names(key, schema.names());
        if (!near.empty()) message += fmt::format("; did you mean '{}'?", near.front());
        message += schema.empty()
                       ? " It takes no parameters."
                       : fmt::format(" Its keys are: {}.", fmt::join(schema.names(), ", "));
        throw Error(message);
      }
    }
    for (const ParamSpec& spec : schema.specs()) {
      const std::string full = child_path(path, spec.name);
      const toml::node* value = node_at(full);
      if (spec.type == ParamType::kPlugin) {
        const auto& fallback = std::get<std::shared_ptr<const PluginSpec>>(spec.default_value);
        auto nested = std::make_shared<PluginSpec>(
            resolve_plugin(value, full, spec.plugin_kind, fallback->name));
        SourceLocation where = value ? location_of(*value, full) : SourceLocation{};
        params.set(spec.name, std::shared_ptr<const PluginSpec>(nested), where);
      } else if (value == nullptr) {
        params.set(spec.name, spec.default_value);
      } else {
        const SourceLocation where = location_of(*value, full);
        params.set(spec.name, convert(*value, spec, what, where), where);
      }
    }
    check_used(params, path, schema, what);
    return params;
  }

  // A value that this configuration will not read is refused where it is written: left alone it
  // would be silently ignored (the brain task's centroids with source = "nifti" and no atlas).
  // Its default, as a run's config.toml writes every key, is always accepted.
  // A nested plugin (rope_mixed's positions_init) is at its default when it resolves to what an
  // absent table does: the default plugin with every parameter at its own default.
  void check_used(const Params& params, const std::string& path, const ParamSchema& schema,
                  const std::string& what) const {
    for (const ParamSpec& spec : schema.specs()) {
      if (!spec.applies || spec.applies(params)) continue;
      const std::string full = child_path(path, spec.name);
      const toml::node* value = node_at(full);
      SourceLocation where = value ? location_of(*value, full) : SourceLocation{};
      if (spec.type == ParamType::kPlugin) {
        const auto& fallback = std::get<std::shared_ptr<const PluginSpec>>(spec.default_value);
        const auto unset = std::make_shared<const PluginSpec>(
            registry_.default_spec(spec.plugin_kind, fallback->name));
        if (format_value(params.value(spec.name)) == format_value(unset)) continue;
        // Set only by an override of one of its keys (--set pe.positions_init.std=0.2).
        for (const auto& [key, ignored] : params.plugin(spec.name).params.values())
          if (!where.known()) where = params.plugin(spec.name).params.location(key);
      } else if (value == nullptr || params.value(spec.name) == spec.default_value) {
        continue;
      }
      throw Error(fmt::format(
          "{}'{}' in {} is set ({}) but this configuration does not use it: it is read only when "
          "{}. Remove it, or change the keys it depends on",
          prefix(where), spec.name, what, format_value(params.value(spec.name)), spec.used_when));
    }
  }

  ParamValue convert(const toml::node& node, const ParamSpec& spec, const std::string& what,
                     const SourceLocation& where) const {
    switch (spec.type) {
      case ParamType::kBool:
        if (!node.is_boolean()) throw wrong_type(spec, what, where, describe_node(node));
        return *node.value<bool>();
      case ParamType::kInt: {
        if (!node.is_integer()) throw wrong_type(spec, what, where, describe_node(node));
        const std::int64_t value = *node.value<std::int64_t>();
        check_number(spec, what, where, static_cast<double>(value), std::to_string(value));
        return value;
      }
      case ParamType::kFloat: {
        auto value = scalar_double(node);
        if (!value) throw wrong_type(spec, what, where, describe_node(node));
        check_number(spec, what, where, *value, format_number(*value));
        return *value;
      }
      case ParamType::kString:
        return convert_string(node, spec, what, where);
      case ParamType::kFloatList:
      case ParamType::kIntList:
      case ParamType::kStringList:
        return convert_list(node, spec, what, where);
      case ParamType::kPlugin:
        break;
    }
    PELAB_INTERNAL_ASSERT(false, "plugin parameters are resolved by resolve_plugin");
  }

  // The error for a value of the wrong type; `found` describes the value.
  Error wrong_type(const ParamSpec& spec, const std::string& what, const SourceLocation& where,
                   const std::string& found) const {
    return Error(fmt::format("{}'{}' in {} must be {}, got {}", prefix(where), spec.name, what,
                             spec.accepted(), found));
  }

  void check_number(const ParamSpec& spec, const std::string& what, const SourceLocation& where,
                    double value, const std::string& shown) const {
    // TOML reads nan and inf as floats; no parameter means either, and a NaN passes every
    // bound (each comparison with it is false).
    if (!std::isfinite(value)) {
      throw Error(fmt::format("{}'{}' in {} is {}: it must be a finite number ({})", prefix(where),
                              spec.name, what, shown, spec.accepted()));
    }
    if ((spec.min && value < *spec.min) || (spec.max && value > *spec.max)) {
      throw Error(fmt::format("{}'{}' in {} is {}, out of range: it must be {}", prefix(where),
                              spec.name, what, shown, spec.accepted()));
    }
  }

  ParamValue convert_string(const toml::node& node, const ParamSpec& spec, const std::string& what,
                            const SourceLocation& where) const {
    if (!node.is_string()) throw wrong_type(spec, what, where, describe_node(node));
    std::string value = *node.value<std::string>();
    if (!spec.choices.empty() &&
        std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
      std::string message = fmt::format("{}'{}' in {} is \"{}\", but it must be {}", prefix(where),
                                        spec.name, what, value, spec.accepted());
      auto near = closest_names(value, spec.choices);
      if (!near.empty()) message += fmt::format("; did you mean \"{}\"?", near.front());
      throw Error(message);
    }
    return value;
  }

  // A float, integer or string list; each element is checked as the scalar of its type is.
  ParamValue convert_list(const toml::node& node, const ParamSpec& spec, const std::string& what,
                          const SourceLocation& where) const {
    const toml::array* array = node.as_array();
    if (array == nullptr) throw wrong_type(spec, what, where, describe_node(node));
    std::vector<double> reals;
    std::vector<std::int64_t> integers;
    std::vector<std::string> strings;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const toml::node& element = *array->get(i);
      const std::string found = fmt::format("{} at index {}", describe_node(element), i);
      if (spec.type == ParamType::kFloatList) {
        auto value = scalar_double(element);
        if (!value) throw wrong_type(spec, what, where, found);
        check_number(spec, what, where, *value, format_number(*value));
        reals.push_back(*value);
      } else if (spec.type == ParamType::kIntList) {
        if (!element.is_integer()) throw wrong_type(spec, what, where, found);
        integers.push_back(*element.value<std::int64_t>());
        check_number(spec, what, where, static_cast<double>(integers.back()),
                     std::to_string(integers.back()));
      } else {
        if (!element.is_string()) throw wrong_type(spec, what, where, found);
        strings.push_back(*element.value<std::string>());
      }
    }
    if (spec.type == ParamType::kFloatList) return reals;
    if (spec.type == ParamType::kIntList) return integers;
    return strings;
  }

  // A plugin table ({ plugin = "name", key = value, ... }) or a bare name; `fallback` is the
  // plugin used when the table names none ("" = the name is required).
  PluginSpec resolve_plugin(const toml::node* node, const std::string& path, PluginKind kind,
                            const std::string& fallback) const {
    PluginSpec spec;
    spec.kind = kind;
    const std::string what = fmt::format("[{}]", path);
    const toml::node* name_node = nullptr;
    const toml::node* table_node = nullptr;
    if (node != nullptr && node->is_string()) {
      name_node = node;  // `init = "zeros"`: the plugin with its defaults
    } else if (node != nullptr && node->is_table()) {
      table_node = node;
      name_node = node_at(child_path(path, "plugin"));
    } else if (node != nullptr) {
      throw Error(fmt::format(
          "{}{} must give the {} plugin: a name (\"...\") or a table with "
          "`plugin = \"...\"`, got {}",
          prefix(location_of(*node, path)), what, describe(kind), describe_node(*node)));
    } else {
      name_node = node_at(child_path(path, "plugin"));
    }

    if (name_node != nullptr) {
      const std::string name_path = node == name_node ? path : child_path(path, "plugin");
      spec.location = location_of(*name_node, name_path);
      if (!name_node->is_string()) {
        throw Error(fmt::format("{}'plugin' in {} must be the name of a {} plugin, got {}",
                                prefix(spec.location), what, describe(kind),
                                describe_node(*name_node)));
      }
      spec.name = *name_node->value<std::string>();
    } else if (!fallback.empty()) {
      spec.name = fallback;
      if (node != nullptr) spec.location = location_of(*node, path);
    } else {
      const SourceLocation where = node ? location_of(*node, path) : SourceLocation{file_};
      throw Error(fmt::format("{}{} needs `plugin = \"...\"`: the {} to use. Available: {}.",
                              prefix(where), what, describe(kind),
                              fmt::join(registry_.available(kind), ", ")));
    }

    const LoadedPlugin* plugin = nullptr;
    try {
      plugin = &registry_.get(kind, spec.name);
    } catch (const Error& e) {
      throw Error(prefix(spec.location.known() ? spec.location : SourceLocation{file_}) + e.what());
    }
    const std::string described =
        fmt::format("{} (the {} plugin '{}')", what, describe(kind), spec.name);
    spec.params = resolve_params(table_node, path, plugin->schema, described, true);
    return spec;
  }

  void resolve_probes(RunConfig& config) const {
    const toml::node* node = node_at("probe");
    if (node == nullptr) return;
    const toml::array* probes = node->as_array();
    if (probes == nullptr) {
      throw Error(fmt::format("{}probes are written as [[probe]] tables (an array of tables)",
                              prefix(location_of(*node, "probe"))));
    }
    for (std::size_t i = 0; i < probes->size(); ++i) {
      const std::string path = fmt::format("probe.{}", i);
      config.probes.push_back(resolve_plugin(node_at(path), path, PluginKind::kProbe, ""));
    }
  }

  void check_model(const RunConfig& config) const {
    const std::int64_t d_model = config.model.integer("d_model");
    const std::int64_t heads = config.model.integer("heads");
    if (d_model % heads != 0) {
      const SourceLocation where = config.model.location("heads").known()
                                       ? config.model.location("heads")
                                       : config.model.location("d_model");
      throw Error(
          fmt::format("{}heads ({}) must divide d_model ({})", prefix(where), heads, d_model));
    }
  }

  std::string file_;
  const toml::table& root_;
  Registry& registry_;
  const Overlay& overlay_;
};

// A value that becomes a folder must be one safe path component: "../x" would write outside
// --out, "/tmp/x" would be nested under it.
void check_folder_name(const std::string& name, const std::string& what, const std::string& where) {
  const bool safe =
      !name.empty() && name.size() <= 128 && name.front() != '.' && name.front() != '-' &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      });
  PELAB_CHECK(safe,
              "{}: {} \"{}\" cannot name a folder: use 1 to 128 letters, digits, '.', '_' and "
              "'-', not starting with '.' or '-' (it becomes <out>/<name>/)",
              where, what, name);
}

// A readable, file-name-safe label for one sweep value: "0.2", "pre", and for a plugin table its
// name and keys, e.g. "learned+init=normal+std=0.1".
std::string point_value_label(const toml::node& node, std::size_t index) {
  if (node.is_string()) return *node.value<std::string>();
  if (node.is_integer()) return std::to_string(*node.value<std::int64_t>());
  if (node.is_floating_point()) return format_number(*node.value<double>());
  if (node.is_boolean()) return *node.value<bool>() ? "true" : "false";
  if (const toml::table* table = node.as_table()) {
    std::string label;
    if (const auto* plugin = table->get("plugin"); plugin && plugin->is_string()) {
      label = *plugin->value<std::string>();
    }
    for (const auto& [key, value] : *table) {
      if (key.str() == "plugin") continue;
      const std::string part = std::string(key.str()) + "=" + point_value_label(value, index);
      label += (label.empty() ? "" : "+") + part;
    }
    return label.empty() ? fmt::format("#{}", index) : label;
  }
  return fmt::format("#{}", index);
}

std::pair<std::string, std::string> split_override(const std::string& text) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw Error(fmt::format("--set '{}': expected key=value, e.g. --set pe.init.std=0.2", text));
  }
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    return s;
  };
  return {trim(text.substr(0, equals)), trim(text.substr(equals + 1))};
}

// `--set key=value` strings as an overlay, each key below `prefix`. Values are parsed as TOML; what
// does not parse is taken as a bare string. The nodes live in `documents`.
Overlay overlay_of(const std::vector<std::string>& overrides, const std::string& prefix,
                   std::vector<toml::table>& documents) {
  documents.reserve(overrides.size());
  Overlay overlay;
  for (const auto& text_override : overrides) {
    auto [key, value] = split_override(text_override);
    const std::string origin = "--set " + text_override;
    try {
      documents.push_back(toml::parse("value = " + value, origin));
    } catch (const toml::parse_error&) {
      toml::table table;
      table.insert("value", value);
      documents.push_back(std::move(table));
    }
    overlay.entries[prefix + key] = {documents.back().get("value"), SourceLocation{origin, 0, 0}};
  }
  return overlay;
}

toml::table parse_manifest(const std::string& text, const std::string& source_name) {
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    throw Error(fmt::format("{}:{}:{}: invalid TOML: {}", source_name, begin.line, begin.column,
                            e.description()));
  }
  return root;
}

// The sweep: each key a dotted path, each value a non-empty array; keys in manifest order.
struct Axis {
  std::string key;
  const toml::array* values;
  int line, column;    // in the manifest; 0 for an axis a --set added
  std::string origin;  // the --set that gave the values, if one did
};

// The extra points: each the manifest with the keys it lists, by dotted path. A dotted key
// (`model.pe_dropout = 0.1`) names one key; an inline table (`pe = { plugin = ... }`) is a
// whole value, as a swept table is.
struct ExtraPoint {
  std::vector<std::pair<std::string, const toml::node*>> keys;
  std::string where;
};

// A manifest's sweep with the `--set` overrides applied: its axes and its extra points.
struct Sweep {
  std::vector<Axis> axes;
  // `[[sweep.point]]` tables, or `--set 'sweep.point=[{...}]'` in their place: points beside the
  // cartesian product.
  const toml::array* extra_points = nullptr;
  std::string extra_points_origin;
  std::vector<ExtraPoint> extras;
};

// `--set sweep.KEY=[values]` (or sweep."KEY") replaces the manifest's values of KEY, or adds
// KEY as an axis after the manifest's.
struct SweepOverrides {
  std::map<std::string, std::pair<const toml::array*, std::string>> swept_by_override;
  std::vector<std::string> override_axes;
};

void check_sweep_key(const std::string& name, const std::string& where) {
  const std::string section = name.substr(0, name.find('.'));
  if (section == "sweep" ||
      std::find(kSections.begin(), kSections.end(), section) == kSections.end()) {
    throw Error(
        fmt::format("{}: sweep key '{}' must be a dotted path into the manifest, such as "
                    "\"pe.init.std\" or \"train.lr\"",
                    where, name));
  }
  // The experiment section is the sweep's frame: its name is the one folder that the sweep record,
  // status and the report read, and its seeds are an axis already.
  if (section == "experiment") {
    throw Error(fmt::format(
        "{}: sweep key '{}' cannot vary: experiment.name is the one folder every run of the "
        "sweep goes to, and experiment.seeds is already an axis of every point. Give another "
        "experiment its own manifest, or run this one again with --set experiment.name=...",
        where, name));
  }
}

// The `--set sweep.*` overrides: swept keys, returned, and `sweep.point`, recorded in `sweep`.
SweepOverrides read_sweep_overrides(const Overlay& base, Sweep& sweep) {
  SweepOverrides overrides;
  for (const auto& [key, entry] : base.entries) {
    if (key.rfind("sweep.", 0) != 0) continue;
    std::string name = key.substr(6);
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"')
      name = name.substr(1, name.size() - 2);
    const std::string where = entry.second.str();
    if (name == "point") {
      sweep.extra_points = entry.first->as_array();
      sweep.extra_points_origin = where;
      PELAB_CHECK(sweep.extra_points != nullptr,
                  "{}: sweep.point is a list of points, each a table of keys, e.g. --set "
                  "'sweep.point=[{{ pe = {{ plugin = \"sinusoidal_nd\" }} }}]'",
                  where);
      continue;
    }
    check_sweep_key(name, where);
    const toml::array* values = entry.first->as_array();
    PELAB_CHECK(values != nullptr && !values->empty(),
                "{}: a sweep key needs a non-empty array of values, e.g. --set "
                "'sweep.train.lr=[0.001, 0.0003]'",
                where);
    overrides.swept_by_override[name] = {values, where};
    overrides.override_axes.push_back(name);
  }
  return overrides;
}

// The manifest's [sweep] table: its axes, in manifest order, and its [[sweep.point]]s unless a
// --set replaced them. An axis a --set also sweeps takes the --set's values and leaves
// `overrides.override_axes`.
void read_sweep_table(const toml::node& node, const std::string& source_name, const Overlay& base,
                      SweepOverrides& overrides, Sweep& sweep) {
  const toml::table* table = node.as_table();
  if (table == nullptr) {
    throw Error(fmt::format("{}:{}:{}: [sweep] must be a table of key = [values]", source_name,
                            node.source().begin.line, node.source().begin.column));
  }
  for (const auto& [key, value] : *table) {
    const auto& where = key.source().begin;
    const std::string name(key.str());
    if (name == "point") {
      if (sweep.extra_points_origin.empty()) {
        sweep.extra_points = value.as_array();
        if (sweep.extra_points == nullptr) {
          throw Error(fmt::format(
              "{}:{}:{}: sweep.point is a list of points: write each as a [[sweep.point]] "
              "table of the keys it sets",
              source_name, where.line, where.column));
        }
      }
      continue;
    }
    check_sweep_key(name, fmt::format("{}:{}:{}", source_name, where.line, where.column));
    const toml::array* values = value.as_array();
    if (values == nullptr || values->empty()) {
      throw Error(fmt::format("{}:{}:{}: sweep key '{}' needs a non-empty array of values",
                              source_name, where.line, where.column, name));
    }
    if (base.find(name)) continue;  // a --set of a swept key fixes it: no longer an axis
    std::string origin;
    if (auto it = overrides.swept_by_override.find(name); it != overrides.swept_by_override.end()) {
      std::tie(values, origin) = it->second;
      overrides.override_axes.erase(
          std::find(overrides.override_axes.begin(), overrides.override_axes.end(), name));
    }
    sweep.axes.push_back(
        {name, values, static_cast<int>(where.line), static_cast<int>(where.column), origin});
  }
  std::sort(sweep.axes.begin(), sweep.axes.end(), [](const Axis& a, const Axis& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
}

std::string axis_origin(const Axis& axis, const std::string& source_name) {
  return axis.origin.empty() ? fmt::format("{}:{}:{}", source_name, axis.line, axis.column)
                             : axis.origin;
}

void check_axes_not_nested(const std::vector<Axis>& axes, const std::string& source_name) {
  for (const auto& outer : axes) {
    for (const auto& inner : axes) {
      if (inner.key.rfind(outer.key + ".", 0) != 0) continue;
      throw Error(fmt::format(
          "{}: sweep key '{}' is inside sweep key '{}' ({}): each point would set it twice. Sweep "
          "one of them, e.g. --set 'sweep.{}=[...]' to replace the values of '{}'",
          axis_origin(inner, source_name), inner.key, outer.key, axis_origin(outer, source_name),
          outer.key, outer.key));
    }
  }
}

// Where a part of a point was written: its place in the file, or the --set that gave it.
std::string extra_point_origin(const Sweep& sweep, const std::string& source_name,
                               const toml::source_position& at) {
  return sweep.extra_points_origin.empty()
             ? fmt::format("{}:{}:{}", source_name, at.line, at.column)
             : sweep.extra_points_origin;
}

// The keys a sweep point's table sets, by dotted path; a nested (not inline) table is a level of
// the path, an inline table a whole value.
void collect_point_keys(const toml::table& level, const std::string& prefix, const Sweep& sweep,
                        const std::string& source_name, const Overlay& base, ExtraPoint& extra) {
  for (const auto& [key, value] : level) {
    const std::string path = child_path(prefix, std::string(key.str()));
    const toml::table* nested = value.as_table();
    if (nested != nullptr && !nested->is_inline()) {
      collect_point_keys(*nested, path, sweep, source_name, base, extra);
      continue;
    }
    check_sweep_key(path, extra_point_origin(sweep, source_name, key.source().begin));
    // A --set of a key fixes it in every point, as it fixes a swept key.
    if (!base.find(path)) extra.keys.emplace_back(path, &value);
  }
}

// One element of sweep.point as the keys it sets, in the order they are written.
ExtraPoint read_extra_point(const toml::node& element, const Sweep& sweep,
                            const std::string& source_name, const Overlay& base) {
  const toml::table* table = element.as_table();
  const std::string where = extra_point_origin(sweep, source_name, element.source().begin);
  PELAB_CHECK(table != nullptr,
              "{}: each sweep point is a table of the keys it sets, e.g. [[sweep.point]] "
              "then pe = {{ plugin = \"sinusoidal_nd\" }} and model.pe_dropout = 0.1",
              where);
  PELAB_CHECK(!table->empty(),
              "{}: a sweep point sets no key: give it the keys that make it a point, e.g. "
              "model.pe_dropout = 0.1",
              where);
  ExtraPoint extra{{}, where};
  collect_point_keys(*table, "", sweep, source_name, base, extra);
  // In the order they are written (a TOML table iterates its keys sorted), as the axes are.
  std::stable_sort(extra.keys.begin(), extra.keys.end(), [](const auto& a, const auto& b) {
    const auto& x = a.second->source().begin;
    const auto& y = b.second->source().begin;
    return std::tie(x.line, x.column) < std::tie(y.line, y.column);
  });
  for (const auto& [outer, outer_value] : extra.keys) {
    for (const auto& [inner, inner_value] : extra.keys) {
      PELAB_CHECK(inner.rfind(outer + ".", 0) != 0,
                  "{}: this sweep point sets '{}' inside '{}', which it also sets whole: set "
                  "one of them",
                  where, inner, outer);
    }
  }
  return extra;
}

std::vector<ExtraPoint> read_extra_points(const Sweep& sweep, const std::string& source_name,
                                          const Overlay& base) {
  std::vector<ExtraPoint> extras;
  if (sweep.extra_points == nullptr) return extras;
  for (const toml::node& element : *sweep.extra_points) {
    ExtraPoint extra = read_extra_point(element, sweep, source_name, base);
    // A point whose every key a --set fixed is the manifest's own values: nothing of its own.
    if (!extra.keys.empty()) extras.push_back(std::move(extra));
  }
  return extras;
}

// A --set inside a swept value would change every point while their names keep the manifest's
// values: `pe.init.std=0.2` under a sweep of whole `pe` tables would train sigma 0.2 in a
// folder named for sigma 2.
void check_overrides_outside_sweep(const Overlay& base, const Sweep& sweep,
                                   const std::string& source_name) {
  for (const auto& [key, entry] : base.entries) {
    if (key.rfind("sweep.", 0) == 0) continue;
    for (const auto& axis : sweep.axes) {
      if (key.rfind(axis.key + ".", 0) != 0) continue;
      throw Error(fmt::format(
          "{}: '{}' is inside '{}', which the sweep varies{}: the runs would be named for values "
          "they do not have. Fix the whole key instead (--set '{}=...'), or sweep other values "
          "(--set 'sweep.{}=[...]')",
          entry.second.str(), key, axis.key,
          axis.line > 0 ? fmt::format(" ({}:{}:{})", source_name, axis.line, axis.column) : "",
          axis.key, axis.key));
    }
    for (const auto& extra : sweep.extras) {
      for (const auto& [path, value] : extra.keys) {
        if (key.rfind(path + ".", 0) != 0) continue;
        throw Error(fmt::format(
            "{}: '{}' is inside '{}', which a sweep point sets ({}): that point would be named "
            "for a value it does not have. Fix the whole key instead (--set '{}=...')",
            entry.second.str(), key, path, extra.where, path));
      }
    }
  }
}

// A sweep that large is a slip (a range written out by a script, an axis pasted twice), and
// expanding it would take the memory of the machine before any run starts.
void check_sweep_size(const Sweep& sweep, const std::string& source_name) {
  std::size_t points = 1;
  std::vector<std::string> sizes;
  for (const auto& axis : sweep.axes) {
    points = std::min(points * axis.values->size(), kMaxRuns + 1);
    sizes.push_back(fmt::format("{} ({})", axis.values->size(), axis.key));
  }
  points += sweep.extras.size();
  if (!sweep.extras.empty()) {
    sizes.push_back(fmt::format("{} [[sweep.point]]", sweep.extras.size()));
  }
  if (points > kMaxRuns) {
    throw Error(
        fmt::format("{}: the sweep has more than {} points ({}): split it into several "
                    "manifests, or sweep fewer values",
                    source_name, kMaxRuns, fmt::join(sizes, " x ")));
  }
}

// The manifest's sweep with the `--set` overrides applied, every check of it done.
Sweep read_sweep(const toml::table& root, const std::string& source_name, const Overlay& base) {
  Sweep sweep;
  SweepOverrides overrides = read_sweep_overrides(base, sweep);
  if (const toml::node* node = root.get("sweep")) {
    read_sweep_table(*node, source_name, base, overrides, sweep);
  }
  for (const auto& name : overrides.override_axes) {
    const auto& [values, origin] = overrides.swept_by_override.at(name);
    sweep.axes.push_back({name, values, 0, 0, origin});
  }
  check_axes_not_nested(sweep.axes, source_name);
  sweep.extras = read_extra_points(sweep, source_name, base);
  check_overrides_outside_sweep(base, sweep, source_name);
  check_sweep_size(sweep, source_name);
  return sweep;
}

// Resolves points of one manifest into runs, each point with every seed, refusing two runs that
// would share a folder.
class RunCollector {
 public:
  RunCollector(const std::string& source_name, const toml::table& root, Registry& registry,
               bool swept)
      : source_name_(source_name), root_(root), registry_(registry), swept_(swept) {}

  // One point: the manifest under `overlay`, named by `labels`, run with every seed.
  void add_point(const Overlay& overlay, const std::vector<std::string>& labels) {
    const RunConfig point = resolve_point(overlay, labels);
    const auto& seeds = point.experiment_params.integers("seeds");
    if (seeds.empty()) {
      throw Error(
          fmt::format("{}: [experiment] seeds is empty: give at least one seed", source_name_));
    }
    if (runs_.size() + seeds.size() > kMaxRuns) {
      throw Error(
          fmt::format("{}: the sweep has more than {} runs ({} seeds for each point): "
                      "split it into several manifests, or sweep fewer values or seeds",
                      source_name_, kMaxRuns, seeds.size()));
    }
    for (std::int64_t seed : seeds) {
      RunConfig run = point;
      run.seed = seed;
      if (!seen_dirs_.insert(run.relative_dir()).second) {
        throw Error(
            fmt::format("{}: two runs would share the folder '{}' (a seed listed twice, a "
                        "sweep point that repeats another, or sweep values that differ only in "
                        "characters unsafe in file names)",
                        source_name_, run.relative_dir()));
      }
      runs_.push_back(std::move(run));
    }
  }

  std::vector<RunConfig> take_runs() { return std::move(runs_); }

 private:
  // The point's config with its point and experiment named (the seed not yet set).
  RunConfig resolve_point(const Overlay& overlay, const std::vector<std::string>& labels) const {
    Resolver resolver(source_name_, root_, registry_, overlay);
    RunConfig point = resolver.resolve();
    // A run's stored configuration names its point; a manifest with a sweep names its points
    // itself.
    point.point = swept_ ? fmt::format("{}", fmt::join(labels, ","))
                         : point.experiment_params.string("point");
    point.experiment_params.set("point", point.point, point.experiment_params.location("point"));
    point.experiment = point.experiment_params.string("name");
    if (point.experiment.empty()) {
      point.experiment = fs::path(source_name_).stem().string();
      check_folder_name(point.experiment,
                        "the experiment's name (the manifest's file name; set "
                        "[experiment] name)",
                        source_name_);
    } else {
      const SourceLocation& where = point.experiment_params.location("name");
      check_folder_name(point.experiment, "[experiment] name",
                        where.known() ? where.str() : source_name_);
    }
    point.experiment_params.set("name", point.experiment, point.experiment_params.location("name"));
    return point;
  }

  const std::string& source_name_;
  const toml::table& root_;
  Registry& registry_;
  const bool swept_;
  std::vector<RunConfig> runs_;
  std::set<std::string> seen_dirs_;
};

// Advances the odometer `index` over the axes, the last fastest; false when the slowest axis
// wraps (every combination done).
bool advance_odometer(std::vector<std::size_t>& index, const std::vector<Axis>& axes) {
  std::size_t axis = axes.size();
  bool advanced = false;
  while (axis > 0 && !advanced) {
    --axis;
    advanced = ++index[axis] < axes[axis].values->size();
    if (!advanced) index[axis] = 0;
  }
  return advanced;
}

// Cartesian product, the last axis varying fastest. With only [[sweep.point]]s and no axes,
// the product is empty: the manifest's own values are no point of their own.
void add_product_points(const Sweep& sweep, const Overlay& base, const std::string& source_name,
                        RunCollector& runs) {
  const std::vector<Axis>& axes = sweep.axes;
  std::vector<std::size_t> index(axes.size(), 0);
  while (!axes.empty() || sweep.extras.empty()) {
    Overlay overlay = base;
    std::vector<std::string> labels;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const toml::node* value = axes[a].values->get(index[a]);
      const auto& begin = value->source().begin;
      overlay.entries[axes[a].key] = {
          value, axes[a].origin.empty() ? SourceLocation{source_name, static_cast<int>(begin.line),
                                                         static_cast<int>(begin.column)}
                                        : SourceLocation{axes[a].origin, 0, 0}};
      labels.push_back(axes[a].key + "=" + point_value_label(*value, index[a]));
    }
    runs.add_point(overlay, labels);

    // Advance the odometer; done when the slowest axis wraps.
    if (!advance_odometer(index, axes)) break;
  }
}

// The extra points, after the product, each named for the keys it sets.
void add_extra_points(const Sweep& sweep, const Overlay& base, const std::string& source_name,
                      RunCollector& runs) {
  for (std::size_t p = 0; p < sweep.extras.size(); ++p) {
    Overlay overlay = base;
    std::vector<std::string> labels;
    for (const auto& [path, value] : sweep.extras[p].keys) {
      const auto& begin = value->source().begin;
      const SourceLocation where = sweep.extra_points_origin.empty()
                                       ? SourceLocation{source_name, static_cast<int>(begin.line),
                                                        static_cast<int>(begin.column)}
                                       : SourceLocation{sweep.extra_points_origin, 0, 0};
      overlay.entries[path] = {value, where};
      labels.push_back(path + "=" + point_value_label(*value, p));
    }
    runs.add_point(overlay, labels);
  }
}

}  // namespace

PluginSpec parse_plugin_spec(const std::string& text, PluginKind kind, Registry& registry,
                             const std::vector<std::string>& overrides,
                             const std::string& source_name) {
  // A bare name is the plugin with its defaults, as `init = "zeros"` is in a manifest.
  const bool table = text.find('{') != std::string::npos;
  const bool quoted = !text.empty() && text.front() == '"';
  const std::string key = to_string(kind);
  const std::string document =
      fmt::format("{} = {}", key, table || quoted ? text : "\"" + text + "\"");
  toml::table root;
  try {
    root = toml::parse(document, source_name);
  } catch (const toml::parse_error& e) {
    throw Error(
        fmt::format("{}: '{}' is not a plugin name or a TOML inline table such as "
                    "'{{ plugin = \"learned\", init = {{ plugin = \"zeros\" }} }}': {}",
                    source_name, text, e.description()));
  }
  std::vector<toml::table> override_documents;
  const Overlay overlay = overlay_of(overrides, key + ".", override_documents);
  return Resolver(source_name, root, registry, overlay).resolve_plugin_at(key, kind);
}

std::string relative_run_path(const std::string& point, std::int64_t seed) {
  std::string folder = point.empty() ? "default" : "";
  for (char c : point) {
    const bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                      c == '-' || c == '=' || c == '+' || c == ',';
    folder += safe ? c : '_';
  }
  return fmt::format("{}/seed-{}", folder, seed);
}

std::string RunConfig::relative_dir() const {
  return experiment + "/" + relative_run_path(point, seed);
}

std::string RunConfig::to_toml() const {
  std::string out =
      "# Resolved by pelab: every default filled in. `pelab run` accepts this file.\n";
  auto section = [&](const std::string& header, const Params& params, const std::string& plugin) {
    out += fmt::format("\n[{}]\n", header);
    if (!plugin.empty()) out += fmt::format("plugin = {}\n", format_value(plugin));
    for (const auto& [name, value] : params.values()) {
      out += fmt::format("{} = {}\n", name, format_value(value));
    }
  };
  Params experiment = experiment_params;
  experiment.set("seeds", std::vector<std::int64_t>{seed});
  experiment.set("point", point);
  section("experiment", experiment, "");
  section("task", task.params, task.name);
  section("model", model, "");
  section("pe", pe.params, pe.name);
  section("train", train, "");
  for (const auto& probe : probes) {
    out += fmt::format("\n[[probe]]\nplugin = {}\n", format_value(probe.name));
    for (const auto& [name, value] : probe.params.values()) {
      out += fmt::format("{} = {}\n", name, format_value(value));
    }
  }
  return out;
}

std::size_t Manifest::points() const {
  std::set<std::string> distinct;
  for (const auto& run : runs_)
    distinct.insert(run.point);
  return distinct.size();
}

Manifest Manifest::from_file(const std::string& path, Registry& registry,
                             const std::vector<std::string>& overrides) {
  if (!fs::exists(path)) {
    throw Error(fmt::format("manifest '{}' does not exist", path));
  }
  return from_string(read_file(path), path, registry, overrides);
}

Manifest Manifest::from_string(const std::string& text, const std::string& source_name,
                               Registry& registry, const std::vector<std::string>& overrides) {
  const toml::table root = parse_manifest(text, source_name);

  std::vector<toml::table> override_documents;
  const Overlay base = overlay_of(overrides, "", override_documents);

  Manifest manifest;
  manifest.source_ = source_name;

  const Sweep sweep = read_sweep(root, source_name, base);
  for (const auto& axis : sweep.axes)
    manifest.sweep_keys_.push_back(axis.key);

  const bool swept = !sweep.axes.empty() || !sweep.extras.empty();
  RunCollector runs(source_name, root, registry, swept);
  add_product_points(sweep, base, source_name, runs);
  add_extra_points(sweep, base, source_name, runs);
  manifest.runs_ = runs.take_runs();
  manifest.name_ = manifest.runs_.front().experiment;
  return manifest;
}

}  // namespace pelab
