#include "launch/sweep_status.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>

#include <signal.h>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "pelab/base/error.h"
#include "pelab/config/manifest.h"
#include "pelab/io/file_io.h"
#include "pelab/runs/experiment_folder.h"
#include "pelab/runs/run_claim.h"
#include "pelab/runs/run_folder.h"

namespace pelab::cli {

namespace fs = boost::filesystem;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The epochs a run's configuration asks for; -1 when it cannot be read.
std::int64_t configured_epochs(const RunFolder& folder) {
  if (!folder.has_config()) return -1;
  try {
    return folder.read_stored_config().integer("train.epochs").value_or(-1);
  } catch (const Error&) {
    return -1;
  }
}

// The point a run belongs to: its folder's parent (<point>/seed-<n>).
std::string point_of(const RunStatus& status) {
  const auto slash = status.dir.rfind('/');
  return slash == std::string::npos ? std::string() : status.dir.substr(0, slash);
}

}  // namespace

const char* to_string(RunState state) {
  switch (state) {
    case RunState::kDone:
      return "done";
    case RunState::kRunning:
      return "running";
    case RunState::kFailed:
      return "failed";
    case RunState::kInterrupted:
      return "interrupted";
    case RunState::kPending:
      return "pending";
  }
  return "?";
}

void write_sweep_record(const std::string& experiment_dir, const Manifest& manifest,
                        const std::string& manifest_path,
                        const std::vector<std::string>& overrides) {
  SweepRecord record;
  record.manifest = fs::absolute(manifest_path).string();
  record.overrides = overrides;
  for (const RunConfig& run : manifest.runs())
    record.runs.push_back(relative_run_path(run.point, run.seed));
  ExperimentFolder(experiment_dir).write_sweep_record(record);
}

RunStatus run_status(const std::string& experiment_dir, const std::string& relative_dir) {
  RunStatus status;
  status.dir = relative_dir;
  const RunFolder folder((fs::path(experiment_dir) / relative_dir).string());
  if (!fs::is_directory(folder.dir())) return status;  // pending
  status.epochs = configured_epochs(folder);
  try {
    const auto rows = folder.read_metrics();
    if (!rows.empty()) status.epoch = rows.back().epoch;
  } catch (const Error&) {
    // Unreadable metrics say nothing about where the run stands.
  }
  std::optional<RunSummary> summary;
  try {
    summary = folder.read_summary();
  } catch (const Error& e) {
    // Shown, not thrown: a status lists every run, and this one needs a person.
    status.state = RunState::kFailed;
    status.error = e.what();
    return status;
  }
  if (summary) {
    status.state = summary->finished() ? RunState::kDone : RunState::kFailed;
    status.error = summary->error;
    if (summary->finished() && summary->wall_seconds > 0)
      status.wall_seconds = summary->wall_seconds;
    return status;
  }
  if (const auto owner = RunClaim::read(folder.dir()); owner && RunClaim::alive(*owner)) {
    status.state = RunState::kRunning;
    status.owner = owner;
    if (owner->epochs > 0) status.epochs = owner->epochs;
    return status;
  }
  status.state = folder.has_config() ? RunState::kInterrupted : RunState::kPending;
  return status;
}

std::vector<RunStatus> sweep_status(const std::string& experiment_dir) {
  PELAB_CHECK(fs::is_directory(experiment_dir), "'{}' is not a folder", experiment_dir);
  const ExperimentFolder experiment(experiment_dir);
  std::vector<std::string> dirs;
  if (const auto record = experiment.read_sweep_record()) dirs = record->runs;
  std::set<std::string> listed(dirs.begin(), dirs.end());
  for (const auto& dir : experiment.seed_folders()) {
    if (!listed.count(dir)) dirs.push_back(dir);
  }
  PELAB_CHECK(!dirs.empty(),
              "'{}' holds no runs and no {}: give an experiment folder (<out>/<experiment>) that "
              "`pelab run` or `pelab slurm` wrote",
              experiment_dir, fs::path(experiment.sweep_record_path()).filename().string());
  std::vector<RunStatus> statuses;
  for (const auto& dir : dirs)
    statuses.push_back(run_status(experiment_dir, dir));
  return statuses;
}

std::optional<SweepEstimate> estimate_remaining(const std::vector<RunStatus>& statuses,
                                                std::size_t launched) {
  std::vector<double> finished_pace, running_pace, epochs;
  std::map<std::string, std::vector<double>> finished_pace_of_point;
  for (const auto& status : statuses) {
    if (status.epochs > 0) epochs.push_back(static_cast<double>(status.epochs));
    if (status.state == RunState::kDone && status.wall_seconds > 0 && status.epochs > 0) {
      finished_pace.push_back(status.wall_seconds / static_cast<double>(status.epochs));
      finished_pace_of_point[point_of(status)].push_back(finished_pace.back());
    }
    if (status.state == RunState::kRunning && status.owner->eta_seconds >= 0 &&
        status.epochs > status.epoch && status.epoch >= 0) {
      running_pace.push_back(status.owner->eta_seconds /
                             static_cast<double>(status.epochs - status.epoch));
    }
  }
  SweepEstimate estimate;
  if (!finished_pace.empty()) {
    estimate.seconds_per_epoch = median(finished_pace);
    estimate.pace_source = "the finished runs";
  } else if (!running_pace.empty()) {
    estimate.seconds_per_epoch = median(running_pace);
    estimate.pace_source = "the running runs";
  } else {
    return std::nullopt;
  }
  const double typical_epochs = epochs.empty() ? 0.0 : median(epochs);
  double work = 0.0;
  std::size_t running = 0, left = 0;
  for (const auto& status : statuses) {
    if (status.state == RunState::kDone || status.state == RunState::kFailed) continue;
    ++left;
    if (status.state == RunState::kRunning) {
      ++running;
      if (status.owner->eta_seconds >= 0) {
        work += status.owner->eta_seconds;
        continue;
      }
      // Its ETA not known yet: at the pace of the others, as a pending run.
    }
    const double total = status.epochs > 0 ? static_cast<double>(status.epochs) : typical_epochs;
    if (total <= 0) return std::nullopt;
    const double done = status.epoch > 0 ? static_cast<double>(status.epoch) : 0.0;
    // Points may differ in cost (a larger model, a costlier PE): a run's own point's pace where
    // some of its seeds have finished.
    const auto own = finished_pace_of_point.find(point_of(status));
    const bool has_own = own != finished_pace_of_point.end();
    if (has_own) ++estimate.runs_at_their_points_pace;
    work +=
        std::max(total - done, 0.0) * (has_own ? median(own->second) : estimate.seconds_per_epoch);
  }
  if (left == 0) return std::nullopt;
  estimate.at_a_time = std::min(std::max<std::size_t>({running, launched, 1}), left);
  estimate.seconds_left = work / static_cast<double>(estimate.at_a_time);
  return estimate;
}

bool is_stale_local_snapshot(const std::string& folder_name) {
  const std::string mine = ExperimentFolder::manifest_snapshot_prefix(RunClaim::this_host());
  if (folder_name.rfind(mine, 0) != 0) return false;
  const std::string pid = folder_name.substr(mine.size());
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return false;
  return ::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH;
}

std::size_t launched_jobs(const std::string& experiment_dir) {
  const std::string host = RunClaim::this_host();
  const std::string mine = ExperimentFolder::manifest_snapshot_prefix(host);
  const std::string prefix = mine.substr(0, mine.size() - host.size() - 1);  // any host's
  std::size_t jobs = 0;
  boost::system::error_code error;
  for (fs::directory_iterator it(experiment_dir, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || is_stale_local_snapshot(name)) continue;
    try {
      const std::string text = read_file((it->path() / kLaunchedJobsFile).string());
      jobs += static_cast<std::size_t>(std::max(0L, std::stol(text)));
    } catch (const std::exception&) {
      // A launcher from before the record, or one that has not written it yet: unknown.
    }
  }
  return jobs;
}

}  // namespace pelab::cli
