#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "pelab/base/export.h"
#include "pelab/base/plugin_kind.h"

namespace pelab {

/// Where a value came from: a manifest's file, line and column, a `--set` override, or a default.
struct PELAB_API SourceLocation {
  std::string file;  // empty: not from a file (a default or a command-line override)
  int line = 0;
  int column = 0;

  bool known() const { return !file.empty(); }
  /// "file:line:column", or the bare file name when the line is unknown, or "" when nothing is
  /// known.
  std::string str() const;
};

struct PluginSpec;

/// The value of one parameter. Lists are homogeneous; a nested plugin (e.g. a PE's initializer)
/// is a PluginSpec.
using ParamValue = std::variant<bool, std::int64_t, double, std::string, std::vector<double>,
                                std::vector<std::int64_t>, std::vector<std::string>,
                                std::shared_ptr<const PluginSpec>>;

enum class ParamType { kBool, kInt, kFloat, kString, kFloatList, kIntList, kStringList, kPlugin };

/// The TOML-facing name of a type ("float", "list of int", "initializer plugin", ...).
PELAB_API std::string to_string(ParamType type);

class Params;

/// One declared parameter of a plugin or of a core section.
struct PELAB_API ParamSpec {
  std::string name;
  ParamType type = ParamType::kFloat;
  ParamValue default_value;
  std::string doc;
  std::optional<double> min;         // inclusive; for numbers and every element of number lists
  std::optional<double> max;         // inclusive
  std::vector<std::string> choices;  // for strings: the allowed values, empty = any
  PluginKind plugin_kind = PluginKind::kInitializer;  // for kPlugin
  /// This number is the scale of what the plugin makes (an initializer's std, gain or bound):
  /// reports draw points that differ only in it as one series against it. At most one a schema.
  bool init_scale = false;
  /// When the parameter is read, for one that only some configurations read (a data source's
  /// options): `applies` says whether the other parameters make it read, `used_when` says so to a
  /// reader ("source = \"parcellated\""). Empty: always read.
  std::string used_when;
  std::function<bool(const Params&)> applies;

  // Chainable refinements, used while declaring a schema.
  ParamSpec& at_least(double lower) {
    min = lower;
    return *this;
  }
  ParamSpec& at_most(double upper) {
    max = upper;
    return *this;
  }
  ParamSpec& in_range(double lower, double upper) {
    min = lower;
    max = upper;
    return *this;
  }
  /// Marks the init scale (see `init_scale`); for float and int parameters.
  ParamSpec& is_init_scale() {
    init_scale = true;
    return *this;
  }

  /// Declares the parameter read only when `applies(params)` holds, described by `condition`: a
  /// manifest that sets it to anything but its default where it does not hold is refused, as an
  /// unknown key is, since the value would be silently ignored. A plugin parameter is at its
  /// default when it names the default plugin with every parameter at its own default.
  ParamSpec& used_only_when(std::string condition, std::function<bool(const Params&)> applies_to) {
    used_when = std::move(condition);
    applies = std::move(applies_to);
    return *this;
  }

  /// A one-line human description of the accepted values: "float >= 0", "one of: post, pre".
  std::string accepted() const;
};

/// The declared parameters of one plugin (or core section), in declaration order.
class PELAB_API ParamSchema {
 public:
  ParamSpec& boolean(const std::string& name, bool default_value, const std::string& doc);
  ParamSpec& integer(const std::string& name, std::int64_t default_value, const std::string& doc);
  ParamSpec& real(const std::string& name, double default_value, const std::string& doc);
  ParamSpec& string(const std::string& name, const std::string& default_value,
                    const std::string& doc);
  ParamSpec& choice(const std::string& name, const std::string& default_value,
                    std::vector<std::string> choices, const std::string& doc);
  ParamSpec& reals(const std::string& name, std::vector<double> default_value,
                   const std::string& doc);
  ParamSpec& integers(const std::string& name, std::vector<std::int64_t> default_value,
                      const std::string& doc);
  ParamSpec& strings(const std::string& name, std::vector<std::string> default_value,
                     const std::string& doc);
  /// A nested plugin of `kind`, e.g. a PE's initializer; the default is that plugin with its own
  /// defaults.
  ParamSpec& plugin(const std::string& name, PluginKind kind, const std::string& default_plugin,
                    const std::string& doc);

  const std::vector<ParamSpec>& specs() const { return specs_; }
  const ParamSpec* find(const std::string& name) const;
  /// The parameter marked as the init scale, or null.
  const ParamSpec* init_scale() const;
  std::vector<std::string> names() const;
  bool empty() const { return specs_.empty(); }
  /// Every parameter at its default: what a section or a plugin table that sets nothing resolves
  /// to.
  Params defaults() const;

 private:
  ParamSpec& add(ParamSpec spec);
  std::vector<ParamSpec> specs_;
};

/// Validated parameter values: every declared parameter has a value of its declared type.
/// Typed getters throw InternalError for an undeclared name (a plugin bug, not a user error).
class PELAB_API Params {
 public:
  void set(const std::string& name, ParamValue value, SourceLocation where = {});

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  const ParamValue& value(const std::string& name) const;
  /// Where the value was written ("manifest.toml:12:7"), or unknown for a default.
  const SourceLocation& location(const std::string& name) const;

  bool boolean(const std::string& name) const;
  std::int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;
  const std::string& string(const std::string& name) const;
  const std::vector<double>& reals(const std::string& name) const;
  const std::vector<std::int64_t>& integers(const std::string& name) const;
  const std::vector<std::string>& strings(const std::string& name) const;
  const PluginSpec& plugin(const std::string& name) const;

  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  std::map<std::string, ParamValue> values_;
  std::map<std::string, SourceLocation> locations_;
};

/// A plugin chosen by name with its validated parameters: what a manifest table resolves to.
struct PELAB_API PluginSpec {
  PluginKind kind = PluginKind::kTask;
  std::string name;
  Params params;
  SourceLocation location;  // where the table (or inline table) starts
};

/// Renders a value the way TOML writes it ("0.2", "\"post\"", "[1, 2]", "{ plugin = ... }").
PELAB_API std::string format_value(const ParamValue& value);

/// A plugin and its parameters, for messages: "learned { init = { plugin = \"normal\", ... } }".
PELAB_API std::string describe_spec(const PluginSpec& spec);
}  // namespace pelab
