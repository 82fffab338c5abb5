#include "pelab/interfaces/params.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/io/file_io.h"

namespace pelab {

std::string SourceLocation::str() const {
  if (file.empty()) return "";
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string to_string(ParamType type) {
  switch (type) {
    case ParamType::kBool:
      return "bool";
    case ParamType::kInt:
      return "int";
    case ParamType::kFloat:
      return "float";
    case ParamType::kString:
      return "string";
    case ParamType::kFloatList:
      return "list of float";
    case ParamType::kIntList:
      return "list of int";
    case ParamType::kStringList:
      return "list of string";
    case ParamType::kPlugin:
      return "plugin";
  }
  return "unknown";
}

std::string ParamSpec::accepted() const {
  std::string text = type == ParamType::kPlugin
                         ? fmt::format("{} plugin (\"name\" or {{ plugin = \"name\", ... }})",
                                       describe(plugin_kind))
                         : to_string(type);
  if (!choices.empty()) {
    std::string joined;
    for (const auto& choice : choices)
      joined += (joined.empty() ? "" : ", ") + choice;
    return "one of: " + joined;
  }
  const bool integral = type == ParamType::kInt || type == ParamType::kIntList;
  auto bound = [&](double v) {
    return integral ? fmt::format("{}", static_cast<long long>(v)) : format_number(v);
  };
  if (min && max) return fmt::format("{} in [{}, {}]", text, bound(*min), bound(*max));
  if (min) return fmt::format("{} >= {}", text, bound(*min));
  if (max) return fmt::format("{} <= {}", text, bound(*max));
  return text;
}

namespace {

// A declared parameter with no bounds, choices or condition yet (the refinements add them).
ParamSpec declared(const std::string& name, ParamType type, ParamValue value,
                   const std::string& doc) {
  ParamSpec spec;
  spec.name = name;
  spec.type = type;
  spec.default_value = std::move(value);
  spec.doc = doc;
  return spec;
}

}  // namespace

ParamSpec& ParamSchema::add(ParamSpec spec) {
  PELAB_INTERNAL_ASSERT(find(spec.name) == nullptr, "parameter '{}' declared twice", spec.name);
  PELAB_INTERNAL_ASSERT(spec.name != "plugin", "'plugin' is reserved for the plugin's name");
  specs_.push_back(std::move(spec));
  return specs_.back();
}

ParamSpec& ParamSchema::boolean(const std::string& name, bool value, const std::string& doc) {
  return add(declared(name, ParamType::kBool, value, doc));
}
ParamSpec& ParamSchema::integer(const std::string& name, std::int64_t value,
                                const std::string& doc) {
  return add(declared(name, ParamType::kInt, value, doc));
}
ParamSpec& ParamSchema::real(const std::string& name, double value, const std::string& doc) {
  return add(declared(name, ParamType::kFloat, value, doc));
}
ParamSpec& ParamSchema::string(const std::string& name, const std::string& value,
                               const std::string& doc) {
  return add(declared(name, ParamType::kString, value, doc));
}
ParamSpec& ParamSchema::choice(const std::string& name, const std::string& value,
                               std::vector<std::string> choices, const std::string& doc) {
  PELAB_INTERNAL_ASSERT(std::find(choices.begin(), choices.end(), value) != choices.end(),
                        "default '{}' of '{}' is not one of its choices", value, name);
  ParamSpec spec = declared(name, ParamType::kString, value, doc);
  spec.choices = std::move(choices);
  return add(std::move(spec));
}
ParamSpec& ParamSchema::reals(const std::string& name, std::vector<double> value,
                              const std::string& doc) {
  return add(declared(name, ParamType::kFloatList, std::move(value), doc));
}
ParamSpec& ParamSchema::integers(const std::string& name, std::vector<std::int64_t> value,
                                 const std::string& doc) {
  return add(declared(name, ParamType::kIntList, std::move(value), doc));
}
ParamSpec& ParamSchema::strings(const std::string& name, std::vector<std::string> value,
                                const std::string& doc) {
  return add(declared(name, ParamType::kStringList, std::move(value), doc));
}
ParamSpec& ParamSchema::plugin(const std::string& name, PluginKind kind,
                               const std::string& default_plugin, const std::string& doc) {
  auto spec = std::make_shared<PluginSpec>();
  spec->kind = kind;
  spec->name = default_plugin;
  ParamSpec declared_spec =
      declared(name, ParamType::kPlugin, std::shared_ptr<const PluginSpec>(spec), doc);
  declared_spec.plugin_kind = kind;
  return add(std::move(declared_spec));
}

const ParamSpec* ParamSchema::find(const std::string& name) const {
  for (const auto& spec : specs_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const ParamSpec* ParamSchema::init_scale() const {
  const ParamSpec* marked = nullptr;
  for (const auto& spec : specs_) {
    if (!spec.init_scale) continue;
    PELAB_CHECK(spec.type == ParamType::kFloat || spec.type == ParamType::kInt,
                "parameter '{}' is marked as the init scale but is a {}; mark a float or an int",
                spec.name, to_string(spec.type));
    PELAB_CHECK(marked == nullptr,
                "parameters '{}' and '{}' are both marked as the init scale; mark one",
                marked ? marked->name : "", spec.name);
    marked = &spec;
  }
  return marked;
}

std::vector<std::string> ParamSchema::names() const {
  std::vector<std::string> result;
  for (const auto& spec : specs_)
    result.push_back(spec.name);
  return result;
}

Params ParamSchema::defaults() const {
  Params params;
  for (const auto& spec : specs_)
    params.set(spec.name, spec.default_value);
  return params;
}

void Params::set(const std::string& name, ParamValue value, SourceLocation where) {
  values_[name] = std::move(value);
  locations_[name] = std::move(where);
}

const ParamValue& Params::value(const std::string& name) const {
  auto it = values_.find(name);
  PELAB_INTERNAL_ASSERT(it != values_.end(), "parameter '{}' was never declared", name);
  return it->second;
}

const SourceLocation& Params::location(const std::string& name) const {
  static const SourceLocation unknown;
  auto it = locations_.find(name);
  return it == locations_.end() ? unknown : it->second;
}

namespace {
template <typename T>
const T& get(const Params& params, const std::string& name, const char* type) {
  const T* value = std::get_if<T>(&params.value(name));
  PELAB_INTERNAL_ASSERT(value != nullptr, "parameter '{}' is not a {}", name, type);
  return *value;
}
}  // namespace

bool Params::boolean(const std::string& name) const {
  return get<bool>(*this, name, "bool");
}
std::int64_t Params::integer(const std::string& name) const {
  return get<std::int64_t>(*this, name, "int");
}
double Params::real(const std::string& name) const {
  return get<double>(*this, name, "float");
}
const std::string& Params::string(const std::string& name) const {
  return get<std::string>(*this, name, "string");
}
const std::vector<double>& Params::reals(const std::string& name) const {
  return get<std::vector<double>>(*this, name, "list of float");
}
const std::vector<std::int64_t>& Params::integers(const std::string& name) const {
  return get<std::vector<std::int64_t>>(*this, name, "list of int");
}
const std::vector<std::string>& Params::strings(const std::string& name) const {
  return get<std::vector<std::string>>(*this, name, "list of string");
}
const PluginSpec& Params::plugin(const std::string& name) const {
  return *get<std::shared_ptr<const PluginSpec>>(*this, name, "plugin");
}

namespace {
std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        // TOML forbids raw control characters in a basic string.
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string format_real(double value) {
  std::string text = format_number(value);
  // TOML needs a '.' or an exponent to read a float back as a float.
  if (std::isfinite(value) && text.find_first_of(".eE") == std::string::npos) text += ".0";
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return text;
}

template <typename T, typename F>
std::string format_list(const std::vector<T>& values, F format) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + format(values[i]);
  return out + "]";
}
}  // namespace

std::string format_value(const ParamValue& value) {
  struct Visitor {
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(std::int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return format_real(v); }
    std::string operator()(const std::string& v) const { return quote(v); }
    std::string operator()(const std::vector<double>& v) const {
      return format_list(v, format_real);
    }
    std::string operator()(const std::vector<std::int64_t>& v) const {
      return format_list(v, [](std::int64_t x) { return std::to_string(x); });
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return format_list(v, quote);
    }
    std::string operator()(const std::shared_ptr<const PluginSpec>& spec) const {
      std::string out = "{ plugin = " + quote(spec->name);
      for (const auto& [name, nested] : spec->params.values()) {
        out += ", " + name + " = " + format_value(nested);
      }
      return out + " }";
    }
  };
  return std::visit(Visitor{}, value);
}

std::string describe_spec(const PluginSpec& spec) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : spec.params.values())
    parts.push_back(fmt::format("{} = {}", name, format_value(value)));
  return parts.empty() ? spec.name : fmt::format("{} {{ {} }}", spec.name, fmt::join(parts, ", "));
}

}  // namespace pelab
