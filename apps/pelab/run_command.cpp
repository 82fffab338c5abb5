#include "run_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "launch/launcher.h"
#include "launch/rank_launcher.h"
#include "launch/shard.h"
#include "launch/sweep_status.h"
#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/reusable_run.h"
#include "pelab/runs/run.h"
#include "pelab/runs/run_folder.h"
#include "pelab/training/collective.h"
#include "pelab/training/rendezvous.h"
#include "report_command.h"

namespace pelab::cli {

namespace fs = boost::filesystem;

namespace {

// The runs that failed and those another process trains, said after the sweep; throws when any
// failed.
void report_outcome(const std::vector<LaunchResult>& results, const Manifest& manifest,
                    const LaunchPlan& plan, const std::string& experiment_dir) {
  std::vector<std::string> failed, elsewhere;
  for (const auto& result : results) {
    const std::string dir =
        (fs::path(plan.output) / manifest.runs()[result.index].relative_dir()).string();
    if (result.state == LaunchState::kFailed) failed.push_back(dir);
    if (result.state == LaunchState::kClaimedElsewhere) elsewhere.push_back(dir);
  }
  if (!elsewhere.empty()) {
    fmt::print(
        "{} run(s) are being trained by other processes (`pelab status {}` shows them); "
        "they join the report when they finish\n",
        elsewhere.size(), experiment_dir);
  }
  if (!failed.empty()) {
    throw Error(fmt::format("{} of {} runs failed; see {} and {} in:\n  {}", failed.size(),
                            plan.runs.size(), RunFolder::kLogFile, RunFolder::kSummaryFile,
                            fmt::join(failed, "\n  ")));
  }
}

}  // namespace

RunCommand::RunCommand(CLI::App& app, const GlobalOptions& global)
    : Command(app, "run", "Run every point and seed of a manifest"), global_(global) {
  command_->add_option("manifest", manifest_, "The manifest (.toml)")->required();
  command_->add_option("--set", overrides_, "Override a key: --set train.epochs=50 (repeatable)")
      ->allow_extra_args(false);
  command_->add_option("--out", output_, "Output folder (runs go to OUT/<experiment>/...)")
      ->capture_default_str();
  command_->add_flag("--force", force_, "Re-run runs that already finished");
  command_
      ->add_option(
          "--reuse", reuse_,
          "Before training a run, look under this folder (an output root such as runs, or an "
          "experiment's folder) for a finished run of the same configuration and seed in any "
          "experiment, and copy it instead (probed again where its probes differ); its "
          "summary.json says where from (repeatable)")
      ->allow_extra_args(false)
      ->type_name("DIR");
  command_->add_flag("--quiet", quiet_, "No progress lines");
  command_
      ->add_option("--jobs,-j", jobs_,
                   "Runs at once, each in its own process with its share of the cores")
      ->check(CLI::Range(1, 1024));
  command_
      ->add_option("--nproc-per-node", nproc_per_node_,
                   "Train each run with N processes on this host, data-parallel (torchrun's "
                   "--nproc-per-node; under torchrun or srun the ranks come from their variables)")
      ->check(CLI::Range(1, 1024));
  command_
      ->add_option("--rank-timeout", rank_timeout_,
                   "Seconds a rank of a data-parallel run waits for the others before it fails")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
  command_->add_option("--shard", shard_,
                       "Run only the K-th of N interleaved slices of the runs, K/N (inside a "
                       "Slurm array task: from SLURM_ARRAY_TASK_ID, _MIN and _MAX when not given)");
  command_->add_flag("--no-report", no_report_, "Do not write the report at the end");
  command_->add_option("--only", only_, "Run only the run with this index (0-based)")
      ->group("");  // internal: how --jobs starts its workers
  command_->add_option("--progress-fd", progress_fd_, "Report each epoch on this descriptor")
      ->group("");  // internal: how a worker of --jobs reports to its parent
  command_->add_option("--core-share", core_share_, "The cores this worker was given")
      ->check(CLI::Range(1, 1 << 20))
      ->group("");  // internal: a worker of --jobs's share of its parent's cores
}

int RunCommand::start_local_ranks() const {
  PELAB_CHECK(jobs_ == 1,
              "-j {} trains several runs at once, --nproc-per-node {} one run with several "
              "processes: give one of them",
              jobs_, nproc_per_node_);
  // Read the manifest once here, so that a bad one is said once rather than by every rank.
  Registry registry = global_.make_registry();
  const Manifest manifest = Manifest::from_file(manifest_, registry, overrides_);
  LaunchPlan plan = make_plan(manifest);
  for (std::size_t i = 0; i < manifest.runs().size(); ++i)
    plan.runs.push_back(i);
  const auto grace =
      std::min(std::chrono::milliseconds(static_cast<std::int64_t>(rank_timeout_ * 1000.0)),
               std::chrono::milliseconds(30000));
  for (const LaunchResult& result :
       make_local_ranks_launcher(nproc_per_node_, global_.arguments, grace)->launch(plan)) {
    if (result.state == LaunchState::kFailed) return result.exit_status;
  }
  return 0;
}

LaunchPlan RunCommand::make_plan(const Manifest& manifest) const {
  LaunchPlan plan;
  plan.manifest = &manifest;
  plan.manifest_path = manifest_;
  plan.overrides = overrides_;
  plan.output = output_;
  plan.run_options.progress = !quiet_;
  plan.run_options.progress_fd = progress_fd_;
  plan.run_options.force = force_;
  plan.run_options.reuse_from = reuse_;
  plan.run_options.cores = core_share_ > 0 ? CoreShare::given(core_share_, "a -j worker's share")
                                           : CoreShare::of_this_process();
  return plan;
}

int RunCommand::train_one_run(const Manifest& manifest, Registry& registry,
                              const LaunchPlan& plan) const {
  const std::size_t total = manifest.runs().size();
  PELAB_CHECK(static_cast<std::size_t>(only_) < total, "--only {}: the manifest expands to {} runs",
              only_, total);
  PELAB_CHECK(shard_.empty(), "--only and --shard select runs both: give one");
  const RunOutcome outcome =
      execute_run(manifest.runs()[only_], registry, output_, plan.run_options);
  if (outcome.claimed_elsewhere) {
    fmt::print(stderr, "{} is being trained by {}: left to it\n", outcome.dir, outcome.holder);
    return kExitClaimedElsewhere;
  }
  // The parent says so on its board; summary.json and run.log name the source.
  if (!outcome.reused_from.empty()) return kExitReused;
  if (!outcome.not_reused.empty())
    fmt::print(stderr, "{}: trained, not reused: {}\n", outcome.dir, outcome.not_reused);
  return 0;
}

int RunCommand::execute() {
  PELAB_CHECK(!(force_ && !reuse_.empty()),
              "--force trains finished runs again, --reuse copies runs trained elsewhere: give "
              "one of them");
  ReusableRun::check_roots(reuse_);
  if (nproc_per_node_ > 1) return start_local_ranks();
  const std::optional<Rendezvous> rendezvous = Rendezvous::from_environment();
  if (rendezvous) {
    PELAB_CHECK(jobs_ == 1,
                "-j {} trains several runs at once, but this process is {} of a data-parallel "
                "run ({}): drop -j",
                jobs_, rendezvous->describe(), rendezvous->source);
  }
  Registry registry = global_.make_registry();
  const Manifest manifest = Manifest::from_file(manifest_, registry, overrides_);
  const std::size_t total = manifest.runs().size();
  std::unique_ptr<Collective> ranks;
  if (rendezvous)
    ranks = Collective::connect(
        *rendezvous, std::chrono::milliseconds(static_cast<std::int64_t>(rank_timeout_ * 1000.0)));
  const bool rank_zero = !ranks || ranks->rank() == 0;
  // Rank 0 speaks for the run; the others' output would repeat it line for line.
  if (!rank_zero && std::freopen("/dev/null", "w", stdout) == nullptr) {
    throw Error("cannot silence this rank's standard output");
  }
  LaunchPlan plan = make_plan(manifest);
  plan.run_options.progress = !quiet_ && rank_zero;
  plan.run_options.ranks = ranks.get();
  if (rendezvous && !plan.run_options.cores->from_scheduler) {
    // The ranks on one host share its cores (a scheduler gave each its own already).
    plan.run_options.cores = plan.run_options.cores->split(
        rendezvous->local_world_size,
        fmt::format("{} ranks on this host", rendezvous->local_world_size));
  }
  if (only_ >= 0) return train_one_run(manifest, registry, plan);  // a worker of --jobs

  const std::optional<Shard> shard =
      shard_.empty() ? shard_from_slurm_environment() : parse_shard(shard_);
  if (shard) {
    plan.runs = shard_runs(total, *shard);
  } else {
    for (std::size_t i = 0; i < total; ++i)
      plan.runs.push_back(i);
  }
  const std::string experiment_dir = ExperimentFolder::of(output_, manifest.name()).dir();
  fmt::print("experiment '{}': {} point(s), {} run(s) -> {}\n", manifest.name(), manifest.points(),
             total, experiment_dir);
  if (shard) {
    fmt::print("shard {}/{}: {} of the {} runs\n", shard->index, shard->count, plan.runs.size(),
               total);
  }
  if (ranks && rank_zero) {
    fmt::print("each run data-parallel over {} ranks ({}), {} core(s) each ({})\n", ranks->size(),
               rendezvous->source, plan.run_options.cores->cores, plan.run_options.cores->source);
  }
  std::fflush(stdout);
  if (rank_zero) write_sweep_record(experiment_dir, manifest, manifest_, overrides_);
  const std::unique_ptr<Launcher> launcher =
      jobs_ > 1 && plan.runs.size() > 1 ? make_process_pool_launcher(jobs_, global_.arguments)
                                        : make_sequential_launcher(registry);
  report_outcome(launcher->launch(plan), manifest, plan, experiment_dir);
  if (!rank_zero) return 0;
  if (shard || no_report_) {
    fmt::print("report: `pelab report {}`{}\n", experiment_dir,
               shard ? " once every shard has finished" : "");
    return 0;
  }
  // The table of every finished run in the folder; results.csv, report.md, report.html, figures/.
  report_after_run(experiment_dir, registry);
  return 0;
}

}  // namespace pelab::cli
