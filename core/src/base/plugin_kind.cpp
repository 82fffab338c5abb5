#include "pelab/base/plugin_kind.h"

namespace pelab {

std::string to_string(PluginKind kind) {
  switch (kind) {
    case PluginKind::kPositionalEncoding:
      return "pe";
    case PluginKind::kInitializer:
      return "init";
    case PluginKind::kTask:
      return "task";
    case PluginKind::kProbe:
      return "probe";
  }
  return "unknown";
}

std::string describe(PluginKind kind) {
  switch (kind) {
    case PluginKind::kPositionalEncoding:
      return "positional encoding";
    case PluginKind::kInitializer:
      return "initializer";
    case PluginKind::kTask:
      return "task";
    case PluginKind::kProbe:
      return "probe";
  }
  return "unknown";
}

std::optional<PluginKind> parse_plugin_kind(const std::string& short_name) {
  for (PluginKind kind : kAllPluginKinds) {
    if (to_string(kind) == short_name) return kind;
  }
  return std::nullopt;
}

}  // namespace pelab
