#include "commands.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <torch/version.h>
#include <boost/filesystem.hpp>

#include "launch/launcher.h"
#include "launch/rank_launcher.h"
#include "launch/shard.h"
#include "launch/sweep_status.h"
#include "pelab/collective.h"
#include "pelab/error.h"
#include "pelab/manifest.h"
#include "pelab/registry.h"
#include "pelab/run.h"
#include "pelab/run_io.h"
#include "pelab/task.h"
#include "report_command.h"

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
    if (spec.init_scale)
      std::printf("  %-22s (the init scale: reports draw a series against it)\n", "");
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
  // What only a plugin can refuse (an initializer's parameter combination, a coordinate PE on a
  // task that hides its coordinates, heads not dividing d_model) shows when it is built: build
  // each point's task, model and PE once, as `pelab run` would, without training.
  std::set<std::string> built;
  std::map<std::string, std::shared_ptr<Task>> tasks;  // a task may take seconds to build
  for (const RunConfig& run : manifest.runs()) {
    if (options.no_build || !built.insert(run.point).second) continue;
    try {
      std::shared_ptr<Task>& task = tasks[describe_spec(run.task)];
      if (!task) {
        task = registry.create_task(run.task);
        // What the Trainer will load, checked now: a task plugin's splits of the wrong shape or
        // type fail here rather than in every run.
        for (const std::string& split : task->splits())
          load_checked_split(*task, split, run.task.name);
      }
      build_run(run, registry, WithTrainer::kNo, task);
    } catch (const Error& e) {
      throw Error(run.point.empty() ? e.what()
                                    : fmt::format("sweep point {}: {}", run.point, e.what()));
    }
  }
  std::printf("%s: valid. experiment '%s': %zu point(s) x seeds = %zu run(s)%s\n",
              options.manifest.c_str(), manifest.name().c_str(), manifest.points(),
              manifest.runs().size(), options.no_build ? "" : ", each point built");
  for (const auto& key : manifest.sweep_keys())
    std::printf("  sweep: %s\n", key.c_str());
  // The points by the folders they will have: what [[sweep.point]]s and --sets made of the sweep.
  constexpr std::size_t kPointsShown = 32;
  std::vector<std::string> points;
  for (const RunConfig& run : manifest.runs()) {
    if (!run.point.empty() && (points.empty() || points.back() != run.point))
      points.push_back(run.point);
  }
  for (std::size_t i = 0; i < points.size() && i < kPointsShown; ++i)
    std::printf("  point: %s\n", points[i].c_str());
  if (points.size() > kPointsShown)
    std::printf("  ... and %zu more point(s)\n", points.size() - kPointsShown);
  return 0;
}

namespace {

// Inside a Slurm job, a run whose threads are left at 0 (all cores) uses the CPUs Slurm gave the
// task, not every core of the node.
std::int64_t slurm_cpus_per_task() {
  const char* text = std::getenv("SLURM_CPUS_PER_TASK");
  if (text == nullptr) return 0;
  char* end = nullptr;
  const long cpus = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && cpus > 0 ? cpus : 0;
}

}  // namespace

int run(const Options& options) {
  const auto rank_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(options.rank_timeout * 1000.0));
  if (options.nproc_per_node > 1) {
    PELAB_CHECK(options.jobs == 1,
                "-j {} trains several runs at once, --nproc-per-node {} one run with several "
                "processes: give one of them",
                options.jobs, options.nproc_per_node);
    // Read the manifest once here, so that a bad one is said once rather than by every rank.
    Registry registry = make_registry(options);
    Manifest::from_file(options.manifest, registry, options.overrides);
    return launch_local_ranks(options.nproc_per_node, options.arguments,
                              std::min(rank_timeout, std::chrono::milliseconds(30000)));
  }
  const std::optional<Rendezvous> rendezvous = Rendezvous::from_environment();
  if (rendezvous) {
    PELAB_CHECK(options.jobs == 1,
                "-j {} trains several runs at once, but this process is {} of a data-parallel "
                "run ({}): drop -j",
                options.jobs, rendezvous->describe(), rendezvous->source);
  }
  Registry registry = make_registry(options);
  const Manifest manifest = Manifest::from_file(options.manifest, registry, options.overrides);
  const std::size_t total = manifest.runs().size();
  std::unique_ptr<Collective> ranks;
  if (rendezvous) ranks = Collective::connect(*rendezvous, rank_timeout);
  const bool rank_zero = !ranks || ranks->rank() == 0;
  // Rank 0 speaks for the run; the others' output would repeat it line for line.
  if (!rank_zero && std::freopen("/dev/null", "w", stdout) == nullptr) {
    throw Error("cannot silence this rank's standard output");
  }
  LaunchPlan plan;
  plan.manifest = &manifest;
  plan.manifest_path = options.manifest;
  plan.overrides = options.overrides;
  plan.output = options.output;
  plan.run_options.progress = !options.quiet && rank_zero;
  plan.run_options.progress_fd = options.progress_fd;
  plan.run_options.force = options.force;
  plan.run_options.ranks = ranks.get();
  plan.default_threads = slurm_cpus_per_task();
  if (rendezvous && plan.default_threads == 0) {
    // The ranks on one host share its cores.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    plan.default_threads =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(cores) / rendezvous->local_world_size);
  }

  if (options.only >= 0) {  // a worker of --jobs
    PELAB_CHECK(static_cast<std::size_t>(options.only) < total,
                "--only {}: the manifest expands to {} runs", options.only, total);
    PELAB_CHECK(options.shard.empty(), "--only and --shard select runs both: give one");
    const RunOutcome outcome =
        execute_run(manifest.runs()[options.only], registry, options.output, plan.run_options);
    if (outcome.claimed_elsewhere) {
      std::fprintf(stderr, "%s is being trained by %s: left to it\n", outcome.dir.c_str(),
                   outcome.holder.c_str());
      return kExitClaimedElsewhere;
    }
    return 0;
  }

  const std::optional<Shard> shard =
      options.shard.empty() ? shard_from_slurm_environment() : parse_shard(options.shard);
  for (std::size_t i = 0; i < total; ++i) {
    if (!shard) plan.runs.push_back(i);
  }
  if (shard) plan.runs = shard_runs(total, *shard);

  const std::string experiment_dir = (fs::path(options.output) / manifest.name()).string();
  std::printf("experiment '%s': %zu point(s), %zu run(s) -> %s\n", manifest.name().c_str(),
              manifest.points(), total, experiment_dir.c_str());
  if (shard) {
    std::printf("shard %zu/%zu: %zu of the %zu runs\n", shard->index, shard->count,
                plan.runs.size(), total);
  }
  if (ranks && rank_zero) {
    std::printf("each run data-parallel over %d ranks (%s), %lld thread(s) each\n", ranks->size(),
                rendezvous->source.c_str(), static_cast<long long>(plan.default_threads));
  }
  std::fflush(stdout);
  if (rank_zero) write_sweep_record(experiment_dir, manifest, options.manifest, options.overrides);
  const std::unique_ptr<Launcher> launcher =
      options.jobs > 1 && plan.runs.size() > 1
          ? make_process_pool_launcher(options.jobs, options.arguments)
          : make_sequential_launcher(registry);
  const std::vector<LaunchResult> results = launcher->launch(plan);

  std::vector<std::string> failed, elsewhere;
  for (const auto& result : results) {
    const std::string dir =
        (fs::path(options.output) / manifest.runs()[result.index].relative_dir()).string();
    if (result.state == LaunchState::kFailed) failed.push_back(dir);
    if (result.state == LaunchState::kClaimedElsewhere) elsewhere.push_back(dir);
  }
  if (!elsewhere.empty()) {
    std::printf(
        "%zu run(s) are being trained by other processes (`pelab status %s` shows them); "
        "they join the report when they finish\n",
        elsewhere.size(), experiment_dir.c_str());
  }
  if (!failed.empty()) {
    throw Error(fmt::format("{} of {} runs failed; see run.log and summary.json in:\n  {}",
                            failed.size(), plan.runs.size(), fmt::join(failed, "\n  ")));
  }
  if (!rank_zero) return 0;
  if (shard || options.no_report) {
    std::printf("report: `pelab report %s`%s\n", experiment_dir.c_str(),
                shard ? " once every shard has finished" : "");
    return 0;
  }
  // The table of every finished run in the folder; results.csv, report.md, report.html, figures/.
  report_after_run(experiment_dir, registry);
  return 0;
}

}  // namespace pelab::cli
