#include "report_command.h"

#include <cstdio>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
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

int report(const GlobalOptions& global, const ReportOptions& report_options) {
  Registry registry = global.make_registry();
  report::ReportOptions settings;
  settings.gnuplot = report_options.gnuplot;
  const std::vector<std::string>& dirs = report_options.dirs;
  PELAB_CHECK(dirs.size() == 1 || !report_options.out.empty(),
              "{} folders to report on side by side, but no --out: give the folder the combined "
              "report goes to (it is not written into any of the runs' folders), e.g. --out "
              "runs/comparison",
              dirs.size());
  const std::string out = report_options.out.empty() ? dirs.front() : report_options.out;
  print(report::write_report(dirs, out, &registry, settings));
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

ReportCommand::ReportCommand(CLI::App& app, const GlobalOptions& global)
    : Command(
          app, "report",
          "Aggregate an experiment (or run) folder: results.csv (mean, SEM, n over seeds of every "
          "metric and probe scalar), report.md, a self-contained report.html and gnuplot figures. "
          "Several folders give one report that compares them (with --out)"),
      global_(global) {
  command_
      ->add_option("dirs", report_options_.dirs,
                   "An experiment folder (<out>/<experiment>) or a run folder; several, to "
                   "compare experiments side by side (each one's points a series of their own) "
                   "or to join the shards of one sweep")
      ->required();
  command_->add_option("--out", report_options_.out,
                       "The folder the report goes to (default: the one folder given; required "
                       "with several)");
  command_->add_option("--gnuplot", report_options_.gnuplot,
                       "The gnuplot program (default: $PELAB_GNUPLOT, else gnuplot)");
}

}  // namespace pelab::cli
