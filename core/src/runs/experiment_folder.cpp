#include "pelab/runs/experiment_folder.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "io/json_text.h"
#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/run_folder.h"

namespace pelab {

namespace fs = boost::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr const char* kSweepRecord = "sweep.json";
constexpr const char* kSeedPrefix = "seed-";

std::vector<std::string> sorted_subfolders(const fs::path& dir) {
  std::vector<std::string> names;
  boost::system::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (fs::is_directory(it->path())) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

ExperimentFolder::ExperimentFolder(std::string dir) : dir_(std::move(dir)) {}

ExperimentFolder ExperimentFolder::of(const std::string& output_root,
                                      const std::string& experiment) {
  return ExperimentFolder((fs::path(output_root) / experiment).string());
}

std::string ExperimentFolder::path(const std::string& relative) const {
  return (fs::path(dir_) / relative).string();
}

std::string ExperimentFolder::point_folder(const std::string& point) const {
  // The parent of any seed's folder: the point's name as relative_run_path makes it.
  return path(fs::path(relative_run_path(point, 0)).parent_path().string());
}

std::string ExperimentFolder::point_record_file(const std::string& point) const {
  return (fs::path(point_folder(point)) / kPointRecordFile).string();
}

std::string ExperimentFolder::point_lock_file(const std::string& point) const {
  return (fs::path(point_folder(point)) / ".point.lock").string();
}

std::string ExperimentFolder::manifest_snapshot_prefix(const std::string& host) {
  return ".manifest-" + host + "-";
}

std::string ExperimentFolder::manifest_snapshot_folder(const std::string& host, long pid) const {
  return path(manifest_snapshot_prefix(host) + std::to_string(pid));
}

std::vector<std::string> ExperimentFolder::seed_folders() const {
  std::vector<std::string> found;
  for (const auto& point : sorted_subfolders(dir_)) {
    for (const auto& seed : sorted_subfolders(fs::path(dir_) / point)) {
      if (seed.rfind(kSeedPrefix, 0) == 0) found.push_back(point + "/" + seed);
    }
  }
  return found;
}

std::vector<std::string> ExperimentFolder::run_folders(const std::string& dir) {
  PELAB_CHECK(fs::is_directory(dir), "'{}' is not a folder", dir);
  std::vector<std::string> runs;
  if (RunFolder::is_run_folder(dir)) {
    runs.push_back(dir);
  } else {
    for (const auto& relative : ExperimentFolder(dir).seed_folders()) {
      const std::string run = (fs::path(dir) / relative).string();
      if (RunFolder::is_run_folder(run)) runs.push_back(run);
    }
  }
  PELAB_CHECK(!runs.empty(),
              "'{}' holds no runs: give a run folder (with {}) or an experiment folder "
              "(<out>/<experiment>, holding {}/ folders)",
              dir, RunFolder::kConfigFile, kRunLayout);
  return runs;
}

std::string ExperimentFolder::sweep_record_path() const {
  return path(kSweepRecord);
}

void ExperimentFolder::write_sweep_record(const SweepRecord& record) const {
  const json document = {
      {"manifest", record.manifest}, {"overrides", record.overrides}, {"runs", record.runs}};
  write_file_atomically(sweep_record_path(), json_file_text(document));
}

std::optional<SweepRecord> ExperimentFolder::read_sweep_record() const {
  const std::string path = sweep_record_path();
  if (!fs::is_regular_file(path)) return std::nullopt;
  const json document = json::parse(read_file(path), nullptr, false);
  PELAB_CHECK(!document.is_discarded() && document.is_object() && document.contains("runs"),
              "{} is not a sweep record pelab wrote; delete it, and `pelab run` or `pelab slurm` "
              "writes it again",
              path);
  SweepRecord record;
  try {
    record.manifest = document.value("manifest", "");
    record.overrides = document.value("overrides", std::vector<std::string>{});
    record.runs = document["runs"].get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: {}; delete it, and `pelab run` or `pelab slurm` writes it again",
                            path, e.what()));
  }
  return record;
}

}  // namespace pelab
