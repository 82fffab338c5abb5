#include "pelab/plugins/registry.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <boost/filesystem.hpp>

namespace pelab {

namespace fs = boost::filesystem;

std::string to_string(LoadFailure failure) {
  switch (failure) {
    case LoadFailure::kFileNotFound:
      return "file not found";
    case LoadFailure::kNotASharedLibrary:
      return "not a shared library";
    case LoadFailure::kCannotLoad:
      return "cannot be loaded";
    case LoadFailure::kNoEntry:
      return "no pelab entry";
    case LoadFailure::kApiVersionMismatch:
      return "API version mismatch";
    case LoadFailure::kTorchVersionMismatch:
      return "LibTorch version mismatch";
    case LoadFailure::kAbiMismatch:
      return "C++ ABI mismatch";
    case LoadFailure::kMalformedInfo:
      return "malformed plugin info";
    case LoadFailure::kDuplicateName:
      return "duplicate name";
    case LoadFailure::kUnknownName:
      return "unknown name";
  }
  return "unknown failure";
}

std::string plugin_file_name(PluginKind kind, const std::string& name) {
  return fmt::format("libpelab_{}_{}.so", to_string(kind), name);
}

namespace {

constexpr const char* kRebuildHint =
    "rebuild the plugin against this pelab's SDK (find_package(pelab), pelab_add_plugin)";

[[noreturn]] void fail(LoadFailure failure, const std::string& file, const std::string& message) {
  throw PluginLoadError(failure, file, message);
}

// Libraries are kept for the life of the process: unloading one that registered torch operators
// or owns deleters of live tensors crashes later. The vector is leaked on purpose.
std::vector<boost::dll::shared_library>& resident_libraries() {
  static auto* libraries = new std::vector<boost::dll::shared_library>();
  return *libraries;
}

bool has_elf_header(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::memcmp(magic,
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

// The libraries an ELF shared object names as DT_NEEDED, read from its file without loading it;
// empty when the file is not a 64-bit ELF it can parse (dlopen then says what is wrong).
std::vector<std::string> needed_libraries(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto fits = [&](std::uint64_t offset, std::uint64_t size) {
    return offset <= bytes.size() && size <= bytes.size() - offset;
  };
  Elf64_Ehdr header;
  if (!fits(0, sizeof header)) return {};
  std::memcpy(&header, bytes.data(), sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr) ||
      !fits(header.e_shoff, std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr)))
    return {};
  const auto section = [&](std::size_t index) {
    Elf64_Shdr entry;
    std::memcpy(&entry, bytes.data() + header.e_shoff + index * sizeof entry, sizeof entry);
    return entry;
  };
  std::vector<std::string> needed;
  for (std::size_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr dynamic = section(i);
    if (dynamic.sh_type != SHT_DYNAMIC || dynamic.sh_link >= header.e_shnum) continue;
    const Elf64_Shdr strings = section(dynamic.sh_link);
    if (!fits(dynamic.sh_offset, dynamic.sh_size) || !fits(strings.sh_offset, strings.sh_size))
      return {};
    for (std::uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dynamic.sh_size; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn entry;
      std::memcpy(&entry, bytes.data() + dynamic.sh_offset + at, sizeof entry);
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag != DT_NEEDED || entry.d_un.d_val >= strings.sh_size) continue;
      const char* name = bytes.data() + strings.sh_offset + entry.d_un.d_val;
      needed.emplace_back(name, strnlen(name, strings.sh_size - entry.d_un.d_val));
    }
  }
  return needed;
}

bool is_torch_library(const std::string& name) {
  return name.rfind("libtorch.so", 0) == 0 || name.rfind("libtorch_cpu.so", 0) == 0 ||
         name.rfind("libc10.so", 0) == 0;
}

// A LibTorch library the plugin needs that pelab's core does not (by soname: Debian's
// "libtorch.so.1.13", a wheel's "libtorch.so"): the plugin was built against another LibTorch.
// Loading it would bring a second LibTorch into the process, whose static initialisers collide
// with the first's (a crash inside dlopen, before any check could read the plugin's info), so
// this is asked of the files first. "" when there is none.
std::string foreign_torch_library(const std::string& file) {
  static const std::vector<std::string> ours = [] {
    std::vector<std::string> torch;
    for (const std::string& name : needed_libraries(boost::dll::this_line_location().string()))
      if (is_torch_library(name)) torch.push_back(name);
    return torch;
  }();
  if (ours.empty()) return "";  // cannot tell: let the plugin's info decide
  for (const std::string& name : needed_libraries(file))
    if (is_torch_library(name) && std::find(ours.begin(), ours.end(), name) == ours.end())
      return name;
  return "";
}

// "libpelab_pe_learned.so" -> {pe, learned}; nullopt when the name does not follow the pattern.
std::optional<std::pair<PluginKind, std::string>> parse_file_name(const std::string& file_name) {
  const std::string prefix = "libpelab_";
  const std::string suffix = ".so";
  if (file_name.size() <= prefix.size() + suffix.size() || file_name.rfind(prefix, 0) != 0 ||
      file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const std::string stem =
      file_name.substr(prefix.size(), file_name.size() - prefix.size() - suffix.size());
  const auto underscore = stem.find('_');
  if (underscore == std::string::npos) return std::nullopt;
  auto kind = parse_plugin_kind(stem.substr(0, underscore));
  if (!kind) return std::nullopt;
  return std::make_pair(*kind, stem.substr(underscore + 1));
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> closest_names(const std::string& word,
                                       const std::vector<std::string>& candidates,
                                       std::size_t count) {
  std::vector<std::pair<std::size_t, std::string>> scored;
  const std::size_t tolerance = std::max<std::size_t>(2, word.size() / 3);
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    const bool prefix = !word.empty() && candidate.rfind(word, 0) == 0;
    if (distance <= tolerance || prefix) scored.emplace_back(distance, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> result;
  for (std::size_t i = 0; i < scored.size() && i < count; ++i)
    result.push_back(scored[i].second);
  return result;
}

Registry::Registry(std::vector<std::string> search_path) : search_path_(std::move(search_path)) {}

std::string Registry::builtin_plugin_folder() {
  // The folder of libpelab_core.so itself, wherever it was loaded from.
  const fs::path core = boost::dll::this_line_location();
  boost::system::error_code error;
  const fs::path folder = fs::weakly_canonical(core.parent_path() / "pelab" / "plugins", error);
  return (error ? core.parent_path() / "pelab" / "plugins" : folder).string();
}

std::vector<std::string> Registry::default_search_path(
    const std::vector<std::string>& command_line_folders) {
  std::vector<std::string> path = command_line_folders;
  if (const char* env = std::getenv("PELAB_PLUGIN_PATH")) {
    std::string folders = env;
    std::size_t start = 0;
    while (start <= folders.size()) {
      const std::size_t end = std::min(folders.find(':', start), folders.size());
      if (end > start) path.push_back(folders.substr(start, end - start));
      start = end + 1;
    }
  }
  path.push_back(builtin_plugin_folder());
  return path;
}

std::string Registry::find_file(PluginKind kind, const std::string& name) const {
  const std::string file_name = plugin_file_name(kind, name);
  for (const auto& folder : search_path_) {
    const fs::path candidate = fs::path(folder) / file_name;
    boost::system::error_code error;
    if (fs::is_regular_file(candidate, error)) return candidate.string();
  }
  return "";
}

std::vector<std::string> Registry::available(PluginKind kind) const {
  std::vector<std::string> names;
  for (const auto& folder : search_path_) {
    boost::system::error_code error;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
      auto parsed = parse_file_name(it->path().filename().string());
      if (parsed && parsed->first == kind &&
          std::find(names.begin(), names.end(), parsed->second) == names.end()) {
        names.push_back(parsed->second);
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

const LoadedPlugin& Registry::get(PluginKind kind, const std::string& name) {
  auto cached = by_name_.find({kind, name});
  if (cached != by_name_.end()) return *cached->second;

  const std::string file = find_file(kind, name);
  if (file.empty()) {
    std::string message =
        fmt::format("no {} plugin named '{}': looked for {} in {}.", describe(kind), name,
                    plugin_file_name(kind, name),
                    search_path_.empty() ? std::string("(empty search path)")
                                         : fmt::format("{}", fmt::join(search_path_, ", ")));
    const auto suggestions = closest_names(name, available(kind));
    if (!suggestions.empty())
      message += fmt::format(" Did you mean {}?", fmt::join(suggestions, ", "));
    message +=
        " Run `pelab plugins` to list them; add folders with --plugin-path or "
        "PELAB_PLUGIN_PATH.";
    fail(LoadFailure::kUnknownName, "", message);
  }
  return load_file(file);
}

namespace {

// The file must be an ELF file before anything else is asked of it.
void check_shared_library(const std::string& file, const std::string& canonical) {
  boost::system::error_code error;
  if (!fs::is_regular_file(canonical, error) || !has_elf_header(canonical)) {
    fail(LoadFailure::kNotASharedLibrary, file,
         fmt::format("'{}' is not a shared library (no ELF header); a plugin is a .so built with "
                     "pelab_add_plugin()",
                     file));
  }
}

// Asked of the file before dlopen: loading a plugin that needs another LibTorch crashes.
void check_no_foreign_torch(const std::string& file, const std::string& canonical) {
  if (const std::string foreign = foreign_torch_library(canonical); !foreign.empty()) {
    fail(LoadFailure::kTorchVersionMismatch, file,
         fmt::format("'{}' was built against another LibTorch: it needs {}, which this pelab "
                     "(LibTorch {}) does not use, and loading both in one process crashes; {}",
                     file, foreign, TORCH_VERSION, kRebuildHint));
  }
}

boost::dll::shared_library open_library(const std::string& file, const std::string& canonical) {
  // The loader's own message, asked before Boost.DLL loads the file: Boost's error code alone is
  // "Bad file descriptor", and its retry under another name replaces the loader's message. The
  // handle is held until Boost holds the library, so that it is loaded (its static constructors
  // run) once.
  ::dlerror();  // clears an earlier message
  void* const handle = ::dlopen(canonical.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* message = ::dlerror();
    const std::string reason = message != nullptr ? message : "the loader gave no reason";
    // "libx.so.1: cannot open shared object file: No such file or directory": a dependency.
    static const std::regex missing("^([^:]+): cannot open shared object file");
    std::smatch found;
    if (std::regex_search(reason, found, missing) && found[1] != canonical) {
      fail(LoadFailure::kCannotLoad, file,
           fmt::format("'{}' cannot be loaded: it needs {}, which the dynamic loader cannot find "
                       "({}). Install it, or add its folder to LD_LIBRARY_PATH; `ldd {}` lists "
                       "every library the plugin needs and where each is found",
                       file, found[1].str(), reason, file));
    }
    fail(LoadFailure::kCannotLoad, file,
         fmt::format("'{}' cannot be loaded: {} (an undefined symbol: was it built against this "
                     "pelab and its LibTorch? `ldd -r {}` lists what is missing)",
                     file, reason, file));
  }
  boost::system::error_code error;
  boost::dll::shared_library library;
  library.load(canonical, error, boost::dll::load_mode::rtld_lazy);
  ::dlclose(handle);
  PELAB_CHECK(!error, "'{}' was loaded, then Boost.DLL could not load it ({})", file,
              error.message());
  return library;
}

// Whether `address` lies in an executable segment of the loaded object whose base is `base`
// (the entry function itself is hidden: only the segments can say it is code of the plugin).
bool in_code_of(const void* address, const void* base) {
  struct Query {
    std::uintptr_t address;
    std::uintptr_t base;
    bool found = false;
  } query{reinterpret_cast<std::uintptr_t>(address), reinterpret_cast<std::uintptr_t>(base)};
  ::dl_iterate_phdr(
      [](dl_phdr_info* object, std::size_t, void* data) {
        auto& q = *static_cast<Query*>(data);
        if (object->dlpi_addr != q.base) return 0;
        for (ElfW(Half) i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = object->dlpi_phdr[i];
          const std::uintptr_t start = object->dlpi_addr + segment.p_vaddr;
          if (segment.p_type == PT_LOAD && (segment.p_flags & PF_X) != 0 && q.address >= start &&
              q.address < start + segment.p_memsz)
            q.found = true;
        }
        return 1;
      },
      &query);
  return query.found;
}

// Calls the library's pelab entry for its plugin info; never null.
const PluginInfo* plugin_info_of(const boost::dll::shared_library& library,
                                 const std::string& file) {
  if (!library.has(kPluginEntryName)) {
    fail(LoadFailure::kNoEntry, file,
         fmt::format("'{}' is a shared library but not a pelab plugin: it exports no '{}' entry "
                     "(register the plugin with PELAB_REGISTER_PLUGIN)",
                     file, kPluginEntryName));
  }
  // What the symbol is, before anything is called: the dynamic linker's own record of it.
  // PELAB_REGISTER_PLUGIN exports the entry as Boost.DLL does an alias, a data object holding a
  // pointer to the entry function in the plugin. Anything else under the name (a function, a
  // null pointer, a pointer elsewhere) crashed the process when it was called.
  const auto symbol_at = [](const void* address, Dl_info& where) -> const ElfW(Sym) * {
    void* record = nullptr;
    if (address == nullptr || ::dladdr1(address, &where, &record, RTLD_DL_SYMENT) == 0)
      return nullptr;
    return static_cast<const ElfW(Sym)*>(record);
  };
  const auto refuse = [&](const std::string& what) {
    fail(LoadFailure::kMalformedInfo, file,
         fmt::format("'{}': its '{}' {}, not the entry that PELAB_REGISTER_PLUGIN exports; "
                     "rebuild the plugin with PELAB_REGISTER_PLUGIN",
                     file, kPluginEntryName, what));
  };
  void* const alias = ::dlsym(library.native(), kPluginEntryName);
  Dl_info where{};
  const ElfW(Sym)* symbol = symbol_at(alias, where);
  if (symbol == nullptr) refuse("cannot be found by the dynamic linker");
  if (ELF64_ST_TYPE(symbol->st_info) == STT_FUNC) refuse("is a function");
  // At least a pointer wide, not exactly: AddressSanitizer pads instrumented globals with redzones.
  if (ELF64_ST_TYPE(symbol->st_info) != STT_OBJECT || symbol->st_size < sizeof(void*))
    refuse(fmt::format("is a symbol of ELF type {} and {} bytes", ELF64_ST_TYPE(symbol->st_info),
                       symbol->st_size));
  void* const entry = *static_cast<void* const*>(alias);
  if (entry == nullptr) refuse("holds a null pointer");
  if (!in_code_of(entry, where.dli_fbase)) refuse("does not point into the plugin's code");
  const PluginInfo* info = reinterpret_cast<PluginEntry*>(entry)();
  if (info == nullptr) {
    fail(LoadFailure::kMalformedInfo, file,
         fmt::format("'{}': its '{}' entry returned no plugin info", file, kPluginEntryName));
  }
  // The info must lie in the plugin's own memory: a stray pointer is refused, not read.
  Dl_info info_where{};
  if (::dladdr(info, &info_where) == 0 || info_where.dli_fbase != where.dli_fbase) {
    fail(LoadFailure::kMalformedInfo, file,
         fmt::format("'{}': its '{}' entry returned a pointer outside the plugin ({}); rebuild "
                     "the plugin with PELAB_REGISTER_PLUGIN",
                     file, kPluginEntryName, static_cast<const void*>(info)));
  }
  return info;
}

// The plugin API version, LibTorch version and C++ ABI the plugin was built for must be ours.
void check_built_for_this_pelab(const PluginInfo& info, const std::string& file) {
  if (info.api_version != kPluginApiVersion) {
    fail(LoadFailure::kApiVersionMismatch, file,
         fmt::format("'{}' was built for pelab plugin API version {}, but this pelab expects "
                     "version {}; {}",
                     file, info.api_version, kPluginApiVersion, kRebuildHint));
  }
  const char* torch_version = info.torch_version ? info.torch_version : "(none)";
  if (std::strcmp(torch_version, TORCH_VERSION) != 0) {
    fail(LoadFailure::kTorchVersionMismatch, file,
         fmt::format("'{}' was built against LibTorch {}, but this pelab uses LibTorch {}; {}",
                     file, torch_version, TORCH_VERSION, kRebuildHint));
  }
  const char* abi = info.cxx_abi ? info.cxx_abi : "(none)";
  if (std::strcmp(abi, PELAB_CXX_ABI_TAG) != 0) {
    fail(LoadFailure::kAbiMismatch, file,
         fmt::format("'{}' was built for the C++ ABI '{}', but this pelab uses '{}'; build it "
                     "with the same compiler and _GLIBCXX_USE_CXX11_ABI as pelab",
                     file, abi, PELAB_CXX_ABI_TAG));
  }
}

// A valid kind with its factory set, a non-empty name and a parameter declaration.
void check_info_complete(const PluginInfo& info, const std::string& file) {
  const int kind = static_cast<int>(info.kind);
  const bool kind_valid = kind >= 0 && kind <= static_cast<int>(PluginKind::kProbe);
  const bool has_factory =
      kind_valid &&
      ((info.kind == PluginKind::kPositionalEncoding && info.create_positional_encoding) ||
       (info.kind == PluginKind::kInitializer && info.create_initializer) ||
       (info.kind == PluginKind::kTask && info.create_task) ||
       (info.kind == PluginKind::kProbe && info.create_probe));
  if (!kind_valid || !has_factory || info.name == nullptr || *info.name == '\0' ||
      info.declare_params == nullptr) {
    fail(LoadFailure::kMalformedInfo, file,
         fmt::format("'{}': its plugin info is incomplete (kind {}, name '{}', factory {}, "
                     "parameter declaration {})",
                     file, kind, info.name ? info.name : "", has_factory ? "set" : "missing",
                     info.declare_params ? "set" : "missing"));
  }
}

// A file named for one plugin must not register (and so hijack) another name.
void check_file_name_matches(const PluginInfo& info, const std::string& file,
                             const std::string& canonical) {
  if (auto promised = parse_file_name(fs::path(canonical).filename().string());
      promised && (promised->first != info.kind || promised->second != info.name)) {
    fail(LoadFailure::kMalformedInfo, file,
         fmt::format("'{}': the file name promises the {} plugin '{}' but it declares the {} "
                     "plugin '{}'; rename the file or fix the plugin's registration",
                     file, describe(promised->first), promised->second, describe(info.kind),
                     info.name));
  }
}

// The plugin with its parameter schema declared (which runs the plugin's own code).
std::unique_ptr<LoadedPlugin> declare_plugin(const PluginInfo* info, const std::string& file,
                                             const std::string& canonical) {
  auto plugin = std::make_unique<LoadedPlugin>();
  plugin->info = info;
  plugin->file = canonical;
  try {
    info->declare_params(plugin->schema);
    plugin->schema.init_scale();  // refuses a second mark, or a mark on a non-number
  } catch (const std::exception& e) {
    fail(LoadFailure::kMalformedInfo, file,
         fmt::format("'{}': declaring its parameters failed: {}", file, e.what()));
  }
  return plugin;
}

}  // namespace

// Each way loading fails has its own LoadFailure and message, checked in this order.
const LoadedPlugin& Registry::load_file(const std::string& file) {
  boost::system::error_code error;
  if (!fs::exists(file, error)) {
    fail(LoadFailure::kFileNotFound, file, fmt::format("plugin file '{}' does not exist", file));
  }
  const std::string canonical = fs::canonical(file, error).string();
  if (auto it = by_file_.find(canonical); it != by_file_.end()) return *it->second;

  check_shared_library(file, canonical);
  check_no_foreign_torch(file, canonical);
  boost::dll::shared_library library = open_library(file, canonical);
  const PluginInfo* info = plugin_info_of(library, file);
  check_built_for_this_pelab(*info, file);
  check_info_complete(*info, file);

  const auto key = std::make_pair(info->kind, std::string(info->name));
  if (auto existing = by_name_.find(key); existing != by_name_.end()) {
    fail(LoadFailure::kDuplicateName, file,
         fmt::format("'{}' declares the {} plugin '{}', already loaded from '{}'; remove one of "
                     "them or rename the plugin",
                     file, describe(info->kind), info->name, existing->second->file));
  }
  check_file_name_matches(*info, file, canonical);
  std::unique_ptr<LoadedPlugin> plugin = declare_plugin(info, file, canonical);
  resident_libraries().push_back(std::move(library));
  const LoadedPlugin* loaded = plugin.get();
  by_file_[canonical] = std::move(plugin);
  by_name_[key] = loaded;
  return *loaded;
}

std::vector<DiscoveredPlugin> Registry::discover() {
  std::vector<DiscoveredPlugin> found;
  std::map<std::string, std::string> first_with_name;  // file name -> first path that had it
  for (const auto& folder : search_path_) {
    boost::system::error_code error;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
      if (parse_file_name(it->path().filename().string())) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& path : files) {
      DiscoveredPlugin entry;
      entry.file = path.string();
      auto [first, inserted] = first_with_name.emplace(path.filename().string(), entry.file);
      if (!inserted) {
        entry.shadowed_by = first->second;
      } else {
        try {
          auto parsed = parse_file_name(path.filename().string());
          entry.plugin = &get(parsed->first, parsed->second);
        } catch (const Error& e) {
          entry.error = e.what();
        }
      }
      found.push_back(std::move(entry));
    }
  }
  return found;
}

PluginSpec Registry::default_spec(PluginKind kind, const std::string& name) {
  PluginSpec spec;
  spec.kind = kind;
  spec.name = name;
  for (const ParamSpec& param : get(kind, name).schema.specs()) {
    if (param.type == ParamType::kPlugin) {
      const auto& fallback = std::get<std::shared_ptr<const PluginSpec>>(param.default_value);
      spec.params.set(param.name, std::make_shared<const PluginSpec>(
                                      default_spec(param.plugin_kind, fallback->name)));
    } else {
      spec.params.set(param.name, param.default_value);
    }
  }
  return spec;
}

const LoadedPlugin& Registry::checked(const PluginSpec& spec, PluginKind expected) {
  PELAB_INTERNAL_ASSERT(spec.kind == expected, "asked for a {} from a {} spec", describe(expected),
                        describe(spec.kind));
  return get(expected, spec.name);
}

namespace {
std::string data_dir_of(const std::string& plugin_file, const std::string& name) {
  // <prefix>/lib/pelab/plugins/libpelab_x.so -> <prefix>/share/pelab/<name>
  const fs::path prefix =
      fs::path(plugin_file).parent_path().parent_path().parent_path().parent_path();
  return (prefix / "share" / "pelab" / name).string();
}

// Calls a plugin's factory; its errors are prefixed with where the manifest chose the plugin.
template <typename Factory>
auto instantiate(const PluginSpec& spec, const LoadedPlugin& plugin, Factory&& factory) {
  decltype(factory()) object;
  try {
    object = factory();
  } catch (const PluginLoadError&) {
    throw;
  } catch (const Error& e) {
    const std::string where = spec.location.known() ? spec.location.str() + ": " : "";
    throw Error(fmt::format("{}{} '{}': {}", where, describe(plugin.kind()), spec.name, e.what()));
  } catch (const std::exception& e) {
    // Not pelab::Error: a bug in the plugin or a value LibTorch refused. Either way the plugin and
    // its parameters are what the user needs to know, not pelab's "report this as a bug".
    const std::string where = spec.location.known() ? spec.location.str() + ": " : "";
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    throw Error(fmt::format("{}the {} plugin {} ({}) failed with {} {}", where,
                            describe(plugin.kind()), describe_spec(spec), plugin.file,
                            torch_error ? "a LibTorch error:" : "an exception:",
                            torch_error ? torch_error->what_without_backtrace() : e.what()));
  }
  PELAB_CHECK(object != nullptr, "the {} plugin '{}' ({}) returned nothing from its factory",
              describe(plugin.kind()), plugin.name(), plugin.file);
  return object;
}
}  // namespace

std::shared_ptr<PositionalEncoding> Registry::create_positional_encoding(const PluginSpec& spec,
                                                                         const Layout& layout,
                                                                         const ModelShape& shape) {
  const LoadedPlugin& plugin = checked(spec, PluginKind::kPositionalEncoding);
  PluginContext context{spec.params, *this, plugin.file, data_dir_of(plugin.file, spec.name)};
  return instantiate(spec, plugin, [&] {
    return plugin.info->create_positional_encoding(context, layout, shape);
  });
}

std::shared_ptr<Initializer> Registry::create_initializer(const PluginSpec& spec) {
  const LoadedPlugin& plugin = checked(spec, PluginKind::kInitializer);
  PluginContext context{spec.params, *this, plugin.file, data_dir_of(plugin.file, spec.name)};
  return instantiate(spec, plugin, [&] { return plugin.info->create_initializer(context); });
}

std::shared_ptr<Task> Registry::create_task(const PluginSpec& spec) {
  const LoadedPlugin& plugin = checked(spec, PluginKind::kTask);
  PluginContext context{spec.params, *this, plugin.file, data_dir_of(plugin.file, spec.name)};
  return instantiate(spec, plugin, [&] { return plugin.info->create_task(context); });
}

std::shared_ptr<Probe> Registry::create_probe(const PluginSpec& spec) {
  const LoadedPlugin& plugin = checked(spec, PluginKind::kProbe);
  PluginContext context{spec.params, *this, plugin.file, data_dir_of(plugin.file, spec.name)};
  return instantiate(spec, plugin, [&] { return plugin.info->create_probe(context); });
}

}  // namespace pelab
