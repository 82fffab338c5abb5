// pelab: the command line of the positional-encoding laboratory.

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <c10/util/Exception.h>
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "bench_command.h"
#include "command.h"
#include "describe_command.h"
#include "doctor_command.h"
#include "pelab/base/error.h"
#include "pelab/host/blas_kernel.h"
#include "pelab/host/host_info.h"
#include "plugins_command.h"
#include "probe_command.h"
#include "report_command.h"
#include "run_command.h"
#include "slurm_command.h"
#include "status_command.h"
#include "validate_command.h"

namespace {

// The subcommands, in the order `pelab --help` lists them.
std::vector<std::unique_ptr<pelab::cli::Command>> make_commands(
    CLI::App& app, const pelab::cli::GlobalOptions& global) {
  using namespace pelab::cli;
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(std::make_unique<PluginsCommand>(app, global));
  commands.push_back(std::make_unique<DescribeCommand>(app, global));
  commands.push_back(std::make_unique<ValidateCommand>(app, global));
  commands.push_back(std::make_unique<RunCommand>(app, global));
  commands.push_back(std::make_unique<ProbeCommand>(app, global));
  commands.push_back(std::make_unique<ReportCommand>(app, global));
  commands.push_back(std::make_unique<StatusCommand>(app));
  commands.push_back(std::make_unique<SlurmCommand>(app, global));
  commands.push_back(std::make_unique<DoctorCommand>(app));
  commands.push_back(std::make_unique<BenchCommand>(app, global));
  return commands;
}

int execute(pelab::cli::Command& command, char** argv) {
  try {
    // Before anything computes: may re-execute pelab with a better BLAS kernel (blas_kernel.h).
    if (command.computes()) pelab::use_best_blas_kernel(argv);
    return command.execute();
  } catch (const pelab::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  } catch (const c10::Error& e) {
    // Most often a value LibTorch cannot take; the backtrace is for pelab's developers.
    fmt::print(stderr,
               "error: LibTorch: {}\nIf the input was valid, please report this as a bug.\n",
               e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "internal error: {}\nPlease report this as a bug.\n", e.what());
    return 1;  // 2 is a command line pelab cannot parse (kExitUsage)
  }
}

}  // namespace

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

  pelab::cli::GlobalOptions global;
  global.arguments.assign(argv, argv + argc);
  app.add_option("--plugin-path", global.plugin_folders,
                 "Folder to search for plugins before PELAB_PLUGIN_PATH and the built-in folder "
                 "(repeatable)")
      ->allow_extra_args(false)
      ->check(CLI::ExistingDirectory);
  const auto commands = make_commands(app, global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return pelab::cli::report_parse_error(app, e);
  }
  for (const auto& command : commands) {
    if (command->parsed()) return execute(*command, argv);
  }
  return 0;
}
