#pragma once

#include <string>

#include "command.h"

namespace pelab::cli {

/// `pelab status EXPERIMENT_DIR`: each run of the experiment as done, running (where, how far,
/// ETA), failed (why), interrupted or pending, as a table, and the counts. The exit status is 0
/// when every run is done, 1 otherwise, so that scripts can wait on it.
class StatusCommand : public Command {
 public:
  explicit StatusCommand(CLI::App& app);
  int execute() override;

 private:
  std::string dir_;
};

}  // namespace pelab::cli
