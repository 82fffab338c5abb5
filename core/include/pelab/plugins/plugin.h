#pragma once

// The plugin ABI. Every plugin .so exports one C-linkage entry, `pelab_plugin_info`, that returns
// a PluginInfo. The host reads the stable header (API version, LibTorch version, C++ ABI tag)
// first and trusts nothing else in the struct unless all three match its own.
//
// A plugin is written as a class plus two free functions and one registration line:
//
//   void declare(pelab::ParamSchema& schema) { schema.real("std", 1.0, "..."); }
//   std::shared_ptr<pelab::Initializer> create(const pelab::PluginContext& context) { ... }
//   PELAB_REGISTER_PLUGIN("normal", "1.0.0", "Gaussian N(mean, std^2)", declare, create)
//
// A plugin source includes <pelab/sdk.h>, which has this header and everything else a plugin uses.

#include <cstdint>
#include <memory>
#include <string>

#include <torch/version.h>
#include <boost/config.hpp>
#include <boost/dll/alias.hpp>

#include "pelab/base/export.h"
#include "pelab/base/plugin_kind.h"
#include "pelab/interfaces/initializer.h"
#include "pelab/interfaces/layout.h"
#include "pelab/interfaces/params.h"
#include "pelab/interfaces/positional_encoding.h"
#include "pelab/interfaces/probe.h"
#include "pelab/interfaces/task.h"

namespace pelab {

/// Bumped whenever anything in this header or in the four interfaces changes incompatibly.
/// 7: InitContext::block (the block whose PE an initializer fills).
/// 8: ProbeContext::model is a TrainedModel (the SDK's handle on the model), not the encoder.
/// 9: ParamSpec::used_only_when (a parameter read only under a condition of the others).
inline constexpr std::uint32_t kPluginApiVersion = 9;

#define PELAB_PLUGIN_STRINGIFY_(x) #x
#define PELAB_PLUGIN_STRINGIFY(x) PELAB_PLUGIN_STRINGIFY_(x)

/// The C++ ABI a plugin was compiled for: the Itanium C++ ABI and libstdc++'s string ABI. Types
/// such as std::string cross the boundary, so the string ABI must match the host's. The ABI's
/// revision (__GXX_ABI_VERSION) is not compared: it differs between compilers that interoperate
/// (GCC 12 says 1017, Clang always 1002) and changes only the mangling of rare templates, which
/// a mismatch turns into an undefined symbol when the plugin is loaded, not into silent errors.
#define PELAB_CXX_ABI_TAG "itanium-cxx11abi-" PELAB_PLUGIN_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)

/// The name of the exported entry.
inline constexpr const char* kPluginEntryName = "pelab_plugin_info";

class Registry;

/// What every factory receives: its validated parameters and the registry, to build nested
/// plugins (a PE's initializer, a probe's reference PE).
struct PELAB_API PluginContext {
  const Params& params;
  Registry& registry;
  /// The plugin's own .so, e.g. to find data installed beside it.
  std::string plugin_file;
  /// `<prefix>/share/pelab/<name>`: where a plugin's data files are installed.
  std::string data_dir;
};

/// The model a PE is built for.
struct PELAB_API ModelShape {
  std::int64_t d_model = 0;
  std::int64_t heads = 1;
  std::int64_t layers = 1;
  /// Which block this instance serves (0-based); -1 for a PE shared by all blocks.
  std::int64_t block = 0;
};

using CreatePositionalEncoding = std::shared_ptr<PositionalEncoding> (*)(const PluginContext&,
                                                                         const Layout&,
                                                                         const ModelShape&);
using CreateInitializer = std::shared_ptr<Initializer> (*)(const PluginContext&);
using CreateTask = std::shared_ptr<Task> (*)(const PluginContext&);
using CreateProbe = std::shared_ptr<Probe> (*)(const PluginContext&);
using DeclareParams = void (*)(ParamSchema&);

struct PluginInfo {
  // Stable header: its layout never changes, whatever the API version.
  std::uint32_t api_version;
  const char* torch_version;
  const char* cxx_abi;

  // Valid only when the stable header matches the host.
  PluginKind kind;
  const char* name;
  const char* version;
  const char* summary;
  DeclareParams declare_params;
  // Exactly the factory of `kind` is set.
  CreatePositionalEncoding create_positional_encoding;
  CreateInitializer create_initializer;
  CreateTask create_task;
  CreateProbe create_probe;
};

using PluginEntry = const PluginInfo*();

namespace detail {
inline PluginInfo plugin_info_header(PluginKind kind, const char* name, const char* version,
                                     const char* summary, DeclareParams declare) {
  return PluginInfo{kPluginApiVersion, TORCH_VERSION, PELAB_CXX_ABI_TAG, kind,    name,    version,
                    summary,           declare,       nullptr,           nullptr, nullptr, nullptr};
}
inline PluginInfo make_info(const char* n, const char* v, const char* s, DeclareParams d,
                            CreatePositionalEncoding f) {
  PluginInfo info = plugin_info_header(PluginKind::kPositionalEncoding, n, v, s, d);
  info.create_positional_encoding = f;
  return info;
}
inline PluginInfo make_info(const char* n, const char* v, const char* s, DeclareParams d,
                            CreateInitializer f) {
  PluginInfo info = plugin_info_header(PluginKind::kInitializer, n, v, s, d);
  info.create_initializer = f;
  return info;
}
inline PluginInfo make_info(const char* n, const char* v, const char* s, DeclareParams d,
                            CreateTask f) {
  PluginInfo info = plugin_info_header(PluginKind::kTask, n, v, s, d);
  info.create_task = f;
  return info;
}
inline PluginInfo make_info(const char* n, const char* v, const char* s, DeclareParams d,
                            CreateProbe f) {
  PluginInfo info = plugin_info_header(PluginKind::kProbe, n, v, s, d);
  info.create_probe = f;
  return info;
}
}  // namespace detail

}  // namespace pelab

/// Registers the plugin of this .so: one per library. The kind follows from the factory's
/// signature. NAME must match the file name `libpelab_<kind>_<NAME>.so`.
#define PELAB_REGISTER_PLUGIN(NAME, VERSION, SUMMARY, DECLARE, CREATE)       \
  namespace {                                                                \
  const ::pelab::PluginInfo* pelab_plugin_info_impl() {                      \
    static const ::pelab::PluginInfo info =                                  \
        ::pelab::detail::make_info(NAME, VERSION, SUMMARY, DECLARE, CREATE); \
    return &info;                                                            \
  }                                                                          \
  }                                                                          \
  BOOST_DLL_ALIAS(pelab_plugin_info_impl, pelab_plugin_info)
