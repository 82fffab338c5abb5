#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"

namespace pelab::cli {

/// `pelab status EXPERIMENT_DIR`: each run of the experiment as done, running (where, how far,
/// ETA), failed (why), interrupted or pending, as a table, and the counts. The exit status is 0
/// when every run is done, 1 otherwise, so that scripts can wait on it.
class StatusCommand {
 public:
  explicit StatusCommand(CLI::App& app);
  bool parsed() const { return command_->parsed(); }
  int execute() const;

 private:
  std::string dir_;
  CLI::App* command_ = nullptr;
};

}  // namespace pelab::cli
