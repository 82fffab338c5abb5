#include "pelab/runs/finished_run.h"

#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/run_folder.h"

namespace pelab {

namespace {

// A run read by another run's plugin must still be the run that was trained.
RunFolder checked_folder(const std::string& dir) {
  RunFolder folder(dir);
  if (const auto summary = folder.read_summary()) folder.check_config_unchanged(*summary);
  return folder;
}

}  // namespace

FinishedRun::FinishedRun(std::string dir) : dir_(std::move(dir)) {}

std::vector<PESnapshot> FinishedRun::snapshots() const {
  return checked_folder(dir_).read_snapshots();
}

std::string FinishedRun::snapshot_folder() const {
  return RunFolder(dir_).snapshot_folder();
}

torch::Tensor FinishedRun::probe_array(const std::string& probe, const std::string& array) const {
  const std::string name = probe_array_file(probe, array);
  const std::string file = checked_folder(dir_).path(name);
  PELAB_CHECK(boost::filesystem::exists(file),
              "the run '{}' has no {}: run the {} probe on it first (`pelab probe {} --probe {}`)",
              dir_, name, probe, dir_, probe);
  return read_npy(file);
}

std::string FinishedRun::probe_array_file(const std::string& probe, const std::string& array) {
  return RunFolder::probe_array_file(probe, array);
}

std::string FinishedRun::folder_layout() {
  return std::string("<out>/<experiment>/") + kRunLayout;
}

}  // namespace pelab
