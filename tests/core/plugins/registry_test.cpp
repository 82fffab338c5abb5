// The registry against the fixture plugins of tests/fixtures: every LoadFailure with the file that
// provokes it, the search path's order, discovery that reports rather than throws, lazy loading.

#include "pelab/plugins/registry.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "test_support.h"

namespace pelab {
namespace {

using ::pelab::test::fixture_plugin_dir;
using ::pelab::test::ScopedEnv;
using ::pelab::test::ScratchDir;
using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = boost::filesystem;

// Runs `call`, which must throw a PluginLoadError of `expected`; returns its message.
template <typename F>
std::string load_error(F&& call, LoadFailure expected) {
  try {
    call();
  } catch (const PluginLoadError& e) {
    EXPECT_EQ(to_string(e.failure()), to_string(expected)) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a PluginLoadError (" << to_string(expected) << ")";
  return "";
}

std::string builtin() {
  return Registry::builtin_plugin_folder();
}

// Whether a shared library whose path ends with `file_name` is mapped into this process.
bool is_mapped(const std::string& file_name) {
  return test::slurp("/proc/self/maps").find("/" + file_name) != std::string::npos;
}

TEST(RegistryLoadFailure, ApiVersionNamesBothVersions) {
  Registry registry({fixture_plugin_dir()});
  const std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "wrong_api"); },
                 LoadFailure::kApiVersionMismatch);
  EXPECT_THAT(message, HasSubstr("libpelab_pe_wrong_api.so"));
  EXPECT_THAT(message, HasSubstr("version 999"));
  EXPECT_THAT(message, HasSubstr(fmt::format("version {}", kPluginApiVersion)));
  EXPECT_THAT(message, HasSubstr("rebuild"));
}

TEST(RegistryLoadFailure, ErrorCarriesFailureAndFile) {
  Registry registry({fixture_plugin_dir()});
  try {
    registry.get(PluginKind::kPositionalEncoding, "wrong_api");
    FAIL() << "no exception";
  } catch (const PluginLoadError& e) {
    EXPECT_EQ(e.failure(), LoadFailure::kApiVersionMismatch);
    EXPECT_EQ(fs::path(e.file()).filename().string(), "libpelab_pe_wrong_api.so");
  }
  // A PluginLoadError is a pelab::Error: the CLI reports it as a user error.
  EXPECT_THROW(registry.get(PluginKind::kPositionalEncoding, "wrong_api"), Error);
}

TEST(RegistryLoadFailure, TorchVersionNamesBothVersions) {
  Registry registry({fixture_plugin_dir()});
  const std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "wrong_torch"); },
                 LoadFailure::kTorchVersionMismatch);
  EXPECT_THAT(message, HasSubstr("LibTorch 0.0.1-fixture"));
  EXPECT_THAT(message, HasSubstr(std::string("LibTorch ") + TORCH_VERSION));
}

TEST(RegistryLoadFailure, AbiNamesBothTags) {
  Registry registry({fixture_plugin_dir()});
  const std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "wrong_abi"); },
                 LoadFailure::kAbiMismatch);
  EXPECT_THAT(message, HasSubstr("'itanium-0-cxx11abi-fixture'"));
  EXPECT_THAT(message, HasSubstr(std::string("'") + PELAB_CXX_ABI_TAG + "'"));
}

TEST(RegistryLoadFailure, LibraryWithoutEntry) {
  Registry registry({fixture_plugin_dir()});
  const std::string message = load_error(
      [&] { registry.get(PluginKind::kPositionalEncoding, "no_entry"); }, LoadFailure::kNoEntry);
  EXPECT_THAT(message, HasSubstr("libpelab_pe_no_entry.so"));
  EXPECT_THAT(message, HasSubstr(kPluginEntryName));
  EXPECT_THAT(message, HasSubstr("PELAB_REGISTER_PLUGIN"));
}

// The entry is checked before anything is called: a null pointer or a function under its name,
// or an entry that returns a pointer outside the plugin, is an error naming the file (the first
// two were a SIGSEGV in `pelab plugins`).
TEST(RegistryLoadFailure, AnEntryThatIsNotTheEntryIsRefusedBeforeItIsCalled) {
  Registry registry({fixture_plugin_dir()});
  std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "entry_is_null"); },
                 LoadFailure::kMalformedInfo);
  EXPECT_THAT(message, HasSubstr("libpelab_pe_entry_is_null.so': its 'pelab_plugin_info' holds "
                                 "a null pointer, not the entry"));
  message = load_error([&] { registry.get(PluginKind::kPositionalEncoding, "entry_is_function"); },
                       LoadFailure::kMalformedInfo);
  EXPECT_THAT(message, HasSubstr("its 'pelab_plugin_info' is a function, not the entry"));
  message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "entry_returns_stray"); },
                 LoadFailure::kMalformedInfo);
  EXPECT_THAT(message, HasSubstr("libpelab_pe_entry_returns_stray.so"));
  EXPECT_THAT(message, HasSubstr("returned a pointer outside the plugin"));
}

// A library the plugin needs and the loader cannot find is named, with what to do; Boost.DLL's
// error code alone said "Bad file descriptor".
TEST(RegistryLoadFailure, AMissingDependencyIsNamed) {
  Registry registry({fixture_plugin_dir()});
  const std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "needs_missing"); },
                 LoadFailure::kCannotLoad);
  EXPECT_THAT(message, HasSubstr("libpelab_pe_needs_missing.so' cannot be loaded: it needs "
                                 "libpelab_fixture_missing_dependency.so, which the dynamic "
                                 "loader cannot find"));
  EXPECT_THAT(message, HasSubstr("LD_LIBRARY_PATH"));
  EXPECT_THAT(message, Not(HasSubstr("Bad file descriptor")));
}

TEST(RegistryLoadFailure, TextFileIsNotASharedLibrary) {
  Registry registry({fixture_plugin_dir()});
  const std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "not_a_library"); },
                 LoadFailure::kNotASharedLibrary);
  EXPECT_THAT(message, HasSubstr("libpelab_pe_not_a_library.so"));
  EXPECT_THAT(message, HasSubstr("not a shared library"));
}

TEST(RegistryLoadFailure, MissingFile) {
  Registry registry({});
  const std::string message =
      load_error([&] { registry.load_file("/nonexistent/pelab/libpelab_pe_gone.so"); },
                 LoadFailure::kFileNotFound);
  EXPECT_THAT(message, HasSubstr("/nonexistent/pelab/libpelab_pe_gone.so"));
}

TEST(RegistryLoadFailure, ElfThatCannotBeLoaded) {
  // An ELF magic followed by nothing valid: past the header check, refused by the loader.
  ScratchDir dir;
  {
    std::ofstream out(dir / "libpelab_pe_truncated.so", std::ios::binary);
    out << "\x7f"
           "ELF"
        << std::string(60, '\0');
  }
  Registry registry({dir.path()});
  const std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "truncated"); },
                 LoadFailure::kCannotLoad);
  EXPECT_THAT(message, HasSubstr("libpelab_pe_truncated.so"));
  EXPECT_THAT(message, HasSubstr("ldd -r"));
}

TEST(RegistryLoadFailure, FileNameAndDeclaredNameDisagree) {
  Registry registry({fixture_plugin_dir()});
  const std::string message =
      load_error([&] { registry.get(PluginKind::kPositionalEncoding, "misnamed"); },
                 LoadFailure::kMalformedInfo);
  EXPECT_THAT(message, HasSubstr("'misnamed'"));
  EXPECT_THAT(message, HasSubstr("'declared_name'"));
}

TEST(RegistryLoadFailure, FileNameAndDeclaredKindDisagree) {
  Registry registry({fixture_plugin_dir()});
  const std::string message = load_error(
      [&] { registry.get(PluginKind::kInitializer, "wrong_kind"); }, LoadFailure::kMalformedInfo);
  EXPECT_THAT(message, HasSubstr("initializer plugin 'wrong_kind'"));
  EXPECT_THAT(message, HasSubstr("positional encoding plugin 'wrong_kind'"));
}

TEST(RegistryLoadFailure, SecondPluginWithTheSameName) {
  // Two correctly named files declaring pe 'none', in different folders: get() only ever loads
  // the first on the path, but loading the second by path is a duplicate.
  Registry registry({builtin(), fixture_plugin_dir("shadow")});
  const LoadedPlugin& none = registry.get(PluginKind::kPositionalEncoding, "none");
  const std::string second = fixture_plugin_dir("shadow") + "/libpelab_pe_none.so";
  const std::string message =
      load_error([&] { registry.load_file(second); }, LoadFailure::kDuplicateName);
  EXPECT_THAT(message, HasSubstr(second));
  EXPECT_THAT(message, HasSubstr(none.file));
  EXPECT_THAT(message, HasSubstr("'none'"));
  // The first one stays in place.
  EXPECT_EQ(&registry.get(PluginKind::kPositionalEncoding, "none"), &none);
  EXPECT_STREQ(none.info->version, "1.0.0");
}

TEST(RegistryLoadFailure, UnknownNameSuggestsTheClosest) {
  Registry registry({builtin()});
  const std::string message = load_error(
      [&] { registry.get(PluginKind::kPositionalEncoding, "lerned"); }, LoadFailure::kUnknownName);
  EXPECT_THAT(message, HasSubstr("'lerned'"));
  EXPECT_THAT(message, HasSubstr("libpelab_pe_lerned.so"));
  EXPECT_THAT(message, HasSubstr(builtin()));
  EXPECT_THAT(message, HasSubstr("Did you mean learned?"));
  EXPECT_THAT(message, HasSubstr("pelab plugins"));
}

TEST(RegistryLoadFailure, UnknownNameLooksOnlyAtItsKind) {
  // 'normal' is an initializer: as a PE it is unknown, and no PE is close to it.
  Registry registry({builtin()});
  const std::string message = load_error(
      [&] { registry.get(PluginKind::kPositionalEncoding, "normal"); }, LoadFailure::kUnknownName);
  EXPECT_THAT(message, Not(HasSubstr("Did you mean")));
  EXPECT_NO_THROW(registry.get(PluginKind::kInitializer, "normal"));
}

TEST(RegistryLoadFailure, EmptySearchPathIsSaidSo) {
  Registry registry({});
  const std::string message = load_error(
      [&] { registry.get(PluginKind::kPositionalEncoding, "none"); }, LoadFailure::kUnknownName);
  EXPECT_THAT(message, HasSubstr("(empty search path)"));
}

TEST(RegistryLoadFailure, EveryFailureHasItsOwnName) {
  const std::vector<LoadFailure> all = {
      LoadFailure::kFileNotFound,       LoadFailure::kNotASharedLibrary,
      LoadFailure::kCannotLoad,         LoadFailure::kNoEntry,
      LoadFailure::kApiVersionMismatch, LoadFailure::kTorchVersionMismatch,
      LoadFailure::kAbiMismatch,        LoadFailure::kMalformedInfo,
      LoadFailure::kDuplicateName,      LoadFailure::kUnknownName};
  std::vector<std::string> names;
  for (LoadFailure failure : all) {
    const std::string name = to_string(failure);
    EXPECT_NE(name, "unknown failure");
    EXPECT_EQ(std::count(names.begin(), names.end(), name), 0) << name;
    names.push_back(name);
  }
}

// A file whose name promises one plugin but declares another must not take that other name over:
// after the failed get(), the real plugin of that name still loads from its own file.
TEST(RegistryLoadFailure, MisnamedFileDoesNotHijackTheNameItDeclares) {
  Registry registry({fixture_plugin_dir(), builtin()});
  load_error([&] { registry.get(PluginKind::kPositionalEncoding, "second_none"); },
             LoadFailure::kMalformedInfo);
  load_error([&] { registry.load_file(fixture_plugin_dir("libpelab_pe_second_none.so")); },
             LoadFailure::kMalformedInfo);
  const LoadedPlugin& none = registry.get(PluginKind::kPositionalEncoding, "none");
  EXPECT_EQ(fs::path(none.file).parent_path(), fs::canonical(builtin()));
  EXPECT_STREQ(none.info->version, "1.0.0");
}

TEST(RegistrySearchPath, CommandLineThenEnvironmentThenBuiltin) {
  ScopedEnv env("PELAB_PLUGIN_PATH", "/env/one::/env/two:");
  EXPECT_EQ(Registry::default_search_path({"/cli/a", "/cli/b"}),
            (std::vector<std::string>{"/cli/a", "/cli/b", "/env/one", "/env/two", builtin()}));
}

TEST(RegistrySearchPath, WithoutEnvironmentOnlyBuiltin) {
  ScopedEnv env("PELAB_PLUGIN_PATH", nullptr);
  EXPECT_EQ(Registry::default_search_path(), (std::vector<std::string>{builtin()}));
  ScopedEnv empty("PELAB_PLUGIN_PATH", "");
  EXPECT_EQ(Registry::default_search_path(), (std::vector<std::string>{builtin()}));
}

TEST(RegistrySearchPath, BuiltinFolderIsBesideTheCore) {
  // The build tree mirrors the install layout: <libdir>/pelab/plugins.
  EXPECT_EQ(fs::path(builtin()).filename().string(), "plugins");
  EXPECT_EQ(fs::path(builtin()).parent_path().filename().string(), "pelab");
  EXPECT_TRUE(fs::is_regular_file(fs::path(builtin()) / "libpelab_pe_learned.so"));
}

TEST(RegistrySearchPath, FirstFolderWins) {
  Registry ab({fixture_plugin_dir("order_a"), fixture_plugin_dir("order_b")});
  EXPECT_STREQ(ab.get(PluginKind::kPositionalEncoding, "ordered").info->version, "a");
  Registry ba({fixture_plugin_dir("order_b"), fixture_plugin_dir("order_a")});
  EXPECT_STREQ(ba.get(PluginKind::kPositionalEncoding, "ordered").info->version, "b");
}

TEST(RegistrySearchPath, CommandLineBeatsEnvironment) {
  ScopedEnv env("PELAB_PLUGIN_PATH", fixture_plugin_dir("order_b").c_str());
  Registry registry(Registry::default_search_path({fixture_plugin_dir("order_a")}));
  EXPECT_STREQ(registry.get(PluginKind::kPositionalEncoding, "ordered").info->version, "a");
}

TEST(RegistrySearchPath, EnvironmentBeatsBuiltin) {
  ScopedEnv env("PELAB_PLUGIN_PATH", fixture_plugin_dir("shadow").c_str());
  Registry registry(Registry::default_search_path());
  const LoadedPlugin& none = registry.get(PluginKind::kPositionalEncoding, "none");
  EXPECT_STREQ(none.info->version, "shadow");
  // Only the first file is loaded: the built-in one is not even looked at.
  EXPECT_EQ(fs::path(none.file).parent_path(), fs::canonical(fixture_plugin_dir("shadow")));
}

TEST(RegistrySearchPath, CommandLineBeatsBuiltin) {
  ScopedEnv env("PELAB_PLUGIN_PATH", nullptr);
  Registry registry(Registry::default_search_path({fixture_plugin_dir("shadow")}));
  EXPECT_STREQ(registry.get(PluginKind::kPositionalEncoding, "none").info->version, "shadow");
  // Other plugins still come from the built-in folder.
  EXPECT_EQ(fs::path(registry.get(PluginKind::kPositionalEncoding, "learned").file).parent_path(),
            fs::canonical(builtin()));
}

TEST(RegistryDiscover, ReportsBrokenFilesInsteadOfThrowing) {
  Registry registry({fixture_plugin_dir(), builtin()});
  std::vector<DiscoveredPlugin> found;
  ASSERT_NO_THROW(found = registry.discover());

  std::map<std::string, const DiscoveredPlugin*> by_name;
  for (const auto& entry : found)
    by_name[fs::path(entry.file).filename().string()] = &entry;
  const std::map<std::string, std::string> broken = {
      {"libpelab_pe_wrong_api.so", "999"},
      {"libpelab_pe_wrong_torch.so", "0.0.1-fixture"},
      {"libpelab_pe_wrong_abi.so", "itanium-0-cxx11abi-fixture"},
      {"libpelab_pe_no_entry.so", kPluginEntryName},
      {"libpelab_pe_entry_is_null.so", "a null pointer"},
      {"libpelab_pe_entry_is_function.so", "is a function"},
      {"libpelab_pe_entry_returns_stray.so", "outside the plugin"},
      {"libpelab_pe_not_a_library.so", "not a shared library"},
      {"libpelab_pe_needs_missing.so", "libpelab_fixture_missing_dependency.so"},
      {"libpelab_pe_misnamed.so", "declared_name"},
      {"libpelab_pe_second_none.so", "'none'"},
      {"libpelab_init_wrong_kind.so", "positional encoding"},
  };
  for (const auto& [file, reason] : broken) {
    ASSERT_TRUE(by_name.count(file)) << file;
    const DiscoveredPlugin& entry = *by_name[file];
    EXPECT_EQ(entry.plugin, nullptr) << file;
    EXPECT_THAT(entry.error, HasSubstr(reason)) << file;
    EXPECT_TRUE(entry.shadowed_by.empty()) << file;
  }
  for (const char* file : {"libpelab_pe_learned.so", "libpelab_pe_none.so",
                           "libpelab_init_normal.so", "libpelab_probe_pe_norm.so"}) {
    ASSERT_TRUE(by_name.count(file)) << file;
    EXPECT_NE(by_name[file]->plugin, nullptr) << file << ": " << by_name[file]->error;
    EXPECT_TRUE(by_name[file]->error.empty()) << file;
  }
  // Every plugin that did load is the one in its own file.
  for (const auto& entry : found) {
    if (entry.plugin == nullptr) continue;
    EXPECT_EQ(entry.plugin->file, fs::canonical(entry.file).string());
    EXPECT_EQ(plugin_file_name(entry.plugin->kind(), entry.plugin->name()),
              fs::path(entry.file).filename().string());
  }
}

TEST(RegistryDiscover, MarksShadowedFilesWithoutLoadingThem) {
  Registry registry({fixture_plugin_dir("shadow"), builtin()});
  const auto found = registry.discover();
  const std::string shadow = fixture_plugin_dir("shadow") + "/libpelab_pe_none.so";
  int nones = 0;
  for (const auto& entry : found) {
    if (fs::path(entry.file).filename() != "libpelab_pe_none.so") continue;
    ++nones;
    if (entry.file == shadow) {
      ASSERT_NE(entry.plugin, nullptr);
      EXPECT_STREQ(entry.plugin->info->version, "shadow");
    } else {
      EXPECT_EQ(entry.shadowed_by, shadow);
      EXPECT_EQ(entry.plugin, nullptr);
      EXPECT_TRUE(entry.error.empty());
    }
  }
  EXPECT_EQ(nones, 2);
}

TEST(RegistryDiscover, IgnoresFilesThatAreNotNamedLikePlugins) {
  ScratchDir dir;
  for (const char* name : {"libpelab_pe.so", "libfoo.so", "libpelab_colour_x.so", "README"}) {
    std::ofstream(dir / name) << "not a plugin";
  }
  Registry registry({dir.path(), "/nonexistent/folder"});
  EXPECT_TRUE(registry.discover().empty());
  EXPECT_TRUE(registry.available(PluginKind::kPositionalEncoding).empty());
}

TEST(RegistryLaziness, GetLoadsOnlyThePluginAskedFor) {
  Registry registry({fixture_plugin_dir("lazy"), builtin()});
  EXPECT_FALSE(is_mapped("libpelab_pe_lazy.so"));
  // Listing names does not load anything either.
  const auto names = registry.available(PluginKind::kPositionalEncoding);
  EXPECT_NE(std::find(names.begin(), names.end(), "lazy"), names.end());
  registry.get(PluginKind::kPositionalEncoding, "none");
  EXPECT_FALSE(is_mapped("libpelab_pe_lazy.so"));
  registry.get(PluginKind::kPositionalEncoding, "lazy");
  EXPECT_TRUE(is_mapped("libpelab_pe_lazy.so"));
}

TEST(RegistryLaziness, BrokenFilesBesideTheWantedOneDoNotMatter) {
  Registry registry({fixture_plugin_dir(), builtin()});
  EXPECT_NO_THROW(registry.get(PluginKind::kPositionalEncoding, "learned"));
  EXPECT_NO_THROW(registry.get(PluginKind::kInitializer, "normal"));
}

TEST(Registry, LoadsOnceAndCaches) {
  Registry registry({builtin()});
  const LoadedPlugin& first = registry.get(PluginKind::kPositionalEncoding, "learned");
  const LoadedPlugin& second = registry.get(PluginKind::kPositionalEncoding, "learned");
  EXPECT_EQ(&first, &second);
  // The same file by another spelling of its path is the same plugin, not a duplicate.
  const std::string detour = builtin() + "/../plugins/./libpelab_pe_learned.so";
  EXPECT_EQ(&registry.load_file(detour), &first);
  EXPECT_EQ(first.kind(), PluginKind::kPositionalEncoding);
  EXPECT_EQ(first.name(), "learned");
  ASSERT_NE(first.schema.find("init"), nullptr);
  EXPECT_EQ(first.schema.find("init")->type, ParamType::kPlugin);
}

TEST(Registry, AvailableListsNamesOfOneKindSortedAndUnique) {
  Registry registry({fixture_plugin_dir("shadow"), builtin()});
  const auto pes = registry.available(PluginKind::kPositionalEncoding);
  EXPECT_TRUE(std::is_sorted(pes.begin(), pes.end()));
  EXPECT_EQ(std::count(pes.begin(), pes.end(), "none"), 1);
  EXPECT_NE(std::find(pes.begin(), pes.end(), "learned"), pes.end());
  EXPECT_EQ(std::find(pes.begin(), pes.end(), "normal"), pes.end());
  const auto inits = registry.available(PluginKind::kInitializer);
  EXPECT_NE(std::find(inits.begin(), inits.end(), "normal"), inits.end());
}

// A spec of a fixture PE, whose one parameter is `scale`.
PluginSpec fixture_pe_spec(const std::string& name, double scale) {
  PluginSpec spec;
  spec.kind = PluginKind::kPositionalEncoding;
  spec.name = name;
  spec.params.set("scale", scale);
  return spec;
}

TEST(Registry, AnExceptionFromAPluginNamesThePluginItsParametersAndItsFile) {
  Registry registry({fixture_plugin_dir("throwing")});
  PluginSpec spec = fixture_pe_spec("throwing", 3.0);
  spec.location = SourceLocation{"exp.toml", 12, 1};
  try {
    registry.create_positional_encoding(spec, Layout::sequence(4), ModelShape{8, 1, 1, 0});
    FAIL() << "the plugin's exception was swallowed";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("exp.toml:12:1: the positional encoding plugin throwing "
                                    "{ scale = 3.0 }"));
    EXPECT_THAT(e.what(), HasSubstr("libpelab_pe_throwing.so) failed with an exception: scale "
                                    "must be even"));
  }
}

TEST(Registry, CreatesFromASpecOfTheRightKindOnly) {
  Registry registry({fixture_plugin_dir("order_a")});
  PluginSpec spec = fixture_pe_spec("ordered", 1.0);
  auto pe = registry.create_positional_encoding(spec, Layout::sequence(4), ModelShape{8, 1, 1, 0});
  ASSERT_NE(pe, nullptr);
  EXPECT_EQ(pe->hooks(), 0u);
  // Asking a PE spec for an initializer is a bug in the caller, not a user error.
  EXPECT_THROW(registry.create_initializer(spec), InternalError);
}

TEST(Registry, PluginFileName) {
  EXPECT_EQ(plugin_file_name(PluginKind::kPositionalEncoding, "learned"), "libpelab_pe_learned.so");
  EXPECT_EQ(plugin_file_name(PluginKind::kInitializer, "normal"), "libpelab_init_normal.so");
  EXPECT_EQ(plugin_file_name(PluginKind::kTask, "marker_position"),
            "libpelab_task_marker_position.so");
  EXPECT_EQ(plugin_file_name(PluginKind::kProbe, "pe_norm"), "libpelab_probe_pe_norm.so");
}

TEST(ClosestNames, NearestFirstWithinTolerance) {
  const std::vector<std::string> names = {"learned", "none", "sinusoidal", "rope", "alibi"};
  EXPECT_EQ(closest_names("lerned", names), (std::vector<std::string>{"learned"}));
  EXPECT_EQ(closest_names("rop", names), (std::vector<std::string>{"rope"}));
  EXPECT_EQ(closest_names("nope", names), (std::vector<std::string>{"none", "rope"}));
  EXPECT_TRUE(closest_names("transformer", names).empty());
}

TEST(ClosestNames, PrefixesMatchWhateverTheirDistance) {
  EXPECT_EQ(closest_names("sin", {"sinusoidal", "learned"}),
            (std::vector<std::string>{"sinusoidal"}));
}

TEST(ClosestNames, AtMostCount) {
  const std::vector<std::string> names = {"ab", "ac", "ad", "ae"};
  EXPECT_EQ(closest_names("a", names, 2).size(), 2u);
  EXPECT_EQ(closest_names("a", names).size(), 3u);
}

TEST(PluginKindNames, RoundTrip) {
  for (PluginKind kind : kAllPluginKinds) {
    EXPECT_EQ(parse_plugin_kind(to_string(kind)), kind);
  }
  EXPECT_EQ(to_string(PluginKind::kPositionalEncoding), "pe");
  EXPECT_EQ(describe(PluginKind::kPositionalEncoding), "positional encoding");
  EXPECT_EQ(parse_plugin_kind("encoder"), std::nullopt);
  EXPECT_EQ(parse_plugin_kind("PE"), std::nullopt);
}

}  // namespace
}  // namespace pelab
