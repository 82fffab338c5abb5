#pragma once

// Where each run of a sweep stands, read from its experiment folder: what `pelab status` shows and
// what `pelab slurm` decides to submit from.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pelab/runs/run_claim.h"

namespace pelab {
class Manifest;
}

namespace pelab::cli {

/// Records in the experiment folder the runs `manifest` expands to (ExperimentFolder's sweep
/// record), so that `pelab status` knows the runs not started yet.
void write_sweep_record(const std::string& experiment_dir, const Manifest& manifest,
                        const std::string& manifest_path,
                        const std::vector<std::string>& overrides);

enum class RunState { kDone, kRunning, kFailed, kInterrupted, kPending };
const char* to_string(RunState state);

struct RunStatus {
  std::string dir;  // relative to the experiment folder
  RunState state = RunState::kPending;
  std::int64_t epoch = -1;          // the last epoch with metrics (-1: none)
  std::int64_t epochs = -1;         // the run's epochs, when known
  std::optional<ClaimOwner> owner;  // running: who
  std::string error;                // failed: why
  double wall_seconds = -1.0;       // done: what the run took (its summary)
};

/// The state of one run folder.
RunStatus run_status(const std::string& experiment_dir, const std::string& relative_dir);

/// Every run of the experiment: those of the sweep record in order, then any other run folder
/// found.
std::vector<RunStatus> sweep_status(const std::string& experiment_dir);

/// How long the runs not done yet will take (failed ones aside: they run again only when the
/// sweep is run again), at the pace of the finished runs (median wall seconds an epoch: of the
/// run's own point where some of its seeds have finished, else of all; without finished runs, the
/// running runs' own ETAs) and as many at a time as run now (at least one). A point none of whose
/// runs has finished is assumed to cost what the others did: a sweep whose points differ in cost
/// is only roughly right until each point has a finished run.
struct SweepEstimate {
  double seconds_left = 0.0;
  double seconds_per_epoch = 0.0;  // the pace of all finished runs (or of the running ones)
  std::size_t at_a_time = 1;
  std::string pace_source;                    // "the finished runs" or "the running runs"
  std::size_t runs_at_their_points_pace = 0;  // runs left estimated at their own point's pace
};
/// nullopt when nothing is left, or when no run has a pace yet. `launched` is how many runs at a
/// time the sweeps now running were started with (launched_jobs): between one run's end and the
/// next one's start fewer run than that, and the estimate should not double for it.
std::optional<SweepEstimate> estimate_remaining(const std::vector<RunStatus>& statuses,
                                                std::size_t launched = 0);

/// The file in which a local sweep's launcher records its `-j`, in its manifest snapshot folder
/// (ExperimentFolder::manifest_snapshot_folder).
inline constexpr const char* kLaunchedJobsFile = "jobs";

/// Whether `folder_name` (a name in an experiment folder) is the manifest snapshot of a sweep
/// launched on this host whose process is gone: a sweep killed with SIGKILL leaves it behind.
bool is_stale_local_snapshot(const std::string& folder_name);

/// The runs at a time of the sweeps running on an experiment now: the sum of the `-j` their
/// launchers recorded (kLaunchedJobsFile), leaving out this host's launchers whose process is
/// gone; 0 when none is known.
std::size_t launched_jobs(const std::string& experiment_dir);

}  // namespace pelab::cli
