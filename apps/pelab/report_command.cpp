#include "report_command.h"

#include <cstdio>

#include <fmt/format.h>

#include "pelab/error.h"
#include "pelab/registry.h"
#include "report/report.h"

namespace pelab::cli {

namespace {

void print(const report::ReportResult& result) {
  std::printf("%zu finished run(s) in %zu point(s). Final values, mean ± SEM over seeds. %s\n",
              result.runs, result.points, result.metrics_table.c_str());
  for (const auto& warning : result.warnings)
    std::fprintf(stderr, "warning: %s\n", warning.c_str());
  std::printf(
      "Report: %s/report.html (self-contained), %s/report.md; all metrics: "
      "%s/results.csv; figures: %s/figures/\n",
      result.dir.c_str(), result.dir.c_str(), result.dir.c_str(), result.dir.c_str());
  std::fflush(stdout);
}

}  // namespace

int report(const Options& options, const ReportOptions& report_options) {
  Registry registry(Registry::default_search_path(options.plugin_folders));
  report::ReportOptions settings;
  settings.gnuplot = report_options.gnuplot;
  print(report::write_report(report_options.dir, &registry, settings));
  return 0;
}

void report_after_run(const std::string& experiment_dir, Registry& registry) {
  try {
    std::printf("\n");
    print(report::write_report(experiment_dir, &registry));
  } catch (const std::exception& e) {  // the runs are done and kept: a report problem is a warning
    std::fprintf(stderr, "warning: no report: %s\n", e.what());
  }
  std::fflush(stdout);
}

ReportCommand::ReportCommand(CLI::App& app, const Options& options) : options_(options) {
  command_ = app.add_subcommand(
      "report",
      "Aggregate an experiment (or run) folder: results.csv (mean, SEM, n over seeds of every "
      "metric and probe scalar), report.md, a self-contained report.html and gnuplot figures");
  command_
      ->add_option("dir", report_options_.dir,
                   "An experiment folder (<out>/<experiment>) or a run folder")
      ->required();
  command_->add_option("--gnuplot", report_options_.gnuplot,
                       "The gnuplot program (default: $PELAB_GNUPLOT, else gnuplot)");
}

}  // namespace pelab::cli
