#pragma once

#include <optional>
#include <string>
#include <vector>

#include "command.h"

namespace pelab {
class Registry;
}

namespace pelab::cli {

/// What `pelab report` reads from its command line.
struct ReportOptions {
  std::vector<std::string> dirs;          // experiment or run folders
  std::string out;                        // where the report goes; empty: the one folder of `dirs`
  std::string gnuplot;                    // empty: $PELAB_GNUPLOT or gnuplot
  std::vector<std::string> compare;       // pairs of points to compare alone (--compare A B ...)
  std::optional<double> reference_scale;  // --reference-scale
  std::vector<std::string> where;         // --where KEY=VALUE, each a condition on the runs
};

/// Writes results.csv, report.md, report.html and figures/ for one experiment or run folder (in
/// it, or in `out`), or for several side by side (in `out`), and prints the accuracy table and
/// where the files are.
int report(const GlobalOptions& global, const ReportOptions& report_options);

/// The report of an experiment `pelab run` has just run, printed as `pelab report` prints it: it
/// covers every finished run in the folder. A failure is a warning: the runs are kept.
void report_after_run(const std::string& experiment_dir, Registry& registry);

/// The `report` subcommand.
class ReportCommand : public Command {
 public:
  ReportCommand(CLI::App& app, const GlobalOptions& global);
  int execute() override { return report(global_, report_options_); }

 private:
  const GlobalOptions& global_;
  ReportOptions report_options_;
};

}  // namespace pelab::cli
