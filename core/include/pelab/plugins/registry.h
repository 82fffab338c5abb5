#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pelab/base/error.h"
#include "pelab/base/export.h"
#include "pelab/base/plugin_kind.h"
#include "pelab/interfaces/params.h"
#include "pelab/plugins/plugin.h"

namespace pelab {

/// Why a plugin could not be loaded. Each reason has its own message.
enum class LoadFailure {
  kFileNotFound,
  kNotASharedLibrary,
  kCannotLoad,
  kNoEntry,
  kApiVersionMismatch,
  kTorchVersionMismatch,
  kAbiMismatch,
  kMalformedInfo,
  kDuplicateName,
  kUnknownName,
};

PELAB_API std::string to_string(LoadFailure failure);

class PELAB_API PluginLoadError : public Error {
 public:
  PluginLoadError(LoadFailure failure, std::string file, const std::string& message)
      : Error(message), failure_(failure), file_(std::move(file)) {}
  LoadFailure failure() const { return failure_; }
  const std::string& file() const { return file_; }

 private:
  LoadFailure failure_;
  std::string file_;
};

/// A loaded plugin: its descriptor, the file it came from and its parameter schema.
struct PELAB_API LoadedPlugin {
  const PluginInfo* info = nullptr;
  std::string file;
  ParamSchema schema;

  PluginKind kind() const { return info->kind; }
  std::string name() const { return info->name; }
};

/// One entry of Registry::discover(): a plugin file on the search path, loaded or not.
struct PELAB_API DiscoveredPlugin {
  std::string file;
  const LoadedPlugin* plugin = nullptr;  // null when loading failed
  std::string error;                     // why, when it failed
  std::string shadowed_by;               // a file earlier on the path with the same name
};

/// Finds, loads and instantiates plugins by kind and name. A plugin is the file
/// `libpelab_<kind>_<name>.so` in the first folder of the search path that has it; only that file
/// is loaded. Libraries are never unloaded: torch's static registrations and deleters live in them.
class PELAB_API Registry {
 public:
  explicit Registry(std::vector<std::string> search_path);

  /// The search path: the `--plugin-path` folders, then `PELAB_PLUGIN_PATH` (colon-separated),
  /// then the plugin folder beside libpelab_core (build tree or install prefix).
  static std::vector<std::string> default_search_path(
      const std::vector<std::string>& command_line_folders = {});
  /// `<libdir>/pelab/plugins` next to the libpelab_core.so in use.
  static std::string builtin_plugin_folder();

  const std::vector<std::string>& search_path() const { return search_path_; }

  /// Loads (once) and returns the plugin; throws PluginLoadError.
  const LoadedPlugin& get(PluginKind kind, const std::string& name);
  /// Loads one file by path, whatever its name. Throws PluginLoadError.
  const LoadedPlugin& load_file(const std::string& file);
  /// Every plugin file on the search path (optionally of one kind), loading each; failures are
  /// reported in the entries rather than thrown.
  std::vector<DiscoveredPlugin> discover();
  /// Names of the plugin files of `kind` on the search path, without loading them.
  std::vector<std::string> available(PluginKind kind) const;

  const ParamSchema& schema(PluginKind kind, const std::string& name) {
    return get(kind, name).schema;
  }
  /// The plugin with every parameter at its default (nested plugins too): what a manifest table
  /// holding only `plugin = "<name>"` resolves to.
  PluginSpec default_spec(PluginKind kind, const std::string& name);

  std::shared_ptr<PositionalEncoding> create_positional_encoding(const PluginSpec& spec,
                                                                 const Layout& layout,
                                                                 const ModelShape& shape);
  std::shared_ptr<Initializer> create_initializer(const PluginSpec& spec);
  std::shared_ptr<Task> create_task(const PluginSpec& spec);
  std::shared_ptr<Probe> create_probe(const PluginSpec& spec);

 private:
  const LoadedPlugin& checked(const PluginSpec& spec, PluginKind expected);
  std::string find_file(PluginKind kind, const std::string& name) const;

  std::vector<std::string> search_path_;
  std::map<std::string, std::unique_ptr<LoadedPlugin>> by_file_;  // canonical path ->
  std::map<std::pair<PluginKind, std::string>, const LoadedPlugin*> by_name_;
};

/// The plugin file name for kind and name: "libpelab_pe_learned.so".
PELAB_API std::string plugin_file_name(PluginKind kind, const std::string& name);

/// Up to `count` candidates closest to `word` by edit distance (for "did you mean").
PELAB_API std::vector<std::string> closest_names(const std::string& word,
                                                 const std::vector<std::string>& candidates,
                                                 std::size_t count = 3);

}  // namespace pelab
