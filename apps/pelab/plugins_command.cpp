#include "plugins_command.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "pelab/plugins/plugin.h"
#include "pelab/plugins/registry.h"

namespace pelab::cli {

namespace {

std::string shorten(const std::string& text, std::size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

void print_kind(PluginKind kind, const std::vector<DiscoveredPlugin>& found) {
  std::vector<const DiscoveredPlugin*> of_kind;
  for (const auto& entry : found) {
    if (entry.plugin != nullptr && entry.plugin->kind() == kind) of_kind.push_back(&entry);
  }
  std::sort(of_kind.begin(), of_kind.end(),
            [](const auto* a, const auto* b) { return a->plugin->name() < b->plugin->name(); });
  for (const DiscoveredPlugin* entry : of_kind) {
    const PluginInfo& info = *entry->plugin->info;
    fmt::print("{:<6} {:<20} {:<8} {:<58} {}\n", to_string(kind), info.name,
               info.version ? info.version : "", shorten(info.summary ? info.summary : "", 58),
               entry->file);
  }
}

}  // namespace

PluginsCommand::PluginsCommand(CLI::App& app, const GlobalOptions& global)
    : Command(app, "plugins", "List the plugins on the plugin path"), global_(global) {
  command_->add_option("--kind", kind_, "Only this kind: pe, init, task or probe");
}

int PluginsCommand::execute() {
  Registry registry = global_.make_registry();
  const std::optional<PluginKind> only = kind_option(kind_);
  const auto found = registry.discover();
  fmt::print("{:<6} {:<20} {:<8} {:<58} {}\n", "KIND", "NAME", "VERSION", "SUMMARY", "FILE");
  for (PluginKind kind : kAllPluginKinds) {
    if (!only || kind == *only) print_kind(kind, found);
  }
  const std::size_t listed = static_cast<std::size_t>(
      std::count_if(found.begin(), found.end(), [&](const DiscoveredPlugin& entry) {
        return entry.plugin != nullptr && (!only || entry.plugin->kind() == *only);
      }));
  fmt::print("\n{} plugins; search path: ", listed);
  for (std::size_t i = 0; i < registry.search_path().size(); ++i) {
    fmt::print("{}{}", i ? ":" : "", registry.search_path()[i]);
  }
  fmt::print("\n");
  for (const auto& entry : found) {
    if (entry.plugin != nullptr) continue;
    if (!entry.shadowed_by.empty()) {
      fmt::print("note: {} is shadowed by {} (earlier on the path)\n", entry.file,
                 entry.shadowed_by);
    } else {
      fmt::print("warning: {}\n", entry.error);
    }
  }
  return 0;
}

}  // namespace pelab::cli
