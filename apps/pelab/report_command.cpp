#include "report_command.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "pelab/base/error.h"
#include "pelab/plugins/registry.h"
#include "pelab/runs/experiment_folder.h"
#include "report/comparisons.h"
#include "report/report.h"

namespace pelab::cli {

namespace {

void print(const report::ReportResult& result) {
  fmt::print("{} finished run(s) in {} point(s). Final values, mean ± SEM over seeds. {}\n",
             result.runs, result.points, result.metrics_table);
  if (!result.comparisons_text.empty())
    fmt::print("Comparisons (B - A, 95% bootstrap CI, sign-flip p, Holm p):\n{}\n",
               result.comparisons_text);
  for (const auto& warning : result.warnings)
    fmt::print(stderr, "warning: {}\n", warning);
  const ExperimentFolder folder(result.dir);
  fmt::print("Report: {} (self-contained), {}; all metrics: {}; figures: {}/\n",
             folder.report_html_file(), folder.report_markdown_file(), folder.results_file(),
             folder.figures_folder());
  std::fflush(stdout);
}

}  // namespace

int report(const GlobalOptions& global, const ReportOptions& report_options) {
  Registry registry = global.make_registry();
  report::ReportOptions settings;
  settings.gnuplot = report_options.gnuplot;
  settings.reference_scale = report_options.reference_scale;
  for (const auto& text : report_options.where)
    settings.where.push_back(report::RunFilter::parse(text));
  const std::vector<std::string>& dirs = report_options.dirs;
  PELAB_CHECK(dirs.size() == 1 || !report_options.out.empty(),
              "{} folders to report on side by side, but no --out: give the folder the combined "
              "report goes to (it is not written into any of the runs' folders), e.g. --out "
              "runs/comparison",
              dirs.size());
  if (!report_options.compare.empty()) {
    // Comparisons asked for by name: printed, nothing written.
    PELAB_CHECK(report_options.compare.size() % 2 == 0,
                "--compare takes two points, A and B (B - A is compared), and '{}' has no partner: "
                "give `--compare A B`, once per comparison",
                report_options.compare.back());
    std::vector<report::NamedPair> pairs;
    for (std::size_t i = 0; i + 1 < report_options.compare.size(); i += 2)
      pairs.push_back({report_options.compare[i], report_options.compare[i + 1]});
    const report::Experiment experiment = report::collect(dirs, &registry, settings.where);
    const auto tables =
        report::compare_named(experiment, report::headline_metrics(experiment), pairs);
    PELAB_CHECK(!tables.empty(), "--compare: the points asked for share no evaluated metric");
    if (pairs.size() > 1)
      fmt::print("Holm p: over the {} comparisons asked for, on each metric\n\n", pairs.size());
    for (const auto& pair : pairs) {
      bool named = false;
      for (const auto& table : tables) {
        for (const auto& row : table.rows) {
          if ((row.a != pair.a && row.a_point != pair.a) ||
              (row.b != pair.b && row.b_point != pair.b))
            continue;
          if (!named) fmt::print("B = {}\nA = {}\n{}\n", row.b, row.a, row.comparison.method());
          named = true;
          fmt::print("{}: {}\n", table.metric,
                     row.comparison.text(table.display.format, table.display.factor));
        }
      }
      PELAB_CHECK(named, "--compare: '{}' and '{}' share no evaluated metric", pair.a, pair.b);
      if (&pair != &pairs.back()) fmt::print("\n");
    }
    return 0;
  }
  const std::string out = report_options.out.empty() ? dirs.front() : report_options.out;
  const report::ReportResult result = report::write_report(dirs, out, &registry, settings);
  print(result);
  if (result.figures_failed > 0) {
    fmt::print(stderr,
               "error: {} figure script(s) failed (see the warnings above); the rest of "
               "the report is written\n",
               result.figures_failed);
    return 1;
  }
  return 0;
}

void report_after_run(const std::string& experiment_dir, Registry& registry) {
  try {
    fmt::print("\n");
    print(report::write_report(experiment_dir, &registry));
  } catch (const std::exception& e) {  // the runs are done and kept: a report problem is a warning
    fmt::print(stderr, "warning: no report: {}\n", e.what());
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
  command_
      ->add_option("--compare", report_options_.compare,
                   "Compare two points alone, B against A (`--compare A B`, by label or folder "
                   "name): B - A per seed, its 95% bootstrap CI and sign-flip p on every headline "
                   "metric and evaluation split; prints, writes nothing. Repeat it to ask for "
                   "several comparisons, Holm-adjusted together")
      ->expected(2)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command_
      ->add_option("--reference-scale", report_options_.reference_scale,
                   "Compare every init scale of a series with this one (e.g. 2, the large-norm "
                   "start) rather than with the series' smallest; a series without it keeps its "
                   "smallest")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            try {
              std::size_t used = 0;
              const double value = std::stod(text, &used);
              if (used == text.size() && std::isfinite(value) && value > 0.0) return "";
            } catch (const std::exception&) {
            }
            return "'" + text + "' is not an init scale: give a positive number, e.g. 2";
          },
          "SCALE"));
  command_->add_option("--where", report_options_.where,
                       "Only the runs whose config.toml has this value at this key, KEY=VALUE "
                       "(e.g. task.dims=2: one half of a sweep, its tests adjusted among its own "
                       "comparisons), or only these seeds, seed=S1,S2,... (e.g. the quick "
                       "protocol's three of a 15-seed sweep); repeat it for several conditions, "
                       "all of which must hold");
  command_->add_option("--gnuplot", report_options_.gnuplot,
                       "The gnuplot program (default: $PELAB_GNUPLOT, else gnuplot)");
}

}  // namespace pelab::cli
