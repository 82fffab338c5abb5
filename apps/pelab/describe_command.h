#pragma once

#include <string>

#include "command.h"

namespace pelab::cli {

/// `pelab describe NAME [--kind K]`: a plugin's parameters (accepted values, default, doc), or a
/// core section's (experiment, model, train).
class DescribeCommand : public Command {
 public:
  DescribeCommand(CLI::App& app, const GlobalOptions& global);
  int execute() override;

 private:
  const GlobalOptions& global_;
  std::string name_;
  std::string kind_;
};

}  // namespace pelab::cli
