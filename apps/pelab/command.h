#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pelab/base/plugin_kind.h"

namespace pelab {
class Registry;
}

namespace pelab::cli {

/// What every subcommand shares: the options given before it, and the command line as given (to
/// start workers and ranks with).
struct GlobalOptions {
  std::vector<std::string> plugin_folders;  // --plugin-path, before PELAB_PLUGIN_PATH
  std::vector<std::string> arguments;

  /// The registry on this command line's plugin path.
  Registry make_registry() const;
};

/// A subcommand of `pelab`. Its constructor registers it and its options on the app; main runs
/// the one the command line named. User errors are thrown as pelab::Error.
class Command {
 public:
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  bool parsed() const { return command_->parsed(); }
  /// Whether it computes (trains, probes, times): main then lets pelab choose the BLAS kernel
  /// before anything runs (blas_kernel.h).
  virtual bool computes() const { return false; }
  /// The process's exit status.
  virtual int execute() = 0;

 protected:
  Command(CLI::App& app, const std::string& name, const std::string& description)
      : command_(app.add_subcommand(name, description)) {}

  CLI::App* command_;
};

/// The kind a --kind option names (pe, init, task, probe); nullopt when the option was not given.
/// Any other text is refused with the kinds there are.
std::optional<PluginKind> kind_option(const std::string& text);

/// "pelab 0.1.0 (plugin API 7, LibTorch 1.13.0, <ABI tag>)".
std::string version_text();

/// The exit status of a command line pelab cannot parse (1 is for a command that failed).
constexpr int kExitUsage = 2;

/// Reports what CLI11 refused on the command line (an unknown command or option, a missing
/// argument, a value out of range) on stderr: "error: ...", the closest valid name when one is
/// close, and a line that points at the help. Returns the exit status: kExitUsage, or 0 for
/// --help and --version, which CLI11 prints.
int report_parse_error(const CLI::App& app, const CLI::ParseError& error);

}  // namespace pelab::cli
