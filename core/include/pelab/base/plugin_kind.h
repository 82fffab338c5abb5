#pragma once

#include <optional>
#include <string>

#include "pelab/base/export.h"

namespace pelab {

/// The four kinds of plugin. The numeric values are part of the plugin ABI: never reorder.
enum class PluginKind : int { kPositionalEncoding = 0, kInitializer = 1, kTask = 2, kProbe = 3 };

inline constexpr PluginKind kAllPluginKinds[] = {PluginKind::kPositionalEncoding,
                                                 PluginKind::kInitializer, PluginKind::kTask,
                                                 PluginKind::kProbe};

/// The short name used in plugin file names and the CLI: "pe", "init", "task", "probe".
PELAB_API std::string to_string(PluginKind kind);
/// The readable name: "positional encoding", "initializer", "task", "probe".
PELAB_API std::string describe(PluginKind kind);
/// Parses a short name; nullopt if it is not one.
PELAB_API std::optional<PluginKind> parse_plugin_kind(const std::string& short_name);

}  // namespace pelab
