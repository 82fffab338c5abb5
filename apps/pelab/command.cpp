#include "command.h"

#include <fmt/format.h>
#include <torch/version.h>

#include "pelab/base/error.h"
#include "pelab/plugins/plugin.h"
#include "pelab/plugins/registry.h"

namespace pelab::cli {

Registry GlobalOptions::make_registry() const {
  return Registry(Registry::default_search_path(plugin_folders));
}

std::optional<PluginKind> kind_option(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::optional<PluginKind> kind = parse_plugin_kind(text);
  PELAB_CHECK(kind.has_value(), "--kind '{}' is not a plugin kind: use pe, init, task or probe",
              text);
  return kind;
}

std::string version_text() {
  return fmt::format("pelab {} (plugin API {}, LibTorch {}, {})", PELAB_VERSION_STRING,
                     kPluginApiVersion, TORCH_VERSION, PELAB_CXX_ABI_TAG);
}

}  // namespace pelab::cli
