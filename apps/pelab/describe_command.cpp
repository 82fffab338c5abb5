#include "describe_command.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/plugins/registry.h"

namespace pelab::cli {

namespace {

void print_schema(const ParamSchema& schema) {
  if (schema.empty()) {
    fmt::print("  (no parameters)\n");
    return;
  }
  for (const auto& spec : schema.specs()) {
    fmt::print("  {:<22} {:<28} default {}\n", spec.name, spec.accepted(),
               format_value(spec.default_value));
    fmt::print("  {:<22} {}\n", "", spec.doc);
    if (spec.init_scale)
      fmt::print("  {:<22} (the init scale: reports draw a series against it)\n", "");
    if (!spec.used_when.empty()) fmt::print("  {:<22} (read only when {})\n", "", spec.used_when);
  }
}

const std::map<std::string, const ParamSchema*>& core_sections() {
  static const std::map<std::string, const ParamSchema*> sections = {
      {"experiment", &experiment_schema()}, {"model", &model_schema()}, {"train", &train_schema()}};
  return sections;
}

[[noreturn]] void refuse_unknown(const std::string& name, Registry& registry) {
  std::vector<std::string> all;
  for (PluginKind kind : kAllPluginKinds) {
    for (const auto& available : registry.available(kind))
      all.push_back(available);
  }
  for (const auto& [section, schema] : core_sections())
    all.push_back(section);
  std::string message = fmt::format("no plugin named '{}'", name);
  const auto near = closest_names(name, all);
  if (!near.empty()) message += fmt::format("; did you mean '{}'?", near.front());
  throw Error(message + " Run `pelab plugins` to list them.");
}

}  // namespace

DescribeCommand::DescribeCommand(CLI::App& app, const GlobalOptions& global)
    : Command(app, "describe",
              "Show a plugin's parameters (or those of a core section: experiment, model, train)"),
      global_(global) {
  command_->add_option("name", name_, "Plugin name, or experiment|model|train")->required();
  command_->add_option("--kind", kind_, "The kind, when several kinds share the name");
}

int DescribeCommand::execute() {
  const std::optional<PluginKind> only = kind_option(kind_);
  if (!only) {
    if (auto it = core_sections().find(name_); it != core_sections().end()) {
      fmt::print("[{}] (core section)\n", name_);
      print_schema(*it->second);
      return 0;
    }
  }
  Registry registry = global_.make_registry();
  std::vector<PluginKind> kinds;
  for (PluginKind kind : kAllPluginKinds) {
    if (only && kind != *only) continue;
    const auto names = registry.available(kind);
    if (std::find(names.begin(), names.end(), name_) != names.end()) kinds.push_back(kind);
  }
  if (kinds.empty()) refuse_unknown(name_, registry);
  for (PluginKind kind : kinds) {
    const LoadedPlugin& plugin = registry.get(kind, name_);
    const PluginInfo& info = *plugin.info;  // version and summary may be null, fmt takes no null
    fmt::print("{} {} {} — {}\n  file: {}\nparameters:\n", describe(kind), info.name,
               info.version ? info.version : "", info.summary ? info.summary : "", plugin.file);
    print_schema(plugin.schema);
  }
  return 0;
}

}  // namespace pelab::cli
