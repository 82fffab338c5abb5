#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pelab/base/export.h"

namespace pelab {

/// `sweep.json`: the runs a manifest expands to, so that the runs not started yet are known too.
/// Written by `pelab run` and `pelab slurm`.
struct PELAB_API SweepRecord {
  std::string manifest;  // the manifest's absolute path
  std::vector<std::string> overrides;
  std::vector<std::string> runs;  // run folders relative to the experiment folder, in run order
};

/// An experiment's folder, `<out>/<experiment>/`, and the one place that names what it holds: a
/// run folder (RunFolder) per sweep point and seed at `relative_run_path` (config/manifest.h),
/// `sweep.json` (SweepRecord), what `pelab report` writes (`results.csv`, `comparisons.csv`,
/// `report.md`, `report.html`, `figures/`), the `slurm/` folder of `pelab slurm`, and the hidden
/// copies of the manifest that a `-j` sweep's workers read (`.manifest-<host>-<pid>/`). A report
/// over several experiments writes into a folder of this kind too.
class PELAB_API ExperimentFolder {
 public:
  explicit ExperimentFolder(std::string dir);
  /// `<output_root>/<experiment>`.
  static ExperimentFolder of(const std::string& output_root, const std::string& experiment);

  const std::string& dir() const { return dir_; }
  /// A file or folder in it: `dir/relative`.
  std::string path(const std::string& relative) const;

  /// A sweep point's folder, `<point>/`, which holds its seeds' run folders and its record.
  std::string point_folder(const std::string& point) const;
  /// `<point>/point.toml`: the configuration the point serves (point_record.h), and the lock
  /// under which it is written and read.
  static constexpr const char* kPointRecordFile = "point.toml";
  std::string point_record_file(const std::string& point) const;
  std::string point_lock_file(const std::string& point) const;

  /// The `<point>/seed-<s>` folders in it, relative to it and sorted, whether or not a run has
  /// written to them yet.
  std::vector<std::string> seed_folders() const;

  /// The run folders that `dir` names: `dir` itself when it is a run folder, else the seed folders
  /// of the experiment folder `dir` that hold a run's configuration. An Error when there are none.
  static std::vector<std::string> run_folders(const std::string& dir);

  std::string sweep_record_path() const;
  void write_sweep_record(const SweepRecord& record) const;
  /// nullopt when the folder has no sweep.json; an Error when it has one pelab did not write.
  std::optional<SweepRecord> read_sweep_record() const;

  // What `pelab report` writes.
  static constexpr const char* kResultsFile = "results.csv";
  static constexpr const char* kComparisonsFile = "comparisons.csv";
  static constexpr const char* kReportMarkdown = "report.md";
  static constexpr const char* kReportHtml = "report.html";
  static constexpr const char* kFiguresFolder = "figures";
  std::string results_file() const { return path(kResultsFile); }
  std::string comparisons_file() const { return path(kComparisonsFile); }
  std::string report_markdown_file() const { return path(kReportMarkdown); }
  std::string report_html_file() const { return path(kReportHtml); }
  std::string figures_folder() const { return path(kFiguresFolder); }

  /// `slurm/`: the array's scripts, its logs and the copy of the manifest its tasks run.
  static constexpr const char* kSlurmFolder = "slurm";
  std::string slurm_folder() const { return path(kSlurmFolder); }

  /// The folder of the manifest copy that the `-j` sweep of process `pid` on `host` gives its
  /// workers, and the prefix every such folder of `host` starts with (to find those of dead
  /// processes).
  std::string manifest_snapshot_folder(const std::string& host, long pid) const;
  static std::string manifest_snapshot_prefix(const std::string& host);

 private:
  std::string dir_;
};

}  // namespace pelab
