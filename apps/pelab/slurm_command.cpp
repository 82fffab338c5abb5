#include "slurm_command.h"

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "launch/sweep_status.h"
#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/reusable_run.h"

namespace pelab::cli {

namespace fs = boost::filesystem;

SlurmCommand::SlurmCommand(CLI::App& app, const GlobalOptions& global)
    : Command(app, "slurm",
              "Run a manifest's sweep on a Slurm cluster: one array task per unfinished run, and a "
              "job that writes the report when the array ends. The scripts are kept in "
              "<out>/<experiment>/slurm/"),
      global_(global) {
  command_->add_option("manifest", manifest_, "The manifest (.toml)")->required();
  command_->add_option("--set", overrides_, "Override a key: --set train.epochs=50 (repeatable)")
      ->allow_extra_args(false);
  command_->add_option("--out", output_, "Output folder on the shared filesystem")
      ->capture_default_str();
  command_->add_option("--max-parallel", slurm_.max_parallel, "Array tasks running at once")
      ->check(CLI::Range(1, 100000));
  command_->add_option("--partition", slurm_.partition, "sbatch --partition");
  command_->add_option("--time", slurm_.time,
                       "sbatch --time of each run, e.g. 12:00:00; runs checkpoint, so one cut "
                       "short resumes when resubmitted");
  command_
      ->add_option("--cpus-per-task", slurm_.cpus_per_task,
                   "CPUs of each run (its intra-op threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  command_->add_option("--mem", slurm_.mem, "sbatch --mem, e.g. 8G");
  command_->add_option("--account", slurm_.account, "sbatch --account");
  command_
      ->add_option("--sbatch-option", slurm_.sbatch_options,
                   "Another sbatch option for the scripts, e.g. --sbatch-option=--qos=long "
                   "(repeatable)")
      ->allow_extra_args(false);
  command_->add_flag("--resubmit-failed", resubmit_failed_,
                     "Submit only the runs that failed or were interrupted");
  command_->add_flag("--force", force_, "Train finished runs again");
  command_
      ->add_option("--reuse", reuse_,
                   "Copy a finished run of the same configuration and seed found under this "
                   "folder (any experiment) instead of training it (probed again where its "
                   "probes differ; repeatable)")
      ->allow_extra_args(false)
      ->type_name("DIR");
  command_->add_flag("--dry-run", slurm_.dry_run,
                     "Print the scripts and the sbatch commands; write and submit nothing");
}

int SlurmCommand::execute() {
  PELAB_CHECK(!(force_ && !reuse_.empty()),
              "--force trains finished runs again, --reuse copies runs trained elsewhere: give "
              "one of them");
  ReusableRun::check_roots(reuse_);
  for (const auto& option : slurm_.sbatch_options) {
    PELAB_CHECK(option.rfind("--", 0) == 0 && option.size() > 2,
                "--sbatch-option '{}': give a long sbatch option such as --qos=long", option);
  }
  slurm_.plugin_folders = global_.plugin_folders;
  check_script_values(slurm_, output_, manifest_);
  Registry registry = global_.make_registry();
  const Manifest manifest = Manifest::from_file(manifest_, registry, overrides_);
  const std::string experiment_dir = ExperimentFolder::of(output_, manifest.name()).dir();

  LaunchPlan plan;
  plan.manifest = &manifest;
  plan.manifest_path = manifest_;
  plan.overrides = overrides_;
  plan.output = output_;
  plan.run_options.force = force_;
  plan.run_options.reuse_from = reuse_;
  std::size_t done = 0, running = 0, left_alone = 0;
  for (std::size_t i = 0; i < manifest.runs().size(); ++i) {
    const RunConfig& run = manifest.runs()[i];
    const RunStatus status = run_status(experiment_dir, relative_run_path(run.point, run.seed));
    const bool broken = status.state == RunState::kFailed || status.state == RunState::kInterrupted;
    if (status.state == RunState::kRunning) {
      ++running;
    } else if (status.state == RunState::kDone && !force_) {
      ++done;
    } else if (resubmit_failed_ && !broken) {
      ++left_alone;
    } else {
      plan.runs.push_back(i);
    }
  }
  fmt::print("experiment '{}': {} run(s) -> {}; {} done, {} running{}\n", manifest.name(),
             manifest.runs().size(), experiment_dir, done, running,
             resubmit_failed_ ? fmt::format(", {} pending", left_alone) : std::string());
  if (plan.runs.empty()) {
    fmt::print("nothing to submit{}\n",
               resubmit_failed_ ? ": no run failed or was interrupted" : "");
    return 0;
  }
  if (!slurm_.dry_run) write_sweep_record(experiment_dir, manifest, manifest_, overrides_);
  make_slurm_launcher(slurm_)->launch(plan);
  if (!slurm_.dry_run) {
    fmt::print("watch:  pelab status {0}\nlogs:   {0}/slurm/logs/\n", experiment_dir);
  }
  return 0;
}

}  // namespace pelab::cli
