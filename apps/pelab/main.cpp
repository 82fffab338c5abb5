// pelab: the command line of the positional-encoding laboratory.

#include <cstdio>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "bench_command.h"
#include "commands.h"
#include "doctor_command.h"
#include "pelab/error.h"
#include "pelab/host/blas_kernel.h"
#include "pelab/host/host_info.h"
#include "probe_command.h"
#include "report_command.h"
#include "slurm_command.h"
#include "status_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "pelab: a laboratory for positional encodings in transformers.\n"
      "Compose a task, a model, a positional encoding and its initialisation in a TOML manifest;\n"
      "train, probe and compare them. Plugins are shared libraries found on the plugin path."};
  app.require_subcommand(1);
  // The version and what this host computes with, as OpenBLAS chose it (a command that computes
  // may choose a better kernel: pelab doctor shows the kernel in use).
  app.set_version_flag("--version", [] {
    std::string text = pelab::cli::version_text() + "\n" + pelab::host_report(pelab::host_info());
    text.pop_back();  // CLI11 ends the line
    return text;
  });

  pelab::cli::Options options;
  app.add_option("--plugin-path", options.plugin_folders,
                 "Folder to search for plugins before PELAB_PLUGIN_PATH and the built-in folder "
                 "(repeatable)")
      ->allow_extra_args(false);

  auto* plugins = app.add_subcommand("plugins", "List the plugins on the plugin path");
  plugins->add_option("--kind", options.kind, "Only this kind: pe, init, task or probe");

  auto* describe = app.add_subcommand("describe",
                                      "Show a plugin's parameters (or those of a core section: "
                                      "experiment, model, train)");
  describe->add_option("name", options.name, "Plugin name, or experiment|model|train")->required();
  describe->add_option("--kind", options.kind, "The kind, when several kinds share the name");

  auto* validate = app.add_subcommand("validate", "Check a manifest without running it");
  validate->add_option("manifest", options.manifest, "The manifest (.toml)")->required();
  validate
      ->add_option("--set", options.overrides, "Override a key: --set pe.init.std=0.5 (repeatable)")
      ->allow_extra_args(false);
  validate->add_flag("--no-build", options.no_build,
                     "Check against the schemas only, without building each point's task, model "
                     "and PE (for a manifest whose data is not on this machine)");

  auto* run = app.add_subcommand("run", "Run every point and seed of a manifest");
  run->add_option("manifest", options.manifest, "The manifest (.toml)")->required();
  run->add_option("--set", options.overrides, "Override a key: --set train.epochs=50 (repeatable)")
      ->allow_extra_args(false);
  run->add_option("--out", options.output, "Output folder (runs go to OUT/<experiment>/...)")
      ->capture_default_str();
  run->add_flag("--force", options.force, "Re-run runs that already finished");
  run->add_flag("--quiet", options.quiet, "No progress lines");
  run->add_option("--jobs,-j", options.jobs,
                  "Runs at once, each in its own process with its share of the cores")
      ->check(CLI::Range(1, 1024));
  run->add_option("--nproc-per-node", options.nproc_per_node,
                  "Train each run with N processes on this host, data-parallel (torchrun's "
                  "--nproc-per-node; under torchrun or srun the ranks come from their variables)")
      ->check(CLI::Range(1, 1024));
  run->add_option("--rank-timeout", options.rank_timeout,
                  "Seconds a rank of a data-parallel run waits for the others before it fails")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
  run->add_option("--shard", options.shard,
                  "Run only the K-th of N interleaved slices of the runs, K/N (inside a Slurm "
                  "array task: from SLURM_ARRAY_TASK_ID, _MIN and _MAX when not given)");
  run->add_flag("--no-report", options.no_report, "Do not write the report at the end");
  run->add_option("--only", options.only, "Run only the run with this index (0-based)")
      ->group("");  // internal: how --jobs starts its workers
  run->add_option("--progress-fd", options.progress_fd, "Report each epoch on this descriptor")
      ->group("");  // internal: how a worker of --jobs reports to its parent
  pelab::cli::ProbeCommand probe(app, options);
  pelab::cli::ReportCommand report(app, options);
  pelab::cli::StatusCommand status(app);
  pelab::cli::SlurmCommand slurm(app, options);
  pelab::cli::DoctorCommand doctor(app);
  pelab::cli::BenchOptions bench_options;
  auto* bench = app.add_subcommand(
      "bench",
      "Time plugins through their interface with Google Benchmark: a PE's forward + backward, an "
      "initializer's fill, a task's loading, a probe's run");
  bench->add_option("plugins", bench_options.plugins,
                    "Plugin names or inline tables ('{ plugin = \"learned\", init = \"zeros\" "
                    "}'); none: every plugin on the path");
  bench->add_option("--kind", bench_options.kind,
                    "Only plugins of this kind: pe, init, task, probe");
  bench->add_option("--set", bench_options.overrides, "Set a parameter: --set init.std=0.5")
      ->allow_extra_args(false);
  bench->add_option("--tokens", bench_options.tokens, "Token counts (PEs, initializers)")
      ->delimiter(',')
      ->capture_default_str();
  bench->add_option("--probe-tokens", bench_options.probe_tokens, "Token counts (probes)")
      ->delimiter(',')
      ->capture_default_str();
  bench->add_option("--d-model", bench_options.d_model, "Model widths")
      ->delimiter(',')
      ->capture_default_str();
  bench->add_option("--batch", bench_options.batch, "Sequences per batch (PEs)")
      ->capture_default_str();
  bench->add_option("--heads", bench_options.heads, "Attention heads (PEs)")->capture_default_str();
  bench->add_option("--layout", bench_options.layout, "Token layout: sequence, grid2d or grid3d")
      ->capture_default_str();
  bench->add_option("--threads", bench_options.threads, "LibTorch intra-op threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  bench->allow_extras();  // --benchmark_* flags go to Google Benchmark

  options.arguments.assign(argv, argv + argc);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    // Before anything computes: may re-execute pelab with a better BLAS kernel (blas_kernel.h).
    if (*run || probe.parsed() || *bench || doctor.parsed()) pelab::use_best_blas_kernel(argv);
    if (*plugins) return pelab::cli::list_plugins(options);
    if (*describe) return pelab::cli::describe(options);
    if (*validate) return pelab::cli::validate(options);
    if (*run) return pelab::cli::run(options);
    if (probe.parsed()) return probe.execute();
    if (report.parsed()) return report.execute();
    if (status.parsed()) return status.execute();
    if (slurm.parsed()) return slurm.execute();
    if (doctor.parsed()) return doctor.execute();
    if (*bench) {
      bench_options.benchmark_flags = bench->remaining();
      return pelab::cli::bench(bench_options, options.plugin_folders);
    }
  } catch (const pelab::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const c10::Error& e) {
    // Most often a value LibTorch cannot take; the backtrace is for pelab's developers.
    std::fprintf(stderr,
                 "error: LibTorch: %s\nIf the input was valid, please report this as a bug.\n",
                 e.what_without_backtrace());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\nPlease report this as a bug.\n", e.what());
    return 2;
  }
  return 0;
}
