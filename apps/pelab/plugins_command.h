#pragma once

#include <string>

#include "command.h"

namespace pelab::cli {

/// `pelab plugins [--kind K]`: the plugins on the plugin path by kind, then the search path, the
/// files shadowed by an earlier one and the files that did not load (why).
class PluginsCommand : public Command {
 public:
  PluginsCommand(CLI::App& app, const GlobalOptions& global);
  int execute() override;

 private:
  const GlobalOptions& global_;
  std::string kind_;
};

}  // namespace pelab::cli
