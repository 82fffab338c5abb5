#include "validate_command.h"

#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/interfaces/task.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/run.h"

namespace pelab::cli {

namespace {

// What only a plugin can refuse (an initializer's parameter combination, a coordinate PE on a
// task that hides its coordinates, heads not dividing d_model) shows when it is built: build each
// point's task, model and PE once, as `pelab run` would, without training.
void build_each_point(const Manifest& manifest, Registry& registry) {
  std::set<std::string> built;
  std::map<std::string, std::shared_ptr<Task>> tasks;  // a task may take seconds to build
  for (const RunConfig& run : manifest.runs()) {
    if (!built.insert(run.point).second) continue;
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
}

// The points by the folders they will have: what [[sweep.point]]s and --sets made of the sweep.
void print_points(const Manifest& manifest) {
  constexpr std::size_t kPointsShown = 32;
  std::vector<std::string> points;
  for (const RunConfig& run : manifest.runs()) {
    if (!run.point.empty() && (points.empty() || points.back() != run.point))
      points.push_back(run.point);
  }
  for (std::size_t i = 0; i < points.size() && i < kPointsShown; ++i)
    fmt::print("  point: {}\n", points[i]);
  if (points.size() > kPointsShown)
    fmt::print("  ... and {} more point(s)\n", points.size() - kPointsShown);
}

}  // namespace

ValidateCommand::ValidateCommand(CLI::App& app, const GlobalOptions& global)
    : Command(app, "validate", "Check a manifest without running it"), global_(global) {
  command_->add_option("manifest", manifest_, "The manifest (.toml)")->required();
  command_->add_option("--set", overrides_, "Override a key: --set pe.init.std=0.5 (repeatable)")
      ->allow_extra_args(false);
  command_->add_flag("--no-build", no_build_,
                     "Check against the schemas only, without building each point's task, model "
                     "and PE (for a manifest whose data is not on this machine)");
}

int ValidateCommand::execute() {
  Registry registry = global_.make_registry();
  const Manifest manifest = Manifest::from_file(manifest_, registry, overrides_);
  if (!no_build_) build_each_point(manifest, registry);
  fmt::print("{}: valid. experiment '{}': {} point(s) x seeds = {} run(s){}\n", manifest_,
             manifest.name(), manifest.points(), manifest.runs().size(),
             no_build_ ? "" : ", each point built");
  for (const auto& key : manifest.sweep_keys())
    fmt::print("  sweep: {}\n", key);
  print_points(manifest);
  return 0;
}

}  // namespace pelab::cli
