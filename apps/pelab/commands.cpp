#include "commands.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <torch/version.h>
#include <boost/filesystem.hpp>

#include "pelab/error.h"
#include "pelab/manifest.h"
#include "pelab/registry.h"
#include "pelab/run.h"
#include "pelab/run_io.h"
#include "report_command.h"
#include "sweep_interruption.h"

extern char** environ;

namespace pelab::cli {

namespace fs = boost::filesystem;

namespace {

Registry make_registry(const Options& options) {
  return Registry(Registry::default_search_path(options.plugin_folders));
}

std::string kind_column(PluginKind kind) {
  return to_string(kind);
}

std::string shorten(const std::string& text, std::size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

void print_schema(const ParamSchema& schema) {
  if (schema.empty()) {
    std::printf("  (no parameters)\n");
    return;
  }
  for (const auto& spec : schema.specs()) {
    std::printf("  %-22s %-28s default %s\n", spec.name.c_str(), spec.accepted().c_str(),
                format_value(spec.default_value).c_str());
    std::printf("  %-22s %s\n", "", spec.doc.c_str());
  }
}

}  // namespace

std::string version_text() {
  return fmt::format("pelab {} (plugin API {}, LibTorch {}, {})", PELAB_VERSION_STRING,
                     kPluginApiVersion, TORCH_VERSION, PELAB_CXX_ABI_TAG);
}

int list_plugins(const Options& options) {
  Registry registry = make_registry(options);
  std::optional<PluginKind> only;
  if (!options.kind.empty()) {
    only = parse_plugin_kind(options.kind);
    PELAB_CHECK(only.has_value(), "--kind '{}' is not a plugin kind: use pe, init, task or probe",
                options.kind);
  }
  const auto found = registry.discover();
  std::printf("%-6s %-20s %-8s %-58s %s\n", "KIND", "NAME", "VERSION", "SUMMARY", "FILE");
  std::size_t listed = 0;
  std::vector<const DiscoveredPlugin*> problems;
  for (PluginKind kind : kAllPluginKinds) {
    if (only && kind != *only) continue;
    std::vector<const DiscoveredPlugin*> of_kind;
    for (const auto& entry : found) {
      if (entry.plugin != nullptr && entry.plugin->kind() == kind) of_kind.push_back(&entry);
    }
    std::sort(of_kind.begin(), of_kind.end(),
              [](const auto* a, const auto* b) { return a->plugin->name() < b->plugin->name(); });
    for (const DiscoveredPlugin* listed_entry : of_kind) {
      const DiscoveredPlugin& entry = *listed_entry;
      const PluginInfo& info = *entry.plugin->info;
      std::printf("%-6s %-20s %-8s %-58s %s\n", kind_column(kind).c_str(), info.name,
                  info.version ? info.version : "",
                  shorten(info.summary ? info.summary : "", 58).c_str(), entry.file.c_str());
      ++listed;
    }
  }
  for (const auto& entry : found) {
    if (entry.plugin == nullptr) problems.push_back(&entry);
  }
  std::printf("\n%zu plugins; search path: ", listed);
  for (std::size_t i = 0; i < registry.search_path().size(); ++i) {
    std::printf("%s%s", i ? ":" : "", registry.search_path()[i].c_str());
  }
  std::printf("\n");
  for (const auto* entry : problems) {
    if (!entry->shadowed_by.empty()) {
      std::printf("note: %s is shadowed by %s (earlier on the path)\n", entry->file.c_str(),
                  entry->shadowed_by.c_str());
    } else {
      std::printf("warning: %s\n", entry->error.c_str());
    }
  }
  return 0;
}

int describe(const Options& options) {
  const std::map<std::string, const ParamSchema*> sections = {
      {"experiment", &experiment_schema()}, {"model", &model_schema()}, {"train", &train_schema()}};
  if (options.kind.empty()) {
    if (auto it = sections.find(options.name); it != sections.end()) {
      std::printf("[%s] (core section)\n", options.name.c_str());
      print_schema(*it->second);
      return 0;
    }
  }
  Registry registry = make_registry(options);
  std::vector<PluginKind> kinds;
  for (PluginKind kind : kAllPluginKinds) {
    if (!options.kind.empty() && to_string(kind) != options.kind) continue;
    const auto names = registry.available(kind);
    if (std::find(names.begin(), names.end(), options.name) != names.end()) kinds.push_back(kind);
  }
  if (kinds.empty()) {
    std::vector<std::string> all;
    for (PluginKind kind : kAllPluginKinds) {
      for (const auto& name : registry.available(kind))
        all.push_back(name);
    }
    for (const auto& [name, schema] : sections)
      all.push_back(name);
    std::string message = fmt::format("no plugin named '{}'", options.name);
    const auto near = closest_names(options.name, all);
    if (!near.empty()) message += fmt::format("; did you mean '{}'?", near.front());
    throw Error(message + " Run `pelab plugins` to list them.");
  }
  for (PluginKind kind : kinds) {
    const LoadedPlugin& plugin = registry.get(kind, options.name);
    std::printf("%s %s %s — %s\n  file: %s\nparameters:\n", describe(kind).c_str(),
                plugin.info->name, plugin.info->version, plugin.info->summary, plugin.file.c_str());
    print_schema(plugin.schema);
  }
  return 0;
}

int validate(const Options& options) {
  Registry registry = make_registry(options);
  const Manifest manifest = Manifest::from_file(options.manifest, registry, options.overrides);
  std::printf("%s: valid. experiment '%s': %zu point(s) x seeds = %zu run(s)\n",
              options.manifest.c_str(), manifest.name().c_str(), manifest.points(),
              manifest.runs().size());
  for (const auto& key : manifest.sweep_keys())
    std::printf("  sweep: %s\n", key.c_str());
  return 0;
}

namespace {

// Intra-op threads of each of `jobs` concurrent runs: an equal share of the cores.
std::int64_t threads_per_job(int jobs) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(cores) / jobs);
}

// A copy of the manifest as this process read it, for its workers: editing the manifest while a
// sweep runs must not change the runs it has yet to start. It keeps the manifest's file name,
// from which a manifest without [experiment] name takes its name. Removed when the sweep ends.
class ManifestSnapshot {
 public:
  ManifestSnapshot(const std::string& manifest, const std::string& experiment_dir)
      : dir_((fs::path(experiment_dir) / fmt::format(".manifest-{}", ::getpid())).string()),
        path_((fs::path(dir_) / fs::path(manifest).filename()).string()) {
    fs::create_directories(dir_);
    write_file_atomically(path_, read_file(manifest));
  }
  ~ManifestSnapshot() {
    boost::system::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  ManifestSnapshot(const ManifestSnapshot&) = delete;
  ManifestSnapshot& operator=(const ManifestSnapshot&) = delete;
  const std::string& dir() const { return dir_; }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

// Starts `pelab run ... --only <index> --quiet` for each run, at most `jobs` at a time, each with
// cores / jobs intra-op threads unless the manifest fixes the thread count. Returns the indices of
// the runs whose worker failed.
std::vector<std::size_t> run_workers(const Options& options, const Manifest& manifest,
                                     const std::string& experiment_dir) {
  const std::int64_t threads = threads_per_job(options.jobs);
  const ManifestSnapshot snapshot(options.manifest, experiment_dir);
  SweepInterruption interruption(snapshot.path(), snapshot.dir());
  std::vector<std::string> base;
  bool manifest_replaced = false;
  for (std::size_t i = 0; i < options.arguments.size(); ++i) {
    const std::string& arg = options.arguments[i];
    if (arg == "--jobs" || arg == "-j") {
      ++i;  // and its value
      continue;
    }
    if (arg.rfind("--jobs=", 0) == 0 || (arg.rfind("-j", 0) == 0 && arg.size() > 2)) continue;
    if (!manifest_replaced && i > 0 && arg == options.manifest) {
      base.push_back(snapshot.path());
      manifest_replaced = true;
      continue;
    }
    base.push_back(arg);
  }
  base[0] = fs::read_symlink("/proc/self/exe").string();

  std::map<pid_t, std::size_t> running;
  std::vector<std::size_t> failed;
  std::size_t next = 0, done = 0;
  const std::size_t total = manifest.runs().size();
  auto reap = [&] {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid <= 0) return;
    interruption.remove_worker(pid);
    const std::size_t index = running.at(pid);
    running.erase(pid);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) failed.push_back(index);
    const RunConfig& config = manifest.runs()[index];
    std::printf("[%zu/%zu] %s seed %lld: %s\n", ++done, total,
                config.point.empty() ? "default" : config.point.c_str(),
                static_cast<long long>(config.seed), ok ? "done" : "FAILED");
    std::fflush(stdout);
  };
  while (next < total || !running.empty()) {
    if (next < total && running.size() < static_cast<std::size_t>(options.jobs)) {
      std::vector<std::string> args = base;
      args.insert(args.end(), {"--only", std::to_string(next), "--quiet"});
      if (manifest.runs()[next].train.integer("threads") == 0) {
        args.insert(args.end(), {"--set", fmt::format("train.threads={}", threads)});
      }
      std::vector<char*> argv;
      for (auto& arg : args)
        argv.push_back(arg.data());
      argv.push_back(nullptr);
      pid_t pid = 0;
      PELAB_CHECK(::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0,
                  "cannot start a worker process ({})", argv[0]);
      interruption.add_worker(pid);
      running[pid] = next++;
    } else {
      reap();
    }
  }
  return failed;
}

}  // namespace

int run(const Options& options) {
  Registry registry = make_registry(options);
  const Manifest manifest = Manifest::from_file(options.manifest, registry, options.overrides);
  const std::size_t total = manifest.runs().size();
  RunOptions run_options;
  run_options.progress = !options.quiet;
  run_options.force = options.force;

  if (options.only >= 0) {  // a worker of --jobs
    PELAB_CHECK(static_cast<std::size_t>(options.only) < total,
                "--only {}: the manifest expands to {} runs", options.only, total);
    execute_run(manifest.runs()[options.only], registry, options.output, run_options);
    return 0;
  }

  const std::string experiment_dir = (fs::path(options.output) / manifest.name()).string();
  std::printf("experiment '%s': %zu point(s), %zu run(s) -> %s\n", manifest.name().c_str(),
              manifest.points(), total, experiment_dir.c_str());
  std::fflush(stdout);
  if (options.jobs > 1 && total > 1) {
    const auto failed = run_workers(options, manifest, experiment_dir);
    if (!failed.empty()) {
      std::string dirs;
      for (std::size_t index : failed) {
        dirs +=
            "\n  " + (fs::path(options.output) / manifest.runs()[index].relative_dir()).string();
      }
      throw Error(fmt::format("{} of {} runs failed; see run.log and summary.json in:{}",
                              failed.size(), total, dirs));
    }
  } else {  // the runs train here, in order; a finished one is skipped
    for (std::size_t i = 0; i < total; ++i) {
      const RunConfig& config = manifest.runs()[i];
      std::printf("[%zu/%zu] %s seed %lld\n", i + 1, total,
                  config.point.empty() ? "default" : config.point.c_str(),
                  static_cast<long long>(config.seed));
      std::fflush(stdout);
      const RunOutcome outcome = execute_run(config, registry, options.output, run_options);
      if (outcome.skipped) {
        std::printf("        already finished (use --force to run it again)\n");
      } else {
        std::printf("        done in %.1f s\n", outcome.seconds);
      }
    }
  }

  // The accuracy table of every finished run in the folder; results.csv, report.md,
  // report.html, figures/.
  report_after_run(experiment_dir, registry);
  return 0;
}

}  // namespace pelab::cli
