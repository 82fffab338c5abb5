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
/// run folder (RunFolder) per sweep point and seed, `<point>/seed-<seed>/`, and `sweep.json`
/// (SweepRecord).
class PELAB_API ExperimentFolder {
 public:
  /// Where a run lies in it, for what a message or a help text tells a reader.
  static constexpr const char* kRunLayout = "<point>/seed-<s>";

  explicit ExperimentFolder(std::string dir);

  const std::string& dir() const { return dir_; }

  /// `<experiment>/<point>/seed-<seed>`: where a run's folder lies under the output root. A run
  /// outside a sweep (point "") is in `default/`; a point's characters other than letters,
  /// digits and `._-=+,` become `_` in its folder's name.
  static std::string run_path(const std::string& experiment, const std::string& point,
                              std::int64_t seed);
  /// `run_path` without its experiment: the run's folder relative to the experiment folder.
  static std::string relative_run_path(const std::string& point, std::int64_t seed);

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

 private:
  std::string dir_;
};

}  // namespace pelab
