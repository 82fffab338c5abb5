#pragma once

#include <string>
#include <vector>

#include "command.h"

namespace pelab::cli {

/// `pelab validate MANIFEST`: reads the manifest against every schema and, unless --no-build,
/// builds each point's task (checking the splits it loads), model and PE once, without training;
/// prints the points the sweep expands to.
class ValidateCommand : public Command {
 public:
  ValidateCommand(CLI::App& app, const GlobalOptions& global);
  int execute() override;

 private:
  const GlobalOptions& global_;
  std::string manifest_;
  std::vector<std::string> overrides_;
  bool no_build_ = false;
};

}  // namespace pelab::cli
